"""Masks in the bones stage, with and without the global scale free there (FitConfig.bones_fixed_scale),
against the keypoint-only avatar, on the Fox (the choosing set): each clip seen by a ring of
cameras with silhouette masks (2 px noise, 20 % dropout, 3 % outliers), one avatar per variant
from the same views, each tracked with the default track. YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/study_masked_bones.py --clips Walk,Run --cams 6 > benchmarks/fit_avatar/study_masked_bones.yaml
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from study_temporal import FOX, fox_clip, load_fox  # noqa: E402

from cortexkit.tools.avatar.fit import FitConfig, fit_avatar_shape, track_sequence  # noqa: E402
from blur_before49 import SIGMA_BEFORE_49  # noqa: E402  (sigma 0.1 in both stages unless a variant says otherwise)
from cortexkit.tools.avatar.metrics import model_metrics  # noqa: E402

VARIANTS = {"keypoints": {"silhouettes": False}, "masks": {}, "masks_fixed_scale": {"bones_fixed_scale": True},
            "masks_mesh_only": {"bones_silhouettes": False}, "masks_split": {"bones_split": True},
            "masks_sigma002": {"sigma": 0.02}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", default="Walk,Run")
    ap.add_argument("--cams", default="6", help="ring sizes, comma-separated")
    ap.add_argument("--keyframes", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="keypoints,masks,masks_fixed_scale", help=",".join(VARIANTS))
    ap.add_argument("--fox", default=str(FOX))
    ap.add_argument("--shape-steps", default="100,150,150,150", help="global,pose,bones,mesh Adam steps "
                    "(FitConfig's; the shape command's default is 100,150,150,60)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    mesh, tpl = load_fox(args.fox)
    steps = tuple(int(x) for x in args.shape_steps.split(","))
    out = {"seed": args.seed, "keyframes": args.keyframes, "shape_steps": list(steps), "runs": {}}
    for n_cams in [int(c) for c in args.cams.split(",")]:
        for clip in args.clips.split(","):
            cams, syn, obs, tri_mpjpe = fox_clip(tpl, mesh, clip, n_cams, args.seed, masks=True)
            row = {"frames": int(len(syn.keypoints)), "triangulate_mpjpe_mm": tri_mpjpe}
            for name in args.variants.split(","):
                over = VARIANTS[name]
                t0 = time.process_time()
                shape = fit_avatar_shape(tpl, obs, FitConfig(**{**SIGMA_BEFORE_49, **over}, shape_steps=steps), args.keyframes).shape
                cpu = time.process_time() - t0
                pose = track_sequence(tpl, shape, obs, FitConfig(silhouettes=False)).pose
                m = model_metrics(tpl, shape, pose, syn.truth, cams)
                row[name] = {k: m[k] for k in ("mpjpe_mm", "vertex_error_mm", "joint_angle_error_deg",
                                               "bone_scale_error", "bone_scale_error_max", "scale_error")}
                row[name]["shape_cpu_s"] = cpu
                print(f"# {clip} {n_cams} cams {name}: {row[name]}", file=sys.stderr, flush=True)
            out["runs"][f"{clip}_{n_cams}"] = row
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
