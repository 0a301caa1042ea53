"""fit-avatar benchmark: the synthetic Fox protocol (our robust DLT, aniposelib's DLT and
triangulate_optim, our keypoint-only and silhouette fits, in the same run), the mouse session
leave-one-camera-out reprojection, and speed. Writes YAML to stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/run.py --quick > benchmarks/fit_avatar/results_quick.yaml
    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/run.py --quick --real-rigs-only > benchmarks/fit_avatar/results_real_rigs_quick.yaml

Rigs: virtual rings of 4/6/16 cameras and the real 7- and 12-camera Anipose calibrations.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats.calibration import read_calibration
from cortexkit.formats.gltf import read_gltf
from cortexkit.formats.keypoints2d import read_keypoints
from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape, track_sequence
from cortexkit.tools.avatar.io import cameras_from_arrays
from cortexkit.tools.avatar.metrics import model_metrics, point_metrics
from cortexkit.tools.avatar.model import Shape, template_from_mesh
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from cortexkit.tools.avatar.triangulate import reprojection, triangulate, triangulate_frames

from blur_before49 import SIGMA_BEFORE_49  # noqa: E402  (sigma 0.1 in both stages unless a variant says otherwise)

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "avatar"


def anipose_group(cams):
    from aniposelib.cameras import Camera, CameraGroup

    return CameraGroup([Camera(matrix=cams.K[c].numpy(), dist=cams.dist[c, :5].numpy(), size=cams.size[c].numpy(),
                               rvec=cams.rvec[c].numpy(), tvec=cams.tvec[c].numpy(), name=n)
                        for c, n in enumerate(cams.names)])


def anipose_triangulate(cams, px):
    """px (F, C, K, 2) -> (F, K, 3) by aniposelib's DLT (NaN where < 2 views)."""
    F, C, K = px.shape[:3]
    flat = px.transpose(1, 0, 2, 3).reshape(C, F * K, 2)
    return anipose_group(cams).triangulate(flat, undistort=True).reshape(F, K, 3)


def anipose_optim(cams, px, seconds):
    F, C, K = px.shape[:3]
    group = anipose_group(cams)
    start = time.perf_counter()
    out = group.triangulate_optim(px.transpose(1, 0, 2, 3), init_ransac=False, verbose=False)
    return out, time.perf_counter() - start


def texture_errors(tpl, shaped, syn, cams):
    """The texture stage on renders of a hidden colouring at the keyframes: mean |RGB error| of
    the fitted avatar's colours, of the same stage on the true geometry (the flat-shading
    floor), and of one mean colour everywhere."""
    from cortexkit.tools.avatar.model import forward
    from cortexkit.tools.avatar.texture import render, synthetic_colors, vertex_colors

    truth = synthetic_colors(tpl.vertices)
    true_verts = syn.truth["vertices"][shaped.keyframes]
    images = [render(cams, v, tpl.faces, truth) for v in true_verts]
    t0 = time.perf_counter()
    with torch.no_grad():
        verts, _, _ = forward(tpl, shaped.shape, shaped.pose)
    got, seen = vertex_colors(verts, tpl.faces, tpl.edges, cams, lambda b, c: images[b][c])
    secs = time.perf_counter() - t0
    exact, _ = vertex_colors(true_verts, tpl.faces, tpl.edges, cams, lambda b, c: images[b][c])
    return {"color_error": float(np.abs(got - truth).mean()),
            "color_error_true_geometry": float(np.abs(exact - truth).mean()),
            "color_error_flat": float(np.abs(truth.mean(0) - truth).mean()),
            "vertices_seen": float(seen.mean()), "seconds": secs,
            "keyframes_x_cameras": len(images) * len(cams)}


def synthetic(tpl, mesh, args):
    rows = []
    world = mesh.animations["Walk"]["world"][: args.frames]
    for rig, noise in args.settings:
        cfg = SynthConfig(noise=noise, dropout=0.2, outliers=0.03, masks=True, crop=args.crop, seed=1)
        if isinstance(rig, int):
            cams, syn = make_views(tpl, world, 10.0, f"ring:{rig}", None, cfg)
        else:  # a real rig (Anipose calibration), moved and scaled around the subject by make_views
            cams, syn = make_views(tpl, world, 10.0, rig, read_calibration(DATA / "aniposelib_calib" / rig, "mm"), cfg)
        cams_n = len(cams)
        truth = syn.truth["keypoints"].double().numpy()
        px = syn.keypoints.double().numpy()
        row = {"cameras": cams_n, "noise_px": noise, "frames": int(px.shape[0])}
        if not isinstance(rig, int):
            row["rig"] = rig
        t0 = time.perf_counter()
        ours = triangulate_frames(cams, px, syn.confidence.numpy()).points
        row["ours_dlt"] = {**point_metrics(ours, truth), "ms_per_frame": 1000 * (time.perf_counter() - t0) / len(px)}
        t0 = time.perf_counter()
        try:
            ani = anipose_triangulate(cams, px)
            row["aniposelib_dlt"] = {**point_metrics(ani, truth), "ms_per_frame": 1000 * (time.perf_counter() - t0) / len(px)}
        except Exception as exc:  # noqa: BLE001
            row["aniposelib_dlt"] = f"failed: {type(exc).__name__}: {exc}"
        if args.optim:
            try:
                opt, secs = anipose_optim(cams, px, 0)
                row["aniposelib_optim"] = {**point_metrics(opt, truth), "ms_per_frame": 1000 * secs / len(px)}
            except Exception as exc:  # noqa: BLE001
                row["aniposelib_optim"] = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
        obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
        variants = [("fit_keypoints", False, min(6, cams_n), False)]
        if cams_n in args.sil_at:
            variants += [("fit_silhouettes", True, min(6, cams_n), False),
                         ("fit_silhouettes_mesh_bones", True, min(6, cams_n), True)]
        if cams_n > 6:  # BigMaQ's 6-camera subset vs every camera
            variants.append(("fit_keypoints_all_cameras", False, 0, False))
        for key, sil, n_track, mesh_bones in variants:
            torch.manual_seed(0)
            fit = FitConfig(**SIGMA_BEFORE_49, shape_steps=tuple(args.shape_steps) if sil else tuple(args.shape_steps[:3]) + (0,),
                            track_steps=args.track_steps, cameras=n_track, window=10, overlap=3,
                            silhouettes=sil, crop=args.crop, mesh_bones=mesh_bones)
            t0 = time.perf_counter()
            shaped = fit_avatar_shape(tpl, obs, fit, n_keyframes=args.keyframes)
            shape = shaped.shape
            t_shape = time.perf_counter() - t0
            colour = texture_errors(tpl, shaped, syn, cams) if sil and not mesh_bones else None
            t0 = time.perf_counter()
            res = track_sequence(tpl, shape, obs, fit)
            spf = (time.perf_counter() - t0) / len(px)
            m = model_metrics(tpl, shape, res.pose, syn.truth, cams, clean2d=syn.clean, crops=syn.crops, masks=syn.masks)
            m.pop("observable_joints", None)
            m.update({"track_seconds_per_frame": spf, "shape_seconds": t_shape})
            if colour is not None:
                m["texture"] = colour
            for ref in ("ours_dlt", "aniposelib_dlt", "aniposelib_optim"):
                if isinstance(row.get(ref), dict):
                    m[f"mpjpe_vs_{ref}"] = m["mpjpe_mm"] / row[ref]["mpjpe_mm"] - 1
            row[key] = m
        rows.append(row)
        print(yaml.safe_dump([row], sort_keys=False), file=sys.stderr)
    return rows


def mouse_loo():
    d = DATA / "sleap_anipose_minimal"
    cal = read_calibration(d / "calibration.toml", "mm")
    names = ["back", "mid", "top"]  # 'side' duplicates 'top' in this fixture
    idx = [cal["names"].index(n) for n in names]
    cams = cameras_from_arrays({k: (v if k == "names" else v[idx]) for k, v in cal.items()} | {"names": names})
    data = [read_keypoints(d / f"minimal_{n}_proofread.analysis.h5") for n in names]
    px = np.stack([xy for _, xy, _ in data], 0)          # (C, F, K, 2)
    conf = np.stack([s for _, _, s in data], 0)
    C, F, K = px.shape[:3]
    out = {}
    for held in range(C):
        rest = [c for c in range(C) if c != held]
        sub = cams.subset(rest)
        flat = px[rest].reshape(len(rest), F * K, 2)
        ours = triangulate(sub, flat, conf[rest].reshape(len(rest), F * K)).points
        err_ours = reprojection(cams.subset([held]), ours, px[held].reshape(1, F * K, 2))[0]
        ani = anipose_group(sub).triangulate(flat, undistort=True)
        err_ani = reprojection(cams.subset([held]), ani, px[held].reshape(1, F * K, 2))[0]
        both = np.isfinite(err_ours) & np.isfinite(err_ani)
        out[names[held]] = {"ours_median_px": float(np.median(err_ours[both])),
                            "aniposelib_median_px": float(np.median(err_ani[both])),
                            "ours_mean_px": float(np.mean(err_ours[both])),
                            "aniposelib_mean_px": float(np.mean(err_ani[both])), "points": int(both.sum())}
    return out


def speed16(tpl, mesh):
    cfg = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, masks=False, seed=2)
    cams, syn = make_views(tpl, mesh.animations["Survey"]["world"][:60], 10.0, "ring:16", None, cfg)
    px = syn.keypoints.double().numpy()
    t0 = time.perf_counter()
    triangulate_frames(cams, px, syn.confidence.numpy())
    ours = 1000 * (time.perf_counter() - t0) / len(px)
    t0 = time.perf_counter()
    anipose_triangulate(cams, px)
    ani = 1000 * (time.perf_counter() - t0) / len(px)
    return {"frames": len(px), "cameras": 16, "ours_ms_per_frame": ours, "aniposelib_dlt_ms_per_frame": ani}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-optim", dest="optim", action="store_false",
                    help="skip aniposelib's triangulate_optim (the filtered anchor)")
    ap.add_argument("--real-rigs-only", action="store_true",
                    help="only the synthetic rows on the real 7- and 12-camera Anipose rigs (no mouse/speed)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    # keyframes: every frame of the quick clip (BigMaQ fits the avatar over all labelled keyframes)
    args.frames, args.keyframes, args.crop = (12, 12, 48) if args.quick else (22, 11, 64)
    real = [("7cam-allen-mouse__calibration.toml", 2.0), ("12cam-allen-mouse__calibration.toml", 2.0)]
    args.settings = real if args.real_rigs_only else [(4, 2.0), (6, 2.0), (16, 2.0), (16, 5.0)] + real
    args.sil_at = [6]
    args.shape_steps = [60, 100, 100, 30] if args.quick else [100, 150, 150, 60]
    args.track_steps = 100 if args.quick else 120
    mesh = read_gltf(DATA / "fox" / "glTF-Binary" / "Fox.glb")
    tpl = template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                             mesh.rest_world, unit_mm=10.0)
    report = {"config": {k: v for k, v in vars(args).items()}}
    if not args.real_rigs_only:
        report.update({"mouse_leave_one_camera_out": mouse_loo(), "triangulation_speed": speed16(tpl, mesh)})
    print(yaml.safe_dump(report, sort_keys=False), file=sys.stderr)
    report["synthetic_fox_walk"] = synthetic(tpl, mesh, args)
    print(yaml.safe_dump(report, sort_keys=False))


if __name__ == "__main__":
    main()
