"""A held-out template's Done-means table from a ``hexapod.py`` result YAML (RESULTS sections 16, 19): per
rig the anchors (our triangulation with its coverage, aniposelib DLT and triangulate_optim), the track MPJPE
of each avatar (/ ours, / optim), its per-vertex error (vs keypoint-only), bone scales mean, global scale,
the mesh stage's blur and the shape CPU. Markdown on stdout.

    python benchmarks/fit_avatar/heldout_table.py benchmarks/fit_avatar/results_frog.yaml
"""

from __future__ import annotations

import sys

import yaml


def main(path: str) -> None:
    data = yaml.safe_load(open(path))
    print("| cams | ours (cov) | aniposelib DLT | aniposelib optim | avatar | track mm (/ ours, / optim) | "
          "vertex mm (vs keypoint-only) | bone scales mean abs error | abs global scale error | mesh sigma | shape CPU s | track s/frame |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cams, row in data["rigs"].items():
        ours, dlt, opt = row["triangulate_ours"], row["aniposelib_dlt"], row["aniposelib_optim"]
        o = opt["mpjpe_mm"] if isinstance(opt, dict) else float("nan")
        kp = row["avatar_keypoints"]["vertex_error_mm"]
        first = True
        for name, a in row.items():
            if not name.startswith("avatar_"):
                continue
            st = a.get("sigma_stages") or {}
            mesh = st.get("mesh")
            vs = "" if name == "avatar_keypoints" else f" ({100 * (a['vertex_error_mm'] / kp - 1):+.1f} %)"
            anchors = (f"{ours['mpjpe_mm']:.3f} ({ours['coverage']:.3f}) | {dlt['mpjpe_mm']:.3f} | {o:.3f}"
                       if first else " | | ")
            print(f"| {cams if first else ''} | {anchors} | {name[7:]} | {a['track_mpjpe_mm']:.3f} "
                  f"({a['track_mpjpe_mm'] / ours['mpjpe_mm']:.2f}, {a['track_mpjpe_mm'] / o:.2f}) | "
                  f"{a['vertex_error_mm']:.2f}{vs} | {100 * a['bone_scale_error']:.1f} % | {100 * a['scale_error']:.1f} % | "
                  f"{'' if mesh is None else f'{mesh:.4f}'} | {a['shape_cpu_s']:.1f} | {a['track_cpu_s_per_frame']:.2f} |")
            first = False


if __name__ == "__main__":
    main(sys.argv[1])
