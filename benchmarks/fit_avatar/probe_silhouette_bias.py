"""Is the silhouette term biased on a thin-limbed template? At the hidden truth (vertices of the true
individual, true pose) the soft silhouette (FitConfig.sigma) is compared with the synthetic masks
(anti-aliased coverage, 4x4 supersampled) while the posed truth is scaled about its centroid by k:
if the silhouette error is least at k < 1, the term alone pulls a correct body smaller (RESULTS
section 11). Frames: 6 keyframes of 30 Walk frames; the 6 best-covered cameras per frame as in the
fit (FitConfig.silhouette_cameras). YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/probe_silhouette_bias.py --cams 16 > benchmarks/fit_avatar/probe_silhouette_bias.yaml

Section 13 adds a grid at the truth (k = 1): blur ``--sigmas`` x render size ``--crops`` (crop px; the
masks are made at the same size) x ``--aggregations`` (all: every face enters the product; front: only
the faces turned towards the camera), each with the rendered area over the mask's (area_ratio) and the
soft IoU sum(min(alpha, M)) / sum(max(alpha, M)); ``--template fox`` probes the Fox clips ``--clips``.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/probe_silhouette_bias.py --cams 16 --scales 1.0 --sigmas 0.1,0.03,0.01 --crops 32,48,64 --aggregations all,front
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.tools.avatar.camera import project
from cortexkit.tools.avatar.fit import FitConfig, select_cameras
from cortexkit.tools.avatar.raster import soft_silhouette, winding
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from make_template import load_template

HEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "hexapod"


def _views(args, crop):
    """[(name, template, cameras, synthetic views, keyframe indices)] for the hexapod-like template or the Fox clips."""
    synth = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=crop, masks=True, seed=0)
    if args.template == "fox":
        import sys
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from study_temporal import load_fox
        mesh, tpl = load_fox()
        out = []
        for clip in args.clips.split(","):
            world = mesh.animations[clip]["world"]
            cams, syn = make_views(tpl, world, 10.0, f"ring:{args.cams}", None, synth)
            out.append((f"fox_{clip}", tpl, cams, syn, _keys(len(world), args.keyframes)))
        return out
    template = Path(args.template)
    mesh, tpl = load_template(template)
    world = mesh.animations[next(iter(mesh.animations))]["world"][:args.frames]
    cams, syn = make_views(tpl, world, 1000.0, f"ring:{args.cams}", None, synth)
    return [(template.stem, tpl, cams, syn, _keys(len(world), args.keyframes))]


def _keys(n, k):
    return sorted(set(np.linspace(0, n - 1, k).round().astype(int).tolist()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=str(HEX / "hexapod.glb"), help="a .glb with its keypoint and symmetry maps, or fox")
    ap.add_argument("--clips", default="Walk,Run", help="Fox clips (--template fox)")
    ap.add_argument("--cams", type=int, default=16)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--keyframes", type=int, default=6)
    ap.add_argument("--crop", type=int, default=48)
    ap.add_argument("--crops", default=None, help="render sizes, comma-separated (default --crop)")
    ap.add_argument("--sigmas", default="0.1,0.03")
    ap.add_argument("--scales", default="0.88,0.92,0.96,1.0,1.04")
    ap.add_argument("--aggregations", default="all", help="all,front")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {"template": Path(args.template).name, "cams": args.cams, "runs": {}}
    for crop in [int(c) for c in (args.crops or str(args.crop)).split(",")]:
        for name, tpl, cams, syn, keys in _views(args, crop):
            use = select_cameras(syn.confidence[keys], FitConfig().silhouette_cameras)
            b_idx, c_idx = use.nonzero(as_tuple=True)
            verts = syn.truth["vertices"][keys].double()
            centre = verts.mean(1, keepdim=True)
            masks = syn.masks[keys][b_idx, c_idx].double()
            sign = winding(tpl.vertices, tpl.faces)
            head = {"keyframes": keys, "crop": crop, "images": int(len(b_idx)), "faces": int(len(tpl.faces)),
                    "winding": sign, "mask_pixels_mean": float(masks.sum((1, 2)).mean())}
            for agg in args.aggregations.split(","):
                for sigma in [float(s) for s in args.sigmas.split(",")]:
                    row = {}
                    for k in [float(s) for s in args.scales.split(",")]:
                        v = centre + k * (verts - centre)
                        vproj = project(cams, v).permute(1, 0, 2, 3)[b_idx, c_idx]
                        crop_box = syn.crops[keys][b_idx, c_idx].double()
                        pix = (vproj - crop_box[:, None, :2]) * crop_box[:, None, 2:]
                        with torch.no_grad():
                            alpha = soft_silhouette(pix, tpl.faces, crop, sigma, front=sign if agg == "front" else 0)
                        row[k] = {"silhouette_error": float((alpha - masks).pow(2).mean()),
                                  "rendered_area_px": float(alpha.sum((1, 2)).mean()),
                                  "area_ratio": round(float(alpha.sum() / masks.sum()), 4),
                                  "soft_iou": round(float(torch.minimum(alpha, masks).sum()
                                                          / torch.maximum(alpha, masks).sum()), 4)}
                        print(f"# {name} crop {crop} {agg} sigma {sigma} k {k}: {row[k]}", file=__import__("sys").stderr, flush=True)
                    out["runs"].setdefault(name, {}).setdefault(crop, dict(head)).setdefault(agg, {})[sigma] = row
    yaml.safe_dump(out, __import__("sys").stdout, sort_keys=False)


if __name__ == "__main__":
    main()
