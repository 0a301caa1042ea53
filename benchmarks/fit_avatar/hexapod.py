"""fit-avatar on a template it was never tuned on: the procedural hexapod (tests/data/hexapod),
its Walk clip seen by 16, 12, 7 and 4 ring cameras, a hidden individual (bone scales, global
scale, offsets), 2 px noise, 20 % dropout, 3 % outliers, silhouette masks. Side by side in one
run: our robust DLT, aniposelib's DLT and triangulate_optim, the avatar (keypoint-only and with
masks) and tracking. YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/hexapod.py --cams 16,12,7,4 > benchmarks/fit_avatar/results_hexapod.yaml

``--set key=value`` overrides a FitConfig field (the study of defaults); ``--frames`` cuts the clip;
``--baseline`` adds track's held-out camera check (triangulation beside the avatar) to each rig;
``--track-steps 120,240`` tracks each avatar again with each step count (same views and anchors);
``--keypoint-offsets 0,1000,1000:mesh`` fits one keypoint-only avatar per marker weight (``:mesh``:
markers free in the mesh stage only) against the same views and anchors, each under
``avatar_keypoints_offsets_W``; ``--masks-grad-all`` adds a masked avatar fitted with the
rasteriser's reference backward (autograd over every pair) beside the default one;
``--track-masks [NAMES]`` tracks with silhouettes after every avatar (or the named ones).

``--template``, ``--keypoints``, ``--symmetry`` (default: the hexapod's, tests/data/hexapod) run the
same benchmark on another procedural template in metres, e.g. the held-out bird:

    python benchmarks/fit_avatar/make_template.py --plan bird benchmarks/fit_avatar/_bird/bird.glb
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/hexapod.py --template benchmarks/fit_avatar/_bird/bird.glb ...

(keypoints and symmetry default to <stem>_keypoints.yaml / <stem>_symmetry.yaml beside the
template; ``--clip`` to the template's first animation).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape, track_sequence
from cortexkit.tools.avatar.metrics import model_metrics, point_metrics
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from cortexkit.tools.avatar.triangulate import triangulate_frames

HEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "hexapod"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_template import load_template  # noqa: E402  (the folder is on sys.path above)
from blur_before49 import SIGMA_BEFORE_49  # noqa: E402  (sigma 0.1 in both stages unless a variant says otherwise)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def observed_bone_error(tpl, shape, truth) -> float:
    """Mean |scale ratio - 1| over the bone groups whose both ends are keypoints (seen by the detector)."""
    kp_joints = set(torch.nonzero(tpl.keypoints_joint.abs().sum(0) > 0).reshape(-1).tolist())
    groups = sorted({int(tpl.bone_group[i]) for i, p in enumerate(tpl.parents)
                     if tpl.bone_group[i] >= 0 and i in kp_joints and p in kp_joints})
    ratio = shape.bone_scales * shape.scale / (truth["bone_scales"] * truth["scale"].reshape(()))
    return float((ratio[groups] - 1).abs().mean()) if groups else float("nan")


def bone_split(tpl, shape, truth) -> list[float]:
    """Mean |bone length ratio - 1| (bone scale x global scale) over the groups a keypoint pair spans
    (spanned_groups) and over the others: [spanned, unspanned]."""
    from cortexkit.tools.avatar.fit import spanned_groups

    spanned = spanned_groups(tpl)
    err = (shape.bone_scales * shape.scale / (truth["bone_scales"] * truth["scale"].reshape(())) - 1).double().abs()
    return [float(err[spanned].mean()) if spanned.any() else float("nan"),
            float(err[~spanned].mean()) if (~spanned).any() else float("nan")]


class raster_check:
    """With ``on``: fit.soft_silhouette is wrapped so that every image rendered window by window
    (the default forward) is rendered again pair by pair without gradient; ``result()`` gives
    {images, calls, max_abs_alpha_diff} since the last reset (RESULTS section 15's exactness check)."""

    def __init__(self, on: bool):
        import cortexkit.tools.avatar.fit as fit_module
        from cortexkit.tools.avatar import raster

        self.calls, self.images, self.max = 0, 0, 0.0
        if not on:
            return

        def wrapped(pixels, faces, size, sigma=0.5, grad_all=False, front=0, windows=True, **kw):
            alpha = raster.soft_silhouette(pixels, faces, size, sigma, grad_all=grad_all, front=front,
                                           windows=windows, **kw)
            if windows and not grad_all:
                with torch.no_grad():
                    ref = raster.soft_silhouette(pixels.detach(), faces, size, sigma, front=front, windows=False)
                self.max = max(self.max, float((alpha.detach() - ref).abs().max()) if ref.numel() else 0.0)
                self.calls += 1
                self.images += len(pixels)
            return alpha

        fit_module.soft_silhouette = wrapped

    def result(self):
        return {"calls": self.calls, "images": self.images, "max_abs_alpha_diff": self.max}


@contextlib.contextmanager
def lean_switch(reference: bool):
    """With ``reference``: fit.soft_silhouette renders with lean=False (the rasteriser's deferred chunk loop
    before RESULTS section 21) for the duration; a benchmark-only switch, composed with raster_check's wrapper."""
    import cortexkit.tools.avatar.fit as fit_module

    saved = fit_module.soft_silhouette
    if reference:
        fit_module.soft_silhouette = functools.partial(saved, lean=False)
    try:
        yield
    finally:
        fit_module.soft_silhouette = saved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=str(HEX / "hexapod.glb"), help="rigged glTF in metres")
    ap.add_argument("--keypoints", default=None, help="keypoint map (default: <stem>_keypoints.yaml beside it)")
    ap.add_argument("--symmetry", default=None, help="symmetry file (default: <stem>_symmetry.yaml beside it)")
    ap.add_argument("--clip", default=None, help="animation clip (default: the template's first)")
    ap.add_argument("--cams", default="16,12,7,4")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keyframes", type=int, default=8)
    ap.add_argument("--crop", type=int, default=48)
    ap.add_argument("--no-anipose", action="store_true")
    ap.add_argument("--no-masks", action="store_true", help="skip the masked shape fit")
    ap.add_argument("--set", action="append", default=[], help="FitConfig override key=value")
    ap.add_argument("--baseline", action="store_true", help="also run track's held-out camera check "
                    "(triangulation beside the avatar, tools/avatar/baseline.py) after each track")
    ap.add_argument("--track-steps", default="", help="also track with these Adam steps per window, "
                    "comma-separated, against the same views, triangulations and avatar (the study of "
                    "FitConfig.track_steps); each under track_steps_N")
    ap.add_argument("--temporal", default="", help="also track with these temporal weights, WEIGHT[:ORDER] "
                    "comma-separated (order 1 velocity, 2 acceleration)")
    ap.add_argument("--track-masks", nargs="?", const="all", default="", help="also track with silhouettes "
                    "(what `track` does when masks are given), under track_masks; optionally only after these "
                    "avatars (comma-separated names: keypoints, masks, masks_grad_all)")
    ap.add_argument("--track-masks-cameras", default="", help="with --track-masks, also track with these "
                    "silhouette cameras per frame (FitConfig.track_silhouette_cameras), comma-separated, under "
                    "track_masks_cams_N")
    ap.add_argument("--start", type=int, default=0, help="first frame of the clip")
    ap.add_argument("--masks-grad-all", action="store_true", help="also fit (and track) a masked avatar with "
                    "the rasteriser's reference backward (FitConfig.silhouette_grad_all), under masks_grad_all")
    ap.add_argument("--masks-pairs", action="store_true", help="also fit (and track) a masked avatar with the "
                    "rasteriser's forward pair by pair (FitConfig.silhouette_windows false, the path before section 15), "
                    "under masks_pairs")
    ap.add_argument("--masks-eager", action="store_true", help="also fit a masked avatar with the rasteriser's "
                    "section 15 selection of the backward's pairs (FitConfig.silhouette_deferred false), under masks_eager")
    ap.add_argument("--track-masks-eager", action="store_true", help="with --track-masks: also track each named "
                    "avatar with silhouettes through section 15's selection (silhouette_deferred false), on the same "
                    "avatar, under track_masks_eager (RESULTS section 17; with --set silhouette_deferred=true)")
    ap.add_argument("--track-masks-paired", action="store_true", help="with --track-masks: instead of one track_masks, "
                    "track each named avatar with silhouettes four times on the same avatar, the deferred and section 15's "
                    "selection of the backward's pairs in the order A B B A (FitConfig.track_silhouette_deferred true / "
                    "false), under track_masks_deferred, track_masks_eager, track_masks_eager_2, track_masks_deferred_2 "
                    "(RESULTS section 18's rule)")
    ap.add_argument("--track-masks-lean-paired", action="store_true", help="with --track-masks: instead of one "
                    "track_masks, track each named avatar with silhouettes four times on the same avatar, the rasteriser's "
                    "lean chunk loop (the default since RESULTS section 21) and the deferred one before it "
                    "(soft_silhouette(lean=False), a benchmark-only switch) in the order A B B A, under track_masks_lean, "
                    "track_masks_reference, track_masks_reference_2, track_masks_lean_2 (section 21's rule)")
    ap.add_argument("--check-raster", action="store_true", help="render every silhouette of the run also pair by pair "
                    "(no gradient) and record the largest |alpha difference| per avatar (raster_check_max_abs_alpha_diff); "
                    "costs CPU, so not for timed runs")
    ap.add_argument("--masks-sigma-bias", default="", help="also fit masked avatars with the blur calibrated "
                    "(FitConfig.sigma_bias; RESULTS section 14), comma-separated tolerances, each under "
                    "masks_sigma_bias_T")
    ap.add_argument("--masks-sigma-bias-bones", default="", help="the same, calibrated blur in the bones stage "
                    "only (sigma_bias_mesh false), each under masks_sigma_bias_bones_T")
    ap.add_argument("--masks-mesh-anneal", default="", help="also fit masked avatars with the bones stage at "
                    "sigma and the mesh stage's blur annealed from sigma to the calibrated one (sigma_bias T, "
                    "sigma_bias_bones false, sigma_anneal; RESULTS section 16), each under masks_mesh_anneal_T")
    ap.add_argument("--masks-mesh-auto", default="", help="the same, the mesh stage at the calibrated blur "
                    "throughout (no anneal), each under masks_mesh_auto_T")
    ap.add_argument("--masks-mesh-only-auto", default="", help="the same, without silhouettes in the bones stage "
                    "(bones_silhouettes false: bones and global scale are the keypoint fit's; RESULTS section 19), "
                    "each under masks_mesh_only_auto_T")
    ap.add_argument("--keypoint-offsets", default="", help="keypoint-only avatars with these marker weights "
                    "(FitConfig.keypoint_offsets; W or W:mesh), comma-separated, instead of the default one")
    ap.add_argument("--extremities", default="", help="also track each avatar with the temporal term's extremities "
                    "chosen by these rules (model.extremity_marks: names, names-distal, limb-ends, limb-ends+twist[:F] with "
                    "twist factor F), comma-separated, "
                    "on the same avatar and views, each under track_extremities_RULE (RESULTS section 20)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    overrides = {}
    for item in args.set:
        key, value = item.split("=", 1)
        overrides[key] = type(getattr(FitConfig(), key))(yaml.safe_load(value)) if not isinstance(
            getattr(FitConfig(), key), tuple) else tuple(yaml.safe_load(value))
    template = Path(args.template)
    mesh, tpl = load_template(template, args.keypoints, args.symmetry)
    clip = args.clip or next(iter(mesh.animations))
    world = mesh.animations[clip]["world"][args.start:args.start + args.frames]
    root = Path(__file__).resolve().parents[2]
    shown = template.resolve().relative_to(root) if template.resolve().is_relative_to(root) else template
    out = {"template": str(shown), "clip": clip, "frames": int(len(world)), "start": args.start, "seed": args.seed,
           "keyframes": args.keyframes, "crop": args.crop, "config_overrides": overrides,
           "groups": tpl.n_groups, "rigs": {}}
    # per keypoint: the vertex sets (where markers can help) and the head's tip
    vertex_set = (tpl.keypoints_vertex.abs().sum(1) > 0).tolist()
    shown_kps = {n for n, v in zip(tpl.keypoint_names, vertex_set) if v} | {"head_tip", "beak_tip"}
    out["vertex_set_keypoints"] = sorted(n for n, v in zip(tpl.keypoint_names, vertex_set) if v)
    for n_cams in [int(c) for c in args.cams.split(",")]:
        cfg = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=args.crop, masks=True, seed=args.seed)
        cams, syn = make_views(tpl, world, 1000.0, f"ring:{n_cams}", None, cfg)
        truth = syn.truth
        true_kp = truth["keypoints"].double().numpy()
        row = {}
        t0 = time.process_time()
        tri = triangulate_frames(cams, syn.keypoints.double().numpy(), syn.confidence.double().numpy()).points
        row["triangulate_ours"] = {**point_metrics(tri, true_kp),
                                   "cpu_ms_per_frame": 1000 * (time.process_time() - t0) / len(tri)}
        if not args.no_anipose:
            from run import anipose_optim, anipose_triangulate

            px = syn.keypoints.double().numpy()
            row["aniposelib_dlt"] = point_metrics(anipose_triangulate(cams, px), true_kp)
            try:
                opt, secs = anipose_optim(cams, px, None)
                row["aniposelib_optim"] = {**point_metrics(opt, true_kp), "ms_per_frame": 1000 * secs / len(px)}
            except Exception as exc:  # noqa: BLE001 - the anchor's own failure is a result
                row["aniposelib_optim"] = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
        obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
        variants = [("keypoints", False, {})]
        if args.keypoint_offsets:
            variants = []
            for item in args.keypoint_offsets.split(","):
                w, _, where = item.partition(":")
                variants.append((f"keypoints_offsets_{item.replace(':', '_')}", False,
                                 {"keypoint_offsets": float(w), "markers_in_bones": where != "mesh"}))
        variants += [] if args.no_masks else [("masks", True, {})]
        variants += [("masks_grad_all", True, {"silhouette_grad_all": True})] if args.masks_grad_all else []
        variants += [("masks_pairs", True, {"silhouette_windows": False})] if args.masks_pairs else []
        variants += [("masks_eager", True, {"silhouette_deferred": False})] if args.masks_eager else []
        variants += [(f"masks_sigma_bias_{t}", True, {"sigma_bias": float(t)})
                     for t in args.masks_sigma_bias.split(",") if t]
        variants += [(f"masks_sigma_bias_bones_{t}", True, {"sigma_bias": float(t), "sigma_bias_mesh": False})
                     for t in args.masks_sigma_bias_bones.split(",") if t]
        variants += [(f"masks_mesh_anneal_{t}", True, {"sigma_bias": float(t), "sigma_bias_bones": False,
                                                        "sigma_anneal": True})
                     for t in args.masks_mesh_anneal.split(",") if t]
        variants += [(f"masks_mesh_auto_{t}", True, {"sigma_bias": float(t), "sigma_bias_bones": False})
                     for t in args.masks_mesh_auto.split(",") if t]
        variants += [(f"masks_mesh_only_auto_{t}", True, {"sigma_bias": float(t), "sigma_bias_bones": False,
                                                           "bones_silhouettes": False})
                     for t in args.masks_mesh_only_auto.split(",") if t]
        for name, sil, extra in variants:
            check = raster_check(args.check_raster)
            config = FitConfig(**{**SIGMA_BEFORE_49, **overrides, **extra, "silhouettes": sil})
            t0, w0 = time.process_time(), time.perf_counter()
            shaped = fit_avatar_shape(tpl, obs, config, args.keyframes)
            shape_cpu = time.process_time() - t0
            track_config = FitConfig(**{**overrides, "silhouettes": False})
            t1 = time.process_time()
            tracked = track_sequence(tpl, shaped.shape, obs, track_config)
            track_cpu = time.process_time() - t1
            m = model_metrics(tpl, shaped.shape, tracked.pose, truth, cams)
            with torch.no_grad():
                from cortexkit.tools.avatar.model import forward

                _, _, kps = forward(tpl, shaped.shape, tracked.pose, with_vertices=False)
            per_kp = (kps.double() - truth["keypoints"].double()).norm(dim=-1).mean(0)
            per_kp = {n: round(float(e), 4) for n, e in zip(tpl.keypoint_names, per_kp) if n in shown_kps}
            markers = shaped.shape.markers
            row[f"avatar_{name}"] = {
                "keypoint_mpjpe_mm": per_kp,
                "marker_mm": None if markers is None else {
                    n: round(float(x), 3) for n, x in zip(tpl.keypoint_names, markers.norm(dim=-1))
                    if n in shown_kps},
                "track_mpjpe_mm": m["mpjpe_mm"], "track_pa_mpjpe_mm": m["pa_mpjpe_mm"],
                "vertex_error_mm": m["vertex_error_mm"], "joint_angle_error_deg": m["joint_angle_error_deg"],
                "bone_scale_error": m["bone_scale_error"], "bone_scale_error_max": m["bone_scale_error_max"],
                "bone_scale_error_observed": observed_bone_error(tpl, shaped.shape, truth),
                "bone_length_error_spanned_unspanned": bone_split(tpl, shaped.shape, truth),
                "sigma": shaped.sigma if sil else None,
                "sigma_stages": {k: list(v) if isinstance(v, tuple) else v for k, v in shaped.sigma_stages.items()},
                "sigma_area_ratio": None if shaped.sigma_ratio is None else [round(float(r), 4) for r in shaped.sigma_ratio],
                "scale_error": m["scale_error"], "shape_cpu_s": shape_cpu,
                "shape_wall_s": time.perf_counter() - w0 - track_cpu,
                "track_cpu_s_per_frame": track_cpu / len(world), "peak_rss_mb_so_far": peak_mb()}
            if args.baseline:
                from cortexkit.tools.avatar.baseline import held_out_check

                t1 = time.process_time()
                check = held_out_check(tpl, shaped.shape, obs, track_config)
                row[f"avatar_{name}"]["baseline_check"] = {**check, "cpu_s": time.process_time() - t1,
                                                           "track_cpu_s": track_cpu}
            variants = [(f"track_steps_{n}", {"track_steps": n})
                        for n in [int(x) for x in args.track_steps.split(",") if x]]
            for item in [x for x in args.temporal.split(",") if x]:
                w, order = (float(item.split(":")[0]), int(item.split(":")[1])) if ":" in item else (float(item), 1)
                variants.append((f"track_temporal_{w:g}_order_{order}", {"temporal_weight": w, "temporal_order": order}))
            if args.track_masks and (args.track_masks == "all" or name in args.track_masks.split(",")):
                if args.track_masks_lean_paired:
                    variants += [(f"track_masks_{path}{suffix}", {"silhouettes": True})
                                 for path, suffix in (("lean", ""), ("reference", ""), ("reference", "_2"), ("lean", "_2"))]
                elif args.track_masks_paired:
                    variants += [(f"track_masks_{path}{suffix}", {"silhouettes": True,
                                                                   "track_silhouette_deferred": path == "deferred"})
                                 for path, suffix in (("deferred", ""), ("eager", ""), ("eager", "_2"), ("deferred", "_2"))]
                else:
                    variants += [("track_masks", {"silhouettes": True})]
                variants += [("track_masks_eager", {"silhouettes": True, "silhouette_deferred": False})
                             ] if args.track_masks_eager else []
                variants += [(f"track_masks_cams_{n}", {"silhouettes": True, "track_silhouette_cameras": int(n)})
                             for n in args.track_masks_cameras.split(",") if n]
            shape_extra = extra
            for key, extra in variants:   # one track per variant, same avatar and views
                merged = {**overrides, **shape_extra, "silhouettes": False, **extra}
                if "silhouette_deferred" in merged and "track_silhouette_deferred" not in merged:
                    # section 17's commands: silhouette_deferred governed the track too (before section 18
                    # gave tracking its own field)
                    merged["track_silhouette_deferred"] = merged["silhouette_deferred"]
                with lean_switch(key.startswith("track_masks_reference")):
                    t1 = time.process_time()
                    pose = track_sequence(tpl, shaped.shape, obs, FitConfig(**merged)).pose
                    cpu = (time.process_time() - t1) / len(world)
                mw = model_metrics(tpl, shaped.shape, pose, truth, cams)
                row[f"avatar_{name}"][key] = {
                    "mpjpe_mm": mw["mpjpe_mm"], "pa_mpjpe_mm": mw["pa_mpjpe_mm"],
                    "vertex_error_mm": mw["vertex_error_mm"], "joint_angle_error_deg": mw["joint_angle_error_deg"],
                    "cpu_s_per_frame": cpu, "peak_rss_mb_so_far": peak_mb(),
                    "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()]}
            for rule in [x for x in args.extremities.split(",") if x]:
                from dataclasses import replace

                from cortexkit.tools.avatar.model import extremity_marks
                from diag_frog import swing_twist_deg   # per observable joint [swing, twist] deg (section 22)

                # RULE or RULE:F (section 22: limb-ends+twist:10 = twist factor 10 instead of 100)
                base_rule, _, twist_factor = rule.partition(":")
                marks, twist = extremity_marks(base_rule, tpl.joint_names, tpl.parents, tpl.free.numpy(),
                                               tpl.joints.numpy(), tpl.frames.numpy(), tpl.meta.get("mirror_axis", 0))
                tpl_rule = replace(tpl, extremity=torch.as_tensor(marks, dtype=torch.bool),
                                   extremity_twist=None if twist is None else torch.as_tensor(twist, dtype=torch.float32))
                rule_config = track_config if not twist_factor else replace(
                    track_config, extremity_twist_factor=float(twist_factor))
                t1 = time.process_time()
                pose = track_sequence(tpl_rule, shaped.shape, obs, rule_config).pose
                cpu = (time.process_time() - t1) / len(world)
                mw = model_metrics(tpl_rule, shaped.shape, pose, truth, cams)
                with torch.no_grad():
                    from cortexkit.tools.avatar.model import forward

                    _, _, kps = forward(tpl_rule, shaped.shape, pose, with_vertices=False)
                per_kp = (kps.double() - truth["keypoints"].double()).norm(dim=-1).mean(0)
                row[f"avatar_{name}"][f"track_extremities_{rule}"] = {
                    "marked": [n for n, x, f in zip(tpl.joint_names, marks, tpl.free.tolist()) if x and f],
                    **({} if twist is None else {"twist_marked": [
                        n for n, a in zip(tpl.joint_names, np.abs(twist).sum(1)) if a > 0]}),
                    "mpjpe_mm": mw["mpjpe_mm"], "pa_mpjpe_mm": mw["pa_mpjpe_mm"],
                    "vertex_error_mm": mw["vertex_error_mm"], "joint_angle_error_deg": mw["joint_angle_error_deg"],
                    "keypoint_mpjpe_mm": {n: round(float(e), 4) for n, e in zip(tpl.keypoint_names, per_kp)},
                    "swing_twist_deg": swing_twist_deg(tpl_rule, shaped.shape, pose, truth),
                    "cpu_s_per_frame": cpu, "peak_rss_mb_so_far": peak_mb(),
                    "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()]}
            if args.check_raster:
                row[f"avatar_{name}"]["raster_check_max_abs_alpha_diff"] = check.result()
            print(f"# {n_cams} cams {name}: {row[f'avatar_{name}']}", file=sys.stderr, flush=True)
        out["rigs"][n_cams] = row
        print(f"# {n_cams} cams: {yaml.safe_dump(row, default_flow_style=True, width=10000)}", file=sys.stderr, flush=True)
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
