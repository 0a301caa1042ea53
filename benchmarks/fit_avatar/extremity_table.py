"""Per rig and avatar of a ``hexapod.py ... --extremities RULES`` result YAML: each rule's track MPJPE (/ our
triangulation, / aniposelib triangulate_optim when present, / today's names), joint-angle error and per-vertex
error (RESULTS section 20's held-out and information tables). Markdown on stdout.

    python benchmarks/fit_avatar/extremity_table.py benchmarks/fit_avatar/results_kangaroo.yaml
"""

from __future__ import annotations

import re
import sys

import yaml


def side_free(name: str) -> str:
    return re.sub(r"[_.]?[LRlr]$", "", name)


def main(path: str) -> None:
    data = yaml.safe_load(open(path))
    print("| cams | avatar | rule | marked (free) | track mm (/ ours, / optim) | / names | joint angle deg | per-vertex mm |")
    print("|---|---|---|---|---|---|---|---|")
    for cams, row in data["rigs"].items():
        ours = row["triangulate_ours"]["mpjpe_mm"]
        opt = row.get("aniposelib_optim")
        o = opt["mpjpe_mm"] if isinstance(opt, dict) else None
        for name, a in row.items():
            if not name.startswith("avatar_"):
                continue
            rules = [k for k in a if k.startswith("track_extremities_")]
            if not rules:
                continue
            base = a.get("track_extremities_names")
            for key in rules:
                r = a[key]
                marked = ", ".join(sorted({side_free(m) for m in r["marked"]})) or "none"
                if r.get("twist_marked"):
                    factor = key.partition(":")[2] or "100"
                    marked += f"; twist x{factor}: " + ", ".join(sorted({side_free(m) for m in r["twist_marked"]}))
                vs = f"{r['mpjpe_mm'] / ours:.2f}" + ("" if o is None else f", {r['mpjpe_mm'] / o:.2f}")
                rel = "" if base is None else f"{r['mpjpe_mm'] / base['mpjpe_mm']:.3f}"
                print(f"| {cams} | {name[7:]} | {key[len('track_extremities_'):]} | {marked} | {r['mpjpe_mm']:.3f} ({vs}) | "
                      f"{rel} | {r['joint_angle_error_deg']:.2f} | {r['vertex_error_mm']:.2f} |")
    # section 22: swing / twist (deg) of the joints limb-ends+twist marks for their twist, per rule
    split = []
    for cams, row in data["rigs"].items():
        for name, a in row.items():
            if not name.startswith("avatar_") or "track_extremities_limb-ends+twist" not in a:
                continue
            joints = a["track_extremities_limb-ends+twist"].get("twist_marked", [])
            rules = [k for k in a if k.startswith("track_extremities_")]
            for j in joints:
                vals = [a[k].get("swing_twist_deg", {}).get(j) for k in rules]
                if any(v is not None for v in vals):
                    split.append((cams, name[7:], j, rules, vals))
    if split:
        print()
        print("| cams | avatar | joint | " + " | ".join(k[len("track_extremities_"):] for k in split[0][3]) + " |")
        print("|---|---|---|" + "---|" * len(split[0][3]))
        for cams, name, j, rules, vals in split:
            print(f"| {cams} | {name} | {j} | " + " | ".join("" if v is None else f"{v[0]:.1f} / {v[1]:.1f}" for v in vals) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
