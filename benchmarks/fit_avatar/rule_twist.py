"""RESULTS section 22's rule: limb-ends for the temporal x100, plus the x100 (or x10) on the TWIST component only
of the joints it drops (the mid-limb wrists and ankles). Reads the four choosing YAMLs (hexapod.py ...
--extremities names,limb-ends,limb-ends+twist,limb-ends+twist:10 > study_twist_PLAN.yaml), prints the tables,
the swing/twist split of the twist-marked joints and the verdict.

    python benchmarks/fit_avatar/rule_twist.py [FOLDER]

A candidate (limb-ends+twist: twist factor 100; limb-ends+twist:10: twist factor 10) against today's (names),
keypoint-only avatar, same avatar and views, per case (frog, quadruped, hexapod, bird x 16 and 7 cams):
r = track MPJPE / today's. Adopted if (1) the mean of r over the 8 cases <= 0.98, (2) every r <= 1.03,
(3) joint-angle error at most 1.5 deg above today's in every case, (4) track per-vertex error <= 1.05 x
today's in every case. Both passing: the lower mean r; within 0.002 of each other, factor 100 (the full
factor, one number fewer). None: no change. limb-ends alone (section 20's candidate) is shown for reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rule_extremity import verdict  # noqa: E402  (section 20's table and verdict)

PLANS = ("frog", "quadruped", "hexapod", "bird")
CAMS = (16, 7)
CANDIDATES = ("limb-ends+twist", "limb-ends+twist:10")
SHOWN = ("names", "limb-ends") + CANDIDATES


def short(names):
    return ", ".join(sorted({m.rstrip("LRlr").rstrip("_.") for m in names})) or "none"


def main():
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    rows, ratios = [], {c: [] for c in CANDIDATES}
    checks = {c: {"angle": [], "vertex": []} for c in CANDIDATES}
    split = []
    print("| case | rule | x100 on (free) | twist x on | track mm (/ ours) | / today's | joint angle deg | per-vertex mm |")
    print("|---|---|---|---|---|---|---|---|")
    for plan in PLANS:
        path = folder / f"study_twist_{plan}.yaml"
        if not path.exists():
            print(f"| {plan} | not run | | | | | | |")
            continue
        data = yaml.safe_load(path.read_text()) or {"rigs": {}}   # empty while its run is going
        for cams in CAMS:
            rig = data["rigs"].get(cams)
            if rig is None:
                print(f"| {plan} {cams} | not run | | | | | | |")
                continue
            ours = rig["triangulate_ours"]["mpjpe_mm"]
            avatar = rig["avatar_keypoints"]
            base = avatar["track_extremities_names"]
            twist_joints = avatar["track_extremities_limb-ends+twist"].get("twist_marked", [])
            for rule in SHOWN:
                r = avatar[f"track_extremities_{rule}"]
                ratio = r["mpjpe_mm"] / base["mpjpe_mm"]
                if rule in CANDIDATES:
                    ratios[rule].append(ratio)
                    checks[rule]["angle"].append(r["joint_angle_error_deg"] - base["joint_angle_error_deg"])
                    checks[rule]["vertex"].append(r["vertex_error_mm"] / base["vertex_error_mm"])
                factor = rule.partition(":")[2] or "100"
                tw = f"{short(r.get('twist_marked', []))} (x{factor})" if r.get("twist_marked") else "none"
                print(f"| {plan} {cams} | {rule} | {short(r['marked'])} | {tw} | {r['mpjpe_mm']:.3f} "
                      f"({r['mpjpe_mm'] / ours:.2f}) | {ratio:.3f} | {r['joint_angle_error_deg']:.2f} | "
                      f"{r['vertex_error_mm']:.2f} |")
                st = r.get("swing_twist_deg", {})
                for j in twist_joints:
                    if j in st:
                        split.append((f"{plan} {cams}", j, rule, st[j]))
            rows.append((plan, cams))
    print()
    print("Swing / twist (deg, mean over frames) of the twist-marked joints the joint-angle metric counts:")
    print()
    print("| case | joint | " + " | ".join(SHOWN) + " |")
    print("|---|---|" + "---|" * len(SHOWN))
    keys = list(dict.fromkeys((c, j) for c, j, _, _ in split))      # first-seen order
    for case, joint in keys:
        vals = {rule: v for c, j, rule, v in split if c == case and j == joint}
        print(f"| {case} | {joint} | " + " | ".join(
            f"{vals[r][0]:.1f} / {vals[r][1]:.1f}" if r in vals else "" for r in SHOWN) + " |")
    print()
    verdict(CANDIDATES, ratios, checks, len(rows), len(PLANS) * len(CAMS), "limb-ends+twist")

if __name__ == "__main__":
    main()
