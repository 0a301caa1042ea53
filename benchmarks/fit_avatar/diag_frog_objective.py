"""Is the frog's track short of triangulation because the optimiser stops early or because the
objective prefers the wrong pose? (RESULTS section 19, diagnosis av22.) With the TRUE individual
(hidden scale, bone scales, offsets) on the same views as ``diag_frog.py`` (seed 0, 2 px noise, 20 %
dropout, 3 % outliers, crop 48, 30 Hop frames), the track's objective over the whole clip at the true
poses and at the tracked ones (default 240 steps per window; 480 at the first rig): the keypoint term
(sum over frames of the per-frame mean crop-px distance, after the track's own outlier rejection), the
temporal term (x frames, as the optimiser weights it; over the whole clip instead of per window) and the
joint-limit term, plus MPJPE. Diagnosis only. YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/diag_frog_objective.py --cams 16,7 > benchmarks/fit_avatar/diag_frog_objective.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.tools.avatar.fit import (FitConfig, Observations, _kp_weights, _triangulated, _with_crops,
                                        body_length, image_terms, prior_terms, reject_outliers, select_cameras,
                                        track_sequence)
from cortexkit.tools.avatar.model import Pose, Shape, forward
from cortexkit.tools.avatar.synth import SynthConfig, make_views

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_template import load_template  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def objective(tpl, shape, pose, obs, use, config, truth):
    with torch.no_grad():
        verts, _, kps = forward(tpl, shape, pose)
        l_kp, _, _ = image_terms(tpl, verts, kps, obs, use, config, False, _kp_weights(tpl, config))
        length = body_length(tpl) * float(shape.scale)
        limit, _, _, temp = prior_terms(tpl, shape, pose, config, length, float(shape.scale), True)
        err = (kps.double() - truth["keypoints"].double()).norm(dim=-1)
    F = len(l_kp)
    out = {"keypoint_term": float(l_kp.sum()), "temporal_term_x_frames": float(temp) * F,
           "limit_term": float(config.joint_limit_weight * limit.sum()),
           "mpjpe_mm": float(err.mean()), "keypoint_term_per_frame": [round(float(x), 3) for x in l_kp]}
    out["total"] = out["keypoint_term"] + out["temporal_term_x_frames"] + out["limit_term"]
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=str(ROOT / "benchmarks/fit_avatar/_frog/frog.glb"))
    ap.add_argument("--cams", default="16,7")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    mesh, tpl = load_template(args.template)
    clip = next(iter(mesh.animations))
    world = mesh.animations[clip]["world"][:args.frames]
    out = {"template": str(Path(args.template).resolve().relative_to(ROOT)), "clip": clip, "frames": int(len(world)),
           "seed": args.seed, "rigs": {}}
    for i, n_cams in enumerate(int(c) for c in args.cams.split(",")):
        cfg = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=48, masks=True, seed=args.seed)
        cams, syn = make_views(tpl, world, 1000.0, f"ring:{n_cams}", None, cfg)
        truth = syn.truth
        obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
        shape = Shape(truth["scale"].reshape(()).float(), truth["bone_scales"].float(), truth["offsets"].float())
        base = {"shape_steps": (100, 150, 150, 60), "keypoint_offsets": 100.0, "silhouettes": False}
        config = FitConfig(**base)
        seen = reject_outliers(_with_crops(obs, config), _triangulated(obs), config.outlier_px)
        use = select_cameras(seen.confidence, config.cameras)
        row = {"truth": objective(tpl, shape, Pose(truth["rotations"], truth["global_rot"], truth["global_t"]),
                                  seen, use, config, truth)}
        for steps in ([240, 480] if i == 0 else [240]):
            pose = track_sequence(tpl, shape, obs, FitConfig(**{**base, "track_steps": steps})).pose
            row[f"tracked_{steps}"] = objective(tpl, shape, pose, seen, use, config, truth)
            print(f"# {n_cams} cams {steps}: {row[f'tracked_{steps}']['total']} vs truth {row['truth']['total']}",
                  file=sys.stderr, flush=True)
        out["rigs"][n_cams] = row
    yaml.safe_dump(out, sys.stdout, sort_keys=False, width=200)


if __name__ == "__main__":
    main()
