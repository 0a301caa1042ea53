"""Why the masked bones stage scatters the bones no keypoint pair spans (issue 34, RESULTS section 11):
one procedural template (default the hexapod), one ring rig, one synthetic individual; one avatar per
variant against the same views, each tracked with the default track (no silhouettes). Per variant:
bone-length errors (bone scale x global scale vs the truth) signed per group, their mean over the
groups the keypoints span and over the others, the global scale, track MPJPE, per-vertex error, shape
CPU. ``--offset-size 0`` gives an individual without hidden vertex offsets (is the outline the
offsets' or the bones'?). YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/study_bone_split.py --cams 16 --keyframes 6 > benchmarks/fit_avatar/study_bone_split.yaml

Variants (FitConfig overrides, all with the shape command's steps 100,150,150,60 unless --steps):
keypoints (no silhouettes), masks (the default), mesh_only (bones_silhouettes false), split
(bones_split: keypoint bones stage, then silhouettes on the unspanned groups only), offsets
(bones_offsets: vertex offsets free in the masked bones stage), split_offsets (both), masks_w10
(silhouette weight 10), masks_sigma003 (rasteriser blur 0.03 crop px^2), masks_sigma002 (0.02: section 13), masks_sigmaauto (the blur calibrated on the keypoint-fitted body: the largest sigma <= 0.1
whose soft render is at most 3 % larger than the masks, FitConfig.sigma_bias 0.03: section 14), masks_sigmaauto_bones (the same in the bones stage only; the mesh stage at
0.1), masks_mesh_anneal (section 16: the bones stage at 0.1, the mesh stage's blur annealed geometrically
from 0.1 to the calibrated sigma over its steps), masks_mesh_auto (bones at 0.1, mesh at the calibrated sigma
throughout), masks_mesh_only_auto (section 19's candidate A: no silhouettes in the bones stage, so its bones
and global scale are keypoint-only's; the mesh stage at the blur calibrated on that fit),
masks_mesh_only_auto_m100 (C: A with 100 mesh steps), masks_mesh_auto_m150 (B: mesh-auto with 150 mesh
steps), masks_mesh_bones_auto (section 24's first candidate, masks_in mesh-bones: A with the global scale and
bone scales free in the mesh stage beside the offsets), masks_spanned_auto (section 24's second, masks_in
spanned,mesh: today's default with the bones stage's silhouette term moving only the spanned bone groups),
masks_auto (section 25: masks_in auto: masks_mesh_auto's and masks_mesh_bones_auto's fits without the held-out
camera, the one better on that camera kept; its record and each candidate's truth figures are written too).
A split with the pose frozen
is not offered: a chain's end keypoint would move with its split.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import torch
import yaml

from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape, spanned_groups, track_sequence
from cortexkit.tools.avatar.metrics import model_metrics
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from make_template import load_template
from blur_before49 import SIGMA_BEFORE_49  # noqa: E402  (sigma 0.1 in both stages unless a variant says otherwise)

HEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "hexapod"
VARIANTS = {"keypoints": {"silhouettes": False}, "masks": {}, "mesh_only": {"bones_silhouettes": False},
            "split": {"bones_split": True}, "offsets": {"bones_offsets": True},
            "split_offsets": {"bones_split": True, "bones_offsets": True},
            "masks_w10": {"silhouette_weight": 10.0}, "masks_sigma003": {"sigma": 0.03},
            "split_sigma003": {"bones_split": True, "sigma": 0.03}, "masks_sigma002": {"sigma": 0.02},
            "masks_sigmaauto": {"sigma_bias": 0.03},
            "masks_sigmaauto_bones": {"sigma_bias": 0.03, "sigma_bias_mesh": False},
            "masks_mesh_anneal": {"sigma_bias": 0.03, "sigma_bias_bones": False, "sigma_anneal": True},
            "masks_mesh_auto": {"sigma_bias": 0.03, "sigma_bias_bones": False},
            "masks_mesh_only_auto": {"sigma_bias": 0.03, "sigma_bias_bones": False, "bones_silhouettes": False},
            "masks_mesh_only_auto_m100": {"sigma_bias": 0.03, "sigma_bias_bones": False, "bones_silhouettes": False,
                                          "shape_steps": (100, 150, 150, 100)},
            "masks_mesh_auto_m150": {"sigma_bias": 0.03, "sigma_bias_bones": False,
                                     "shape_steps": (100, 150, 150, 150)},
            "masks_mesh_bones_auto": {"sigma_bias": 0.03, "sigma_bias_bones": False, "masks_in": "mesh-bones"},
            "masks_spanned_auto": {"sigma_bias": 0.03, "sigma_bias_bones": False, "masks_in": "spanned,mesh"},
            "masks_auto": {"sigma_bias": 0.03, "sigma_bias_bones": False, "masks_in": "auto"}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=str(HEX / "hexapod.glb"))
    ap.add_argument("--cams", type=int, default=16)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--keyframes", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--offset-size", type=float, default=0.03, help="hidden offsets, fraction of the body length")
    ap.add_argument("--steps", default="100,150,150,60")
    ap.add_argument("--markers", type=float, default=100.0, help="keypoint_offsets weight (the command's auto)")
    ap.add_argument("--variants", default="keypoints,masks,mesh_only,split")
    args = ap.parse_args()
    torch.set_num_threads(1)
    template = Path(args.template)
    mesh, tpl = load_template(template)
    world = mesh.animations[next(iter(mesh.animations))]["world"][args.start:args.start + args.frames]
    cfg = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=48, masks=True, seed=args.seed,
                      offset_size=args.offset_size)
    cams, syn = make_views(tpl, world, 1000.0, f"ring:{args.cams}", None, cfg)
    obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
    truth = syn.truth
    spanned = spanned_groups(tpl)
    steps = tuple(int(x) for x in args.steps.split(","))
    out = {"template": template.name, "cams": args.cams, "frames": int(len(world)), "start": args.start,
           "keyframes": args.keyframes, "seed": args.seed, "offset_size": args.offset_size, "steps": list(steps),
           "markers": args.markers, "groups": list(tpl.group_names),
           "spanned": [n for n, s in zip(tpl.group_names, spanned.tolist()) if s], "variants": {}}
    for name in args.variants.split(","):
        config = FitConfig(**{**SIGMA_BEFORE_49, "shape_steps": steps, "keypoint_offsets": args.markers, **VARIANTS[name]})
        t0 = time.process_time()
        shaped = fit_avatar_shape(tpl, obs, config, args.keyframes)
        shape = shaped.shape
        cpu = time.process_time() - t0
        pose = track_sequence(tpl, shape, obs, FitConfig(silhouettes=False)).pose
        m = model_metrics(tpl, shape, pose, truth, cams)
        err = (shape.bone_scales * shape.scale / (truth["bone_scales"] * truth["scale"].reshape(())) - 1).double()
        out["variants"][name] = {
            "bone_error_mean": float(err.abs().mean()), "bone_error_spanned": float(err[spanned].abs().mean()),
            "bone_error_unspanned": float(err[~spanned].abs().mean()),
            "bone_error_signed": {n: round(float(e), 4) for n, e in zip(tpl.group_names, err)},
            "scale_error": float(shape.scale / truth["scale"].reshape(()) - 1),
            "track_mpjpe_mm": m["mpjpe_mm"], "vertex_error_mm": m["vertex_error_mm"], "shape_cpu_s": cpu,
            "sigma": shaped.sigma if config.silhouettes else None,
            "sigma_mesh": config.sigma if config.silhouettes and not config.sigma_bias_mesh else None,
            "sigma_stages": {k: list(v) if isinstance(v, tuple) else v for k, v in shaped.sigma_stages.items()},
            "sigma_area_ratio": None if shaped.sigma_ratio is None else [round(float(r), 4) for r in shaped.sigma_ratio],
            "peak_rss_mb_so_far": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
        if shaped.auto is not None:
            rec = out["variants"][name]
            rec["auto"] = shaped.auto
            rec["candidates"] = {}
            for m, r in (shaped.candidates or {}).items():
                cpose = track_sequence(tpl, r.shape, obs, FitConfig(silhouettes=False)).pose
                cm = model_metrics(tpl, r.shape, cpose, truth, cams)
                rec["candidates"][m] = {"track_mpjpe_mm": cm["mpjpe_mm"], "vertex_error_mm": cm["vertex_error_mm"]}
        print(f"# {name}: {out['variants'][name]}", file=sys.stderr, flush=True)
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
