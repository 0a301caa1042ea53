"""The soft rasteriser alone, pair by pair (FitConfig.silhouette_windows false) against window by
window (the default since RESULTS section 15), on the true bodies of a template: keyframes x the 6
best-covered cameras of a ring rig, crop px, the fit's dtype (float32), blur sigma 0.1; forward and
backward of a squared-error loss against the masks, CPU seconds per call (mean of --reps, both in
one process), and how far the two agree (max |alpha difference|, max gradient difference over the
largest gradient component). YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/bench_raster.py [--template benchmarks/fit_avatar/_quadruped/quadruped.glb] --cams 16 --keyframes 12
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.tools.avatar.camera import project
from cortexkit.tools.avatar.fit import FitConfig, select_cameras
from cortexkit.tools.avatar.raster import soft_silhouette
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from make_template import load_template

HEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "hexapod"


def timed(pix, faces, masks, size, sigma, reps, **kw):
    """CPU s per forward, per backward; the last alpha and gradient."""
    fwd = bwd = 0.0
    for _ in range(reps):
        x = pix.clone().requires_grad_(True)
        t0 = time.process_time()
        alpha = soft_silhouette(x, faces, size, sigma, **kw)
        t1 = time.process_time()
        (alpha - masks).pow(2).mean().backward()
        t2 = time.process_time()
        fwd, bwd = fwd + t1 - t0, bwd + t2 - t1
    return fwd / reps, bwd / reps, alpha.detach(), x.grad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=str(HEX / "hexapod.glb"))
    ap.add_argument("--cams", type=int, default=16)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--keyframes", type=int, default=12)
    ap.add_argument("--crop", type=int, default=48)
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    template = Path(args.template)
    mesh, tpl = load_template(template)
    world = mesh.animations[next(iter(mesh.animations))]["world"][:args.frames]
    cams, syn = make_views(tpl, world, 1000.0, f"ring:{args.cams}", None,
                           SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=args.crop, masks=True, seed=0))
    keys = sorted(set(np.linspace(0, len(world) - 1, args.keyframes).round().astype(int).tolist()))
    b_idx, c_idx = select_cameras(syn.confidence[keys], FitConfig().silhouette_cameras).nonzero(as_tuple=True)
    vproj = project(cams, syn.truth["vertices"][keys].float()).permute(1, 0, 2, 3)[b_idx, c_idx]
    crop = syn.crops[keys][b_idx, c_idx].to(vproj.dtype)
    pix = (vproj - crop[:, None, :2]) * crop[:, None, 2:]
    masks = syn.masks[keys][b_idx, c_idx].to(pix.dtype)
    out = {"template": template.name, "images": len(pix), "faces": len(tpl.faces), "crop": args.crop,
           "sigma": args.sigma, "dtype": str(pix.dtype), "reps": args.reps}
    f0, b0, a0, g0 = timed(pix, tpl.faces, masks, args.crop, args.sigma, args.reps, windows=False)
    f1, b1, a1, g1 = timed(pix, tpl.faces, masks, args.crop, args.sigma, args.reps, windows=True)
    out["pairs_ms"] = {"forward": round(f0 * 1e3, 1), "backward": round(b0 * 1e3, 1)}
    out["windows_ms"] = {"forward": round(f1 * 1e3, 1), "backward": round(b1 * 1e3, 1)}
    out["ratio_windows_over_pairs"] = round((f1 + b1) / (f0 + b0), 3)
    out["max_abs_alpha_diff"] = float((a1 - a0).abs().max())
    out["max_grad_diff_over_max_grad"] = float((g1 - g0).abs().max() / g0.abs().max())
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
