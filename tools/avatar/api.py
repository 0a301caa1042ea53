"""What each ``fit-avatar`` verb calls beyond reading and writing (the readers are in
:mod:`.inputs`): views as observations; the shape fit with its texture; the track with its
held-out-camera baseline. ``log`` is the command's run (info, warn, detail, progress, stopped,
output_file)."""

from __future__ import annotations

import time

from cortexkit.formats.errors import CortexError


def synth_views(tpl, clip_world, factor, rig, rig_cal, config, *, frames, radius, image_dir=None,
                mask_dir=None):
    """``synth``: a hidden individual's views as avatar-views tensors and metadata, with the truth;
    with ``image_dir`` / ``mask_dir`` also full-size colour renders / masks written per camera."""
    from cortexkit.tools.avatar.io import views_to_tensors
    from cortexkit.tools.avatar.synth import make_views

    cams, syn = make_views(tpl, clip_world, factor, rig, rig_cal, config, frames=frames, radius=radius)
    truth = {**syn.truth, "clean2d": syn.clean}
    if image_dir or mask_dir:
        from cortexkit.tools.avatar.texture import synthetic_colors, write_renders

        truth["colors"] = synthetic_colors(tpl.vertices)
        write_renders(cams, syn.truth["vertices"], tpl.faces, truth["colors"], image_dir, mask_dir)
    return views_to_tensors(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, crops=syn.crops,
                            masks=syn.masks, truth=truth)


def observations(views, template):
    """(template restricted to the views' keypoints, Observations), or a one-line error naming
    the keypoints the template's map lacks."""
    from cortexkit.tools.avatar.fit import Observations

    unknown = [n for n in views["keypoint_names"] if n not in template.keypoint_names]
    if unknown:
        raise CortexError(f"keypoint name(s) {', '.join(unknown)} are not in the template's keypoint map "
                          f"({', '.join(template.keypoint_names)}); give --keypoints MAP.yaml")
    return template.select_keypoints(views["keypoint_names"]), Observations(
        views["cameras"], views["keypoints"], views["confidence"], views["keypoint_names"],
        views["masks"], views["crops"])


def hooks(log):
    from cortexkit.tools.avatar.fit import Hooks

    return Hooks(log=log.info, detail=log.detail, progress=log.progress, stopped=log.stopped)


def fit_config(**kw):
    """FitConfig from the options given (None = the config's default)."""
    from cortexkit.tools.avatar.fit import FitConfig

    return FitConfig(**{k: v for k, v in kw.items() if v is not None})


def resolved_sigma(stages: dict):
    """The ``--sigma`` value that repeats a run's blurs, from ``ShapeResult.sigma_stages``: one float
    when every stage used it (auto), BONES,MESH when the mesh stage used its own (mesh-auto),
    BONES..MESH when the mesh stage was annealed from BONES to MESH (mesh-anneal)."""
    mesh = stages.get("mesh")
    bones = stages.get("bones", stages.get("split", mesh[0] if isinstance(mesh, tuple) else mesh))
    if isinstance(mesh, tuple):
        return f"{float(bones)!r}..{float(mesh[1])!r}"
    if mesh is None or mesh == bones:
        return float(bones)
    return f"{float(bones)!r},{float(mesh)!r}"


def shape(log, tpl, views, *, steps: str, keyframes: str | None, n_keyframes: int, images_dir,
          **config):
    """The shape verb: keyframes of ``views`` -> (avatar tensors, metadata); ``steps`` is
    "global,pose,bones,mesh", ``keyframes`` explicit indices, ``images_dir`` colour images for the
    texture stage, ``config`` the FitConfig options."""
    from cortexkit.tools.avatar.fit import fit_avatar_shape
    from cortexkit.tools.avatar.io import avatar_to_tensors

    tpl, obs = observations(views, tpl)
    image_files = None
    if images_dir is not None:
        from cortexkit.formats.keypoints2d import image_folders

        image_files = image_folders(images_dir, obs.cameras.names, len(obs.keypoints))
    try:
        stage_steps = tuple(int(s) for s in steps.split(","))
        assert len(stage_steps) == 4 and min(stage_steps) >= 0
    except (ValueError, AssertionError):
        raise CortexError(f"--steps {steps}: expected 4 non-negative integers (global,pose,bones,mesh)") from None
    picked = [int(k) for k in keyframes.split(",")] if keyframes else None
    resolved = fit_config(shape_steps=stage_steps, **config)
    result = fit_avatar_shape(tpl, obs, resolved, n_keyframes, picked, hooks=hooks(log))
    colors = None
    if image_files is not None:
        from cortexkit.formats.keypoints2d import read_image
        from cortexkit.tools.avatar.texture import avatar_colors

        colors, seen = avatar_colors(tpl, result.shape, result.pose, obs.cameras,
                                     lambda b, c: read_image(image_files[c][result.keyframes[b]]))
        log.info(f"texture: {int(seen.sum())} of {len(seen)} vertices seen in "
                 f"{len(result.keyframes)} keyframes x {len(obs.cameras)} cameras")
    if result.sigma_ratio is not None:  # a calibrated blur: the stored config holds what it resolved to
        spec = resolved_sigma(result.sigma_stages)
        mode = "auto" if resolved.sigma_bias_bones else ("mesh-anneal" if resolved.sigma_anneal else "mesh-auto")
        log.config["sigma"] = spec
        log.why["sigma"] = (f"{mode} -> {spec if isinstance(spec, str) else format(spec, '.4g')}: rendered / mask "
                            f"area {result.sigma_ratio[0]:.3f} at {result.sigma:.4g} "
                            f"({result.sigma_ratio[1]:.3f} at the widest)")
    if result.auto is not None:   # masks_in auto: which stages the silhouettes entered, and why
        log.why["masks_in"] = f"auto -> {result.auto['chosen']}: {result.auto['why']}"
    return avatar_to_tensors(tpl, result.shape, colors)


def track(log, tpl, shp, views, config, *, baseline_frames: int | None, plot=None):
    """The track verb: per-frame poses of ``views`` with the avatar frozen, the overlay PNG at
    ``plot`` (staged by the run) and, unless ``baseline_frames`` is None, triangulation scored beside
    the avatar on a held-out camera (a warning when the avatar loses) -> (poses tensors, metadata)."""
    from cortexkit.tools.avatar.fit import track_sequence
    from cortexkit.tools.avatar.io import poses_to_tensors

    tpl, obs = observations(views, tpl)
    start = time.perf_counter()
    with log.progress(total=len(obs.keypoints), desc="track", unit="frame") as bar:
        result = track_sequence(tpl, shp, obs, config, progress=bar.update, hooks=hooks(log))
    per_frame = (time.perf_counter() - start) / len(obs.keypoints)
    log.info(f"tracked {len(obs.keypoints)} frames, {per_frame:.3f} s/frame, keypoint error "
             f"{float(result.keypoint_error.mean()):.3f} crop px")
    if plot:
        from cortexkit.tools.avatar.plot import overlay

        with log.output_file(plot) as tmp:
            overlay(tmp, tpl, shp, result.pose, obs)
    check = None
    if baseline_frames is not None:
        from cortexkit.tools.avatar.baseline import BaselineConfig, held_out_check, messages

        check = held_out_check(tpl, shp, obs, config, BaselineConfig(frames=baseline_frames), hooks=hooks(log))
        line, warning = messages(check)
        log.info(line)
        if warning:
            log.warn(warning)
    tensors, meta = poses_to_tensors(result.pose, result.keypoint_error, result.silhouette_error,
                                     result.cameras_used, per_frame, tpl.joint_names, views["fps"])
    return tensors, {**meta, **({"avatar.baseline": check} if check else {})}


def render(log, tpl, shp, pose, views, mask_dir: str, source: str = "poses") -> dict:
    """The render verb: the fitted silhouettes of ``pose`` per camera as full-frame mask images under
    ``mask_dir`` -> report (per-camera IoU against ``views``' masks when it has them); ``source`` names
    the poses in errors."""
    import torch

    from cortexkit.tools.avatar.model import forward
    from cortexkit.tools.avatar.texture import write_renders

    cams, F = views["cameras"], len(views["keypoints"])
    if pose.rotations.shape[0] != F:
        raise CortexError(f"{source}: {pose.rotations.shape[0]} frames of poses, the views have {F}")
    with torch.no_grad():
        verts, _, _ = forward(tpl, shp, pose)
    write_renders(cams, verts, tpl.faces, None, None, mask_dir, progress=log.progress)
    report = {"frames": F, "cameras": list(cams.names), "mask_dir": mask_dir}
    if views["masks"] is not None and views["crops"] is not None:
        from cortexkit.tools.avatar.metrics import silhouette_iou_per_camera

        iou = silhouette_iou_per_camera(tpl, verts, cams, views["crops"], views["masks"])
        report["iou"] = {n: round(float(x), 4) for n, x in zip(cams.names, iou)}
        report["iou_mean"] = round(float(iou.mean()), 4)
    return report
