"""How much does a keypoint-only avatar's figure move when its input moves by float rounding?
(issue 34, av26: the primate's keypoint-only track 1.906 mm in section 14 vs 2.067 today at the same
code and command: the synthetic views' last bits differ between the two environments.)

The run of ``hexapod.py``'s keypoint-only variant (same views, FitConfig, shape and track calls), once
as it is and then with the observed 2D keypoints multiplied by (1 + eps * N(0, 1)) in float32 for
each perturbation seed (eps 1e-7: about one unit in the last place, the size of the environment's
difference). Each perturbed run is split: the shape fitted and tracked on the perturbed views
(``both``), and the unperturbed avatar tracked on the perturbed views (``track_only``). YAML on stdout.

    python benchmarks/fit_avatar/make_template.py --plan primate benchmarks/fit_avatar/_primate/primate.glb
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/diag_float_noise.py \\
        --template benchmarks/fit_avatar/_primate/primate.glb --cams 16 --seeds 1,2,3 \\
        --set 'shape_steps=[100,150,150,60]' --set keypoint_offsets=100 > diag_float_noise_primate.yaml
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import yaml

from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape, track_sequence
from cortexkit.tools.avatar.metrics import model_metrics
from cortexkit.tools.avatar.synth import SynthConfig, make_views

HEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "hexapod"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_template import load_template  # noqa: E402
from blur_before49 import SIGMA_BEFORE_49  # noqa: E402  (hexapod.py's shape config; no effect without masks)


def metrics(tpl, shape, pose, truth, cams) -> dict:
    m = model_metrics(tpl, shape, pose, truth, cams)
    return {k: float(m[k]) for k in ("mpjpe_mm", "vertex_error_mm", "joint_angle_error_deg", "bone_scale_error",
                                     "scale_error")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", default=str(HEX / "hexapod.glb"))
    ap.add_argument("--cams", default="16")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0, help="the views' seed (hexapod.py's --seed)")
    ap.add_argument("--keyframes", type=int, default=6)
    ap.add_argument("--crop", type=int, default=48)
    ap.add_argument("--seeds", default="1,2,3", help="perturbation seeds")
    ap.add_argument("--eps", type=float, default=1e-7, help="relative size of the perturbation")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (another thread count reorders "
                    "some reductions: rounding changes in every step, not only in the input)")
    ap.add_argument("--set", action="append", default=[], help="FitConfig override key=value")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    overrides = {}
    for item in args.set:
        key, value = item.split("=", 1)
        overrides[key] = type(getattr(FitConfig(), key))(yaml.safe_load(value)) if not isinstance(
            getattr(FitConfig(), key), tuple) else tuple(yaml.safe_load(value))
    mesh, tpl = load_template(Path(args.template))
    world = mesh.animations[next(iter(mesh.animations))]["world"][:args.frames]
    out = {"template": args.template, "frames": int(len(world)), "seed": args.seed, "keyframes": args.keyframes,
           "eps": args.eps, "threads": args.threads, "config_overrides": overrides, "rigs": {}}
    shape_config = FitConfig(**{**SIGMA_BEFORE_49, **overrides, "silhouettes": False})
    track_config = FitConfig(**{**overrides, "silhouettes": False})
    for n_cams in [int(c) for c in args.cams.split(",")]:
        cfg = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=args.crop, masks=True, seed=args.seed)
        cams, syn = make_views(tpl, world, 1000.0, f"ring:{n_cams}", None, cfg)
        truth = syn.truth
        obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
        t0 = time.process_time()
        base = fit_avatar_shape(tpl, obs, shape_config, args.keyframes)
        pose = track_sequence(tpl, base.shape, obs, track_config).pose
        row = {"unperturbed": metrics(tpl, base.shape, pose, truth, cams)}
        print(f"# {n_cams} cams unperturbed: {row['unperturbed']} ({time.process_time() - t0:.1f} s)", file=sys.stderr)
        for s in [int(x) for x in args.seeds.split(",") if x]:
            g = torch.Generator().manual_seed(s)
            kp = syn.keypoints * (1 + args.eps * torch.randn(syn.keypoints.shape, generator=g, dtype=torch.float64)
                                  ).to(syn.keypoints.dtype)
            moved = (kp != syn.keypoints).float().mean().item()
            pobs = Observations(cams, kp, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
            shaped = fit_avatar_shape(tpl, pobs, shape_config, args.keyframes)
            both = metrics(tpl, shaped.shape, track_sequence(tpl, shaped.shape, pobs, track_config).pose, truth, cams)
            track_only = metrics(tpl, base.shape, track_sequence(tpl, base.shape, pobs, track_config).pose, truth, cams)
            row[f"perturbed_{s}"] = {"values_changed": moved, "both": both, "track_only": track_only}
            print(f"# {n_cams} cams seed {s}: changed {moved:.3f}, both {both['mpjpe_mm']:.4f}, track only "
                  f"{track_only['mpjpe_mm']:.4f} mm", file=sys.stderr)
        out["rigs"][n_cams] = row
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
