"""Where the CPU of a masked fit goes: cProfile of masked `shape` (FitConfig at the command's
steps) and/or masked `track` on the hexapod (or any template in metres), one thread. YAML on stdout:
the stage's CPU seconds and the top functions by own time and by cumulative time.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/profile_masks.py --what shape --cams 16 --frames 30 --keyframes 12 --set shape_steps=[100,150,150,60]
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/profile_masks.py --what track --cams 16 --frames 20

``--set key=value`` overrides a FitConfig field as in hexapod.py.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import torch
import yaml

from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape, track_sequence
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from make_template import load_template
from blur_before49 import SIGMA_BEFORE_49  # noqa: E402  (sigma 0.1 in both stages unless a variant says otherwise)

HEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "hexapod"


def top(profile: cProfile.Profile, key: str, n: int) -> list[str]:
    buf = io.StringIO()
    pstats.Stats(profile, stream=buf).sort_stats(key).print_stats(n)
    lines = buf.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return [" ".join(line.split()) for line in lines[start:start + n + 1] if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=str(HEX / "hexapod.glb"))
    ap.add_argument("--what", default="shape", choices=["shape", "track"])
    ap.add_argument("--cams", type=int, default=16)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--keyframes", type=int, default=12)
    ap.add_argument("--crop", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    torch.set_num_threads(1)
    overrides = {}
    for item in args.set:
        key, value = item.split("=", 1)
        default = getattr(FitConfig(), key)
        value = yaml.safe_load(value)
        overrides[key] = tuple(value) if isinstance(default, tuple) else type(default)(value)
    template = Path(args.template)
    mesh, tpl = load_template(template)
    world = mesh.animations[next(iter(mesh.animations))]["world"][:args.frames]
    cams, syn = make_views(tpl, world, 1000.0, f"ring:{args.cams}", None,
                           SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=args.crop, masks=True,
                                       seed=args.seed))
    obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
    out = {"template": template.name, "what": args.what, "cams": args.cams, "frames": len(world),
           "keyframes": args.keyframes, "overrides": {k: list(v) if isinstance(v, tuple) else v
                                                       for k, v in overrides.items()}}
    profile = cProfile.Profile()
    if args.what == "shape":
        config = FitConfig(**{**SIGMA_BEFORE_49, **overrides, "silhouettes": True})
        t0 = time.process_time()
        profile.enable()
        fit_avatar_shape(tpl, obs, config, args.keyframes)
        profile.disable()
        out["cpu_s"] = time.process_time() - t0
    else:
        shaped = fit_avatar_shape(tpl, obs, FitConfig(**{**overrides, "silhouettes": False}), args.keyframes)
        t0 = time.process_time()
        profile.enable()
        track_sequence(tpl, shaped.shape, obs, FitConfig(**{**overrides, "silhouettes": True}))
        profile.disable()
        out["cpu_s"] = time.process_time() - t0
        out["cpu_s_per_frame"] = out["cpu_s"] / len(world)
    out["by_tottime"] = top(profile, "tottime", args.top)
    out["by_cumtime"] = top(profile, "cumulative", args.top)
    yaml.safe_dump(out, sys.stdout, sort_keys=False, width=200)


if __name__ == "__main__":
    main()
