"""Why the frog's track trails our triangulation (RESULTS section 19, diagnosis av22): per rig, in one
process, the same synthetic views as ``hexapod.py`` (seed 0, 2 px noise, 20 % dropout, 3 % outliers,
crop 48) and, side by side:

* our robust DLT (``triangulate_frames``), its error per keypoint and per frame;
* the keypoint-only avatar at results_frog.yaml's settings (6 keyframes, shape steps 100,150,150,60,
  markers 100), tracked at the default (240 steps, no silhouettes): errors per keypoint, per frame, per
  observable joint (joint angle), and its bone-scale error per bone group (fitted bone x global scale /
  true);
* tracks of the TRUE individual (the hidden global scale, bone scales and offsets, no markers) with
  the default track config and with the temporal and/or joint-limit terms off: shape error vs
  tracking error vs the priors;
* the fitted avatar tracked with the priors off;
* the clip's own joint angles against the template's limits (how far the truth lies outside the box
  the limit term pulls towards).

Diagnosis only: FitConfig fields are set per run, no default changes. YAML on stdout.

    python benchmarks/fit_avatar/make_template.py --plan frog benchmarks/fit_avatar/_frog/frog.glb
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/diag_frog.py --cams 16,7 > benchmarks/fit_avatar/diag_frog.yaml
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/diag_frog.py --cams 16,7 --runs fitted_default,true_shape_extremity_1,fitted_extremity_1 > benchmarks/fit_avatar/diag_frog_extremity.yaml
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/diag_frog.py --cams 16,7 --runs fitted_default,fitted_limb_ends,true_shape_default,true_shape_limb_ends > benchmarks/fit_avatar/diag_frog_limb_ends.yaml

(section 20: ``*_limb_ends`` track with model.extremity_joints' structural rule; every track also reports
its per-joint error split into swing and twist about the bone to the joint's keypointed child. Since section
21 the ``*_default`` runs track with the new default marks, limb-ends+twist; the YAMLs written before it
had ``names`` there.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape, track_sequence
from cortexkit.tools.avatar.metrics import model_metrics, observable_joints, point_metrics
from cortexkit.tools.avatar.model import Pose, Shape, forward, joint_world_transforms
from cortexkit.tools.avatar.rotation import geodesic_deg
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from cortexkit.tools.avatar.triangulate import triangulate_frames

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_template import load_template  # noqa: E402
from blur_before49 import SIGMA_BEFORE_49  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def r(x, n=3):
    return round(float(x), n)


def per_joint_angles(tpl, shape, pose, truth):
    true_shape = Shape(truth["scale"].reshape(()), truth["bone_scales"], truth["offsets"])
    true_pose = Pose(truth["rotations"], truth["global_rot"], truth["global_t"])
    with torch.no_grad():
        rp, _ = joint_world_transforms(tpl, shape, pose)
        rt, _ = joint_world_transforms(tpl, true_shape, true_pose)
    obs = observable_joints(tpl)
    parents = [max(tpl.parents[i], 0) for i in obs]
    ang = geodesic_deg(rp[:, parents].transpose(-1, -2) @ rp[:, obs], rt[:, parents].transpose(-1, -2) @ rt[:, obs])
    return {tpl.joint_names[j]: r(a, 1) for j, a in zip(obs, ang.mean(0))}, ang


def swing_twist_deg(tpl, shape, pose, truth):
    """Per observable joint, the mean local rotation error split into twist about the bone to its
    keypointed child (what a keypoint on that bone's axis cannot see) and swing (the bone's direction):
    {joint: [swing, twist]} degrees (section 20)."""
    true_shape = Shape(truth["scale"].reshape(()), truth["bone_scales"], truth["offsets"])
    true_pose = Pose(truth["rotations"], truth["global_rot"], truth["global_t"])
    with torch.no_grad():
        rp, _ = joint_world_transforms(tpl, shape, pose)
        rt, _ = joint_world_transforms(tpl, true_shape, true_pose)
    kp_joints = set(torch.nonzero(tpl.keypoints_joint.abs().sum(0) > 0).reshape(-1).tolist())
    out = {}
    for j in observable_joints(tpl):
        p = max(tpl.parents[j], 0)
        child = next(c for c, q in enumerate(tpl.parents) if q == j and c in kp_joints)
        axis = (tpl.joints[child] - tpl.joints[j]).double()
        axis = axis / axis.norm()
        lp = rp[:, p].transpose(-1, -2) @ rp[:, j]
        lt = rt[:, p].transpose(-1, -2) @ rt[:, j]
        e = (lp.transpose(-1, -2) @ lt).double()                               # (F, 3, 3) error rotation
        moved = e @ axis
        swing = torch.rad2deg(torch.arccos((moved @ axis).clamp(-1.0, 1.0)))
        # twist: the error's rotation about the axis, from its quaternion (w, v): 2 atan2(|v . a|, w)
        w = 0.5 * (1 + e.diagonal(dim1=-2, dim2=-1).sum(-1)).clamp(min=1e-12).sqrt()
        v = torch.stack([e[:, 2, 1] - e[:, 1, 2], e[:, 0, 2] - e[:, 2, 0], e[:, 1, 0] - e[:, 0, 1]], -1) / (4 * w[:, None])
        twist = torch.rad2deg(2 * torch.atan2((v @ axis).abs(), w))
        out[tpl.joint_names[j]] = [r(swing.mean(), 1), r(twist.mean(), 1)]
    return out


def errors(tpl, points, true_kp):
    """(F, K, 3) points vs truth -> per keypoint mean, per frame mean (NaN-aware), overall."""
    e = np.linalg.norm(points - true_kp, axis=-1)
    per_kp = {n: r(np.nanmean(e[:, k])) for k, n in enumerate(tpl.keypoint_names)}
    per_frame = [r(x, 2) for x in np.nanmean(e, 1)]
    return e, {"mpjpe_mm": r(np.nanmean(e)), "per_keypoint_mm": per_kp, "per_frame_mm": per_frame}


def tracked(tpl, shape, obs, truth, cams, config, tri_e):
    t0 = time.process_time()
    pose = track_sequence(tpl, shape, obs, config).pose
    cpu = time.process_time() - t0
    with torch.no_grad():
        _, _, kps = forward(tpl, shape, pose, with_vertices=False)
    e, out = errors(tpl, kps.double().numpy(), truth["keypoints"].double().numpy())
    m = model_metrics(tpl, shape, pose, truth, cams)
    joints, _ = per_joint_angles(tpl, shape, pose, truth)
    both = np.isfinite(tri_e)
    out.update({"mpjpe_vs_ours": r(np.nanmean(e) / np.nanmean(tri_e)),
                "mpjpe_where_ours_has_a_point": r(e[both].mean()),
                "vs_ours_same_points": r(e[both].mean() / tri_e[both].mean()),
                "keypoints_worse_than_ours": sorted(
                    (n for k, n in enumerate(tpl.keypoint_names)
                     if e[both[:, k], k].mean() > tri_e[both[:, k], k].mean())),
                "vertex_error_mm": r(m["vertex_error_mm"]), "joint_angle_error_deg": r(m["joint_angle_error_deg"], 2),
                "joint_angle_deg_per_joint": joints,
                "swing_twist_deg_per_joint": swing_twist_deg(tpl, shape, pose, truth), "track_cpu_s": r(cpu, 1)})
    # the limit term at the tracked pose vs at the truth
    lo, hi = tpl.limits[None, :, 0], tpl.limits[None, :, 1]
    th = pose.rotations
    out["limit_violation_rad_mean"] = r(((torch.relu(lo - th) + torch.relu(th - hi)) * tpl.free[None, :, None])
                                         .abs().sum((1, 2)).mean(), 4)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=str(ROOT / "benchmarks/fit_avatar/_frog/frog.glb"))
    ap.add_argument("--cams", default="16,7")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--keyframes", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", default="fitted_default,true_shape_default,true_shape_no_temporal,true_shape_no_limits,"
                    "true_shape_no_priors,fitted_no_priors", help="tracks to run (names in main's runs)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    mesh, tpl = load_template(args.template)
    clip = next(iter(mesh.animations))
    world = mesh.animations[clip]["world"][:args.frames]
    overrides = {"shape_steps": (100, 150, 150, 60), "keypoint_offsets": 100.0}
    out = {"template": str(Path(args.template).resolve().relative_to(ROOT)), "clip": clip, "frames": int(len(world)),
           "seed": args.seed, "keyframes": args.keyframes, "config_overrides": {k: list(v) if isinstance(v, tuple) else v
                                                                                for k, v in overrides.items()},
           "keypoints": {n: ("vertex set" if bool(tpl.keypoints_vertex[k].abs().sum() > 0) else
                             tpl.joint_names[int(tpl.keypoints_joint[k].abs().argmax())])
                         for k, n in enumerate(tpl.keypoint_names)},
           "extremity_joints": [n for n, x in zip(tpl.joint_names, tpl.extremity.tolist()) if x],
           "rigs": {}}
    for n_cams in [int(c) for c in args.cams.split(",")]:
        cfg = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=48, masks=True, seed=args.seed)
        cams, syn = make_views(tpl, world, 1000.0, f"ring:{n_cams}", None, cfg)
        truth = syn.truth
        true_kp = truth["keypoints"].double().numpy()
        if "truth_limits" not in out:   # the clip's angles against the template's limit box
            th = truth["rotations"]
            lo, hi = tpl.limits[None, :, 0], tpl.limits[None, :, 1]
            viol = (torch.relu(lo - th) + torch.relu(th - hi)) * tpl.free[None, :, None]
            per_joint = viol.abs().amax(-1)                                  # (F, J) worst component
            out["truth_limits"] = {
                "frames_with_any_violation": int((per_joint > 1e-4).any(1).sum()),
                "max_violation_rad_per_joint": {tpl.joint_names[j]: r(per_joint[:, j].max(), 3)
                                                for j in range(tpl.n_joints) if float(per_joint[:, j].max()) > 1e-4},
                "frames_violating_per_joint": {tpl.joint_names[j]: int((per_joint[:, j] > 1e-4).sum())
                                               for j in range(tpl.n_joints) if float(per_joint[:, j].max()) > 1e-4}}
            out["truth_shape"] = {"scale": r(truth["scale"].reshape(()), 4),
                                  "bone_scales": {g: r(s, 4) for g, s in zip(tpl.group_names, truth["bone_scales"])}}
        row = {}
        tri = triangulate_frames(cams, syn.keypoints.double().numpy(), syn.confidence.double().numpy()).points
        tri_e, row["triangulate_ours"] = errors(tpl, tri, true_kp)
        row["triangulate_ours"]["point_metrics"] = {k: r(v, 4) for k, v in point_metrics(tri, true_kp).items()}
        obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
        t0 = time.process_time()
        shaped = fit_avatar_shape(tpl, obs, FitConfig(**{**SIGMA_BEFORE_49, **overrides, "silhouettes": False}),
                                  args.keyframes)
        shape_cpu = time.process_time() - t0
        fitted = shaped.shape
        true_shape = Shape(truth["scale"].reshape(()).float(), truth["bone_scales"].float(), truth["offsets"].float())
        ratio = (fitted.bone_scales * fitted.scale / (truth["bone_scales"] * truth["scale"].reshape(()))).detach()
        row["fitted_shape"] = {
            "shape_cpu_s": r(shape_cpu, 1), "scale_error": r(float(fitted.scale / truth["scale"].reshape(())) - 1, 4),
            "bone_scale_error_per_group": {g: r(float(x) - 1, 4) for g, x in zip(tpl.group_names, ratio)},
            "bone_scale_abs_error_mean": r((ratio - 1).abs().mean(), 4)}
        base = {**overrides, "silhouettes": False}
        runs = {"fitted_default": (fitted, {}),
                "true_shape_default": (true_shape, {}),
                "true_shape_no_temporal": (true_shape, {"temporal_weight": 0.0}),
                "true_shape_no_limits": (true_shape, {"joint_limit_weight": 0.0}),
                "true_shape_no_priors": (true_shape, {"temporal_weight": 0.0, "joint_limit_weight": 0.0}),
                "fitted_no_priors": (fitted, {"temporal_weight": 0.0, "joint_limit_weight": 0.0}),
                # the temporal term with hands/feet weighted as every other joint (default x100)
                "true_shape_extremity_1": (true_shape, {"extremity_factor": 1.0}),
                "fitted_extremity_1": (fitted, {"extremity_factor": 1.0}),
                # section 20: the extremities chosen by the structural rule (hands and feet, not wrists and ankles)
                "true_shape_limb_ends": (true_shape, {}),
                "fitted_limb_ends": (fitted, {})}
        for name in args.runs.split(","):
            shape, extra = runs[name]
            tpl_run = tpl
            if name.endswith("_limb_ends"):
                from dataclasses import replace

                from cortexkit.tools.avatar.model import extremity_joints

                tpl_run = replace(tpl, extremity=torch.as_tensor(extremity_joints(
                    "limb-ends", tpl.joint_names, tpl.parents, tpl.free.numpy(), tpl.joints.numpy(),
                    tpl.meta.get("mirror_axis", 0)), dtype=torch.bool), extremity_twist=None)   # section 22: no twist marks
            row[name] = tracked(tpl_run, shape, obs, truth, cams, FitConfig(**{**base, **extra}), tri_e)
            print(f"# {n_cams} cams {name}: mpjpe {row[name]['mpjpe_mm']} vs ours {row[name]['mpjpe_vs_ours']} "
                  f"angle {row[name]['joint_angle_error_deg']}", file=sys.stderr, flush=True)
        out["rigs"][n_cams] = row
    yaml.safe_dump(out, sys.stdout, sort_keys=False, width=200)


if __name__ == "__main__":
    main()
