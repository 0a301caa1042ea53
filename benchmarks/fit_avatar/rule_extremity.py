"""RESULTS section 20's rule: which joints the track's temporal term treats as extremities. Reads the four
choosing YAMLs (hexapod.py ... --extremities names,names-distal,limb-ends), prints the tables and the verdict.

    python benchmarks/fit_avatar/rule_extremity.py [FOLDER]

A candidate rule (names-distal, limb-ends) against today's (names), keypoint-only avatar, same avatar and
views, per case (4 plans x 16 and 7 cams): r = track MPJPE / today's. Adopted if (1) the mean of r over the
8 cases <= 0.98, (2) every r <= 1.03, (3) joint-angle error at most 1.5 deg above today's in every case,
(4) track per-vertex error <= 1.05 x today's in every case. Several passing: the lowest mean r (within
0.002 of each other: limb-ends, the structural rule). None: no change.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

PLANS = ("frog", "quadruped", "hexapod", "bird")
CAMS = (16, 7)
CANDIDATES = ("names-distal", "limb-ends")


def verdict(candidates, ratios, checks, n_rows, n_cases, prefer):
    """The rule table of sections 20 and 22 (conditions 1-4 per candidate; a candidate passes only when every
    case was run) and the verdict line; among passing candidates within 0.002 of the lowest mean, ``prefer``."""
    print("| candidate | (1) mean r <= 0.98 | (2) max r <= 1.03 | (3) angle +<= 1.5 deg | (4) vertex <= 1.05 x | passes |")
    print("|---|---|---|---|---|---|")
    passing = {}
    complete = n_rows == n_cases
    for c in candidates:
        if not ratios[c]:
            print(f"| {c} | not run | | | | |")
            continue
        mean = sum(ratios[c]) / len(ratios[c])
        ok = [mean <= 0.98, max(ratios[c]) <= 1.03, max(checks[c]["angle"]) <= 1.5, max(checks[c]["vertex"]) <= 1.05]
        if all(ok) and complete:
            passing[c] = mean
        tag = lambda b: "pass" if b else "**fail**"  # noqa: E731
        print(f"| {c} | {mean:.3f} ({tag(ok[0])}) | {max(ratios[c]):.3f} ({tag(ok[1])}) | "
              f"{max(checks[c]['angle']):+.2f} ({tag(ok[2])}) | {max(checks[c]['vertex']):.3f} ({tag(ok[3])}) | "
              f"{'yes' if c in passing else 'no'} |")
    print()
    if not complete:
        print(f"verdict: not decided ({n_rows} of {n_cases} cases run)")
    elif not passing:
        print("verdict: no default changes")
    else:
        best = min(passing.values())
        near = [c for c, m in passing.items() if m - best <= 0.002]
        winner = prefer if prefer in near else min(passing, key=passing.get)
        print(f"verdict: adopt {winner}")



def main():
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    rows, ratios = [], {c: [] for c in CANDIDATES}
    checks = {c: {"angle": [], "vertex": []} for c in CANDIDATES}
    print("| case | rule | marked (free) | track mm (/ ours) | / today's | joint angle deg | per-vertex mm |")
    print("|---|---|---|---|---|---|---|")
    for plan in PLANS:
        path = folder / f"study_extremity_{plan}.yaml"
        if not path.exists():
            print(f"| {plan} | not run | | | | | |")
            continue
        data = yaml.safe_load(path.read_text()) or {"rigs": {}}   # empty while its run is going
        for cams in CAMS:
            rig = data["rigs"].get(cams)
            if rig is None:
                print(f"| {plan} {cams} | not run | | | | | |")
                continue
            ours = rig["triangulate_ours"]["mpjpe_mm"]
            avatar = rig["avatar_keypoints"]
            base = avatar["track_extremities_names"]
            for rule in ("names",) + CANDIDATES:
                r = avatar[f"track_extremities_{rule}"]
                ratio = r["mpjpe_mm"] / base["mpjpe_mm"]
                if rule != "names":
                    ratios[rule].append(ratio)
                    checks[rule]["angle"].append(r["joint_angle_error_deg"] - base["joint_angle_error_deg"])
                    checks[rule]["vertex"].append(r["vertex_error_mm"] / base["vertex_error_mm"])
                marked = ", ".join(sorted({m.rstrip("LR").rstrip("_.") for m in r["marked"]})) or "none"
                print(f"| {plan} {cams} | {rule} | {marked} | {r['mpjpe_mm']:.3f} ({r['mpjpe_mm'] / ours:.2f}) | "
                      f"{ratio:.3f} | {r['joint_angle_error_deg']:.2f} | {r['vertex_error_mm']:.2f} |")
            rows.append((plan, cams))
    print()
    verdict(CANDIDATES, ratios, checks, len(rows), len(PLANS) * len(CAMS), "limb-ends")

if __name__ == "__main__":
    main()
