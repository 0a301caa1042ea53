"""Per rig and avatar of a ``hexapod.py ... --extremities RULES`` result YAML: each rule's track MPJPE (/ our
triangulation, / aniposelib triangulate_optim when present, / today's names), joint-angle error and per-vertex
error (RESULTS section 20's held-out and information tables). Markdown on stdout.

    python benchmarks/fit_avatar/extremity_table.py benchmarks/fit_avatar/results_kangaroo.yaml
"""

from __future__ import annotations

import sys

import yaml


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
                marked = ", ".join(sorted({m.rstrip("LR").rstrip("_.") for m in r["marked"]})) or "none"
                vs = f"{r['mpjpe_mm'] / ours:.2f}" + ("" if o is None else f", {r['mpjpe_mm'] / o:.2f}")
                rel = "" if base is None else f"{r['mpjpe_mm'] / base['mpjpe_mm']:.3f}"
                print(f"| {cams} | {name[7:]} | {key[len('track_extremities_'):]} | {marked} | {r['mpjpe_mm']:.3f} ({vs}) | "
                      f"{rel} | {r['joint_angle_error_deg']:.2f} | {r['vertex_error_mm']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
