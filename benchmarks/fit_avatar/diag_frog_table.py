"""Tables of the frog diagnosis (RESULTS section 19, av22) from diag_frog.yaml (and
diag_frog_objective.yaml if present): per rig, each run's MPJPE and its ratio to our triangulation;
per keypoint and per Hop phase, the track's error vs triangulation's; the fitted bone scales' errors;
the joints with the largest angle errors.

    python benchmarks/fit_avatar/diag_frog_table.py [diag_frog_extremity.yaml]
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
# the Hop's phases at 30 fps (make_frog.hop): u = frame / 30
PHASES = {"crouch 0-5": range(0, 6), "extend 6-11": range(6, 12), "flight 12-20": range(12, 21),
          "land 21-25": range(21, 26), "crouch 26-29": range(26, 30)}


def main():
    import sys

    d = yaml.safe_load((HERE / (sys.argv[1] if len(sys.argv) > 1 else "diag_frog.yaml")).read_text())
    for cams, row in d["rigs"].items():
        runs = [k for k in row if k not in ("triangulate_ours", "fitted_shape")]
        wide = [r for r in runs if "limits" not in r and "priors" not in r or r == "fitted_no_priors"]
        tri = row["triangulate_ours"]
        print(f"\n## {cams} cams: ours {tri['mpjpe_mm']} mm")
        print("| run | MPJPE mm | / ours | joint angle deg | vertex mm | keypoints worse than ours |")
        print("|---|---|---|---|---|---|")
        for r in runs:
            x = row[r]
            print(f"| {r} | {x['mpjpe_mm']} | {x['mpjpe_vs_ours']} | {x['joint_angle_error_deg']} | "
                  f"{x['vertex_error_mm']} | {len(x['keypoints_worse_than_ours'])} / {len(tri['per_keypoint_mm'])} |")
        print("\n| keypoint | ours | " + " | ".join(wide) + " |")
        print("|---|---|" + "---|" * len(wide))
        for k, e in tri["per_keypoint_mm"].items():
            print(f"| {k} ({d['keypoints'][k]}) | {e} | " + " | ".join(
                f"{row[r]['per_keypoint_mm'][k]}" for r in wide) + " |")
        hind = [k for k in tri["per_keypoint_mm"] if k.split("_")[0] in ("knee", "foot", "heel")]
        rest = [k for k in tri["per_keypoint_mm"] if k not in hind]
        for label, ks in (("hind legs (knees, feet, heels)", hind), ("the other 11", rest)):
            print(f"| mean, {label} | {np.mean([tri['per_keypoint_mm'][k] for k in ks]):.3f} | " + " | ".join(
                f"{np.mean([row[r]['per_keypoint_mm'][k] for k in ks]):.3f}" for r in wide) + " |")
        print("\n| phase | ours | " + " | ".join(wide) + " |")
        print("|---|---|" + "---|" * len(wide))
        for ph, fr in PHASES.items():
            fr = [f for f in fr if f < len(tri["per_frame_mm"])]
            cell = lambda v: f"{np.mean([v[f] for f in fr]):.2f}"  # noqa: E731
            print(f"| {ph} | {cell(tri['per_frame_mm'])} | " + " | ".join(
                cell(row[r]["per_frame_mm"]) for r in wide) + " |")
        fs = row["fitted_shape"]
        worst = sorted(fs["bone_scale_error_per_group"].items(), key=lambda kv: -abs(kv[1]))
        print(f"\nfitted shape: global scale {fs['scale_error']:+.4f}, bone scales mean abs "
              f"{fs['bone_scale_abs_error_mean']}; largest: " + ", ".join(f"{g} {v:+.3f}" for g, v in worst[:8]))
        for r in wide:
            j = sorted(row[r]["joint_angle_deg_per_joint"].items(), key=lambda kv: -kv[1])
            print(f"joint angles {r}: " + ", ".join(f"{n} {v}" for n, v in j[:8]))
    print("\ntruth vs limits:", d["truth_limits"])
    obj = HERE / "diag_frog_objective.yaml"
    if len(sys.argv) == 1 and obj.exists() and obj.stat().st_size:
        o = yaml.safe_load(obj.read_text())
        print("\n| cams | poses | keypoint term | temporal term x frames | limit term | total | MPJPE mm |")
        print("|---|---|---|---|---|---|---|")
        for cams, row in o["rigs"].items():
            for k, x in row.items():
                print(f"| {cams} | {k} | {x['keypoint_term']} | {x['temporal_term_x_frames']} | {x['limit_term']} | "
                      f"{x['total']} | {x['mpjpe_mm']} |")


if __name__ == "__main__":
    main()
