"""What fit-avatar's verbs read: the template (a glTF skin or a fitted avatar) with its keypoint map,
limits and symmetry files; one avatar-views artifact, or per-camera 2D keypoint files (a
folder of them) with an Anipose calibration, and silhouette masks from files."""

from __future__ import annotations

import os
import re

from cortexkit.formats.errors import CortexError


def camera_of(path: str, names: list[str], strict: bool = True) -> str | None:
    base = os.path.basename(path)
    # DeepLabCut names its output VIDEODLC_<scorer>...: the camera name may run into "DLC"
    hits = [n for n in names if re.search(rf"(^|[^A-Za-z0-9]){re.escape(n)}([^A-Za-z0-9]|DLC|$)", base)]
    if not hits and not strict:
        return None
    if not hits:
        raise CortexError(f"{path}: no camera of the calibration ({', '.join(names)}) is named in the "
                          "file name; give --camera-names")
    return max(hits, key=len)


def read_views(inputs, calibration, units, camera_names, read_artifact, warn):
    """One avatar-views artifact, or per-camera 2D files + an Anipose calibration -> views dict
    (``read_artifact(source, kind)`` reads the artifact; ``warn`` hears what the checks find)."""
    from cortexkit.tools.avatar.io import VIEWS, views_from_artifact

    if not inputs:
        raise CortexError("no input: give an avatar-views artifact or 2D keypoint files with --calibration")
    if calibration is None:
        if camera_names:
            raise CortexError("--camera-names names the files of --calibration; an avatar-views "
                              "artifact already names its cameras (drop --camera-names)")
        if len(inputs) != 1:
            raise CortexError("several 2D files need --calibration calibration.toml")
        views = views_from_artifact(read_artifact(inputs[0], VIEWS))
    else:
        from cortexkit.formats.calibration import read_calibration
        from cortexkit.formats.keypoints2d import keypoint_files, read_keypoints

        cal = read_calibration(calibration, units)
        inputs, from_folder = keypoint_files(list(inputs))
        if camera_names:
            names = camera_names.split(",")
        else:   # files of a folder that name no camera of the calibration are not 2D files of this rig
            found = {p: camera_of(p, cal["names"], strict=p not in from_folder) for p in inputs}
            inputs = [p for p in inputs if found[p] is not None]
            names = [found[p] for p in inputs]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise CortexError(f"camera(s) {', '.join(twice)} named by several 2D files "
                                  f"({', '.join(os.path.basename(p) for p, n in found.items() if n in twice)}); "
                                  "give --camera-names")
            if len(inputs) < 2:
                raise CortexError(f"{len(inputs)} 2D file(s) name a camera of {calibration} "
                                  f"({', '.join(cal['names'])}); at least 2 views are needed")
        if len(names) != len(inputs):
            raise CortexError(f"--camera-names gives {len(names)} names for {len(inputs)} files")
        missing = [n for n in names if n not in cal["names"]]
        if missing:
            raise CortexError(f"camera(s) {', '.join(missing)} not in {calibration} "
                              f"(it has {', '.join(cal['names'])})")
        from cortexkit.tools.avatar.io import select_cameras, views_from_detections

        read = [read_keypoints(p) for p in inputs]
        kp_names = read[0][0]
        for p, (n, _, _) in zip(inputs, read):
            if n != kp_names:
                raise CortexError(f"{p}: keypoint names {n} differ from {inputs[0]}'s {kp_names}")
        views = views_from_detections(select_cameras(cal, names), kp_names, [(xy, s) for _, xy, s in read])
    from cortexkit.tools.avatar.checks import check_views

    for warning in check_views(views["keypoints"], views["confidence"], views["cameras"].names):
        warn(warning)
    return views


def with_file_masks(views, source, crop):
    """--masks PATH: full-size masks per camera (image folders, per-camera arrays, one .npz) ->
    crop masks in views (replacing any)."""
    if source is None:
        return views
    from cortexkit.formats.keypoints2d import MaskSource
    from cortexkit.tools.avatar.fit import Observations, crops_from_keypoints
    from cortexkit.tools.avatar.texture import masks_from_files

    cams = views["cameras"]
    masks = MaskSource(source, cams.names, len(views["keypoints"]))
    crops = views["crops"]
    if views["masks"] is not None:
        size = int(views["masks"].shape[-1])
    else:   # render at the subject's own pixel size, at most ``crop``: no finer than the masks' detail
        from cortexkit.tools.avatar.fit import subject_crop_size

        size = subject_crop_size(views["keypoints"], views["confidence"], crop)
    if crops is None or views["masks"] is None:   # crops at this size, around the keypoints
        crops = crops_from_keypoints(Observations(cams, views["keypoints"], views["confidence"],
                                                  views["keypoint_names"]), size)

    def read(f, c):
        mask = masks.read(f, c)
        if mask.shape != (int(cams.size[c, 1]), int(cams.size[c, 0])):
            raise CortexError(f"{masks.where(f, c)}: mask is {mask.shape[1]}x{mask.shape[0]}, camera "
                              f"{cams.names[c]} is {int(cams.size[c, 0])}x{int(cams.size[c, 1])}")
        return mask

    return {**views, "crops": crops, "masks": masks_from_files(read, crops, size)}


def read_mapping(path, option: str = ""):
    """A YAML mapping file of an option (``--keypoints``, ``--limits``), or a one-line error."""
    if path is None:
        return None
    from cortexkit.formats.report import read_yaml_file

    return read_yaml_file(path, f"{option} {path}".strip(), what="a mapping of joint or keypoint names")


def read_limits(path):
    """--limits YAML: joint -> [[lo x, y, z], [hi x, y, z]] radians, checked before any work."""
    import numpy as np

    data = read_mapping(path, "--limits")
    for name, box in (data or {}).items():
        try:
            array = np.asarray(box, dtype=float)
        except (TypeError, ValueError):
            array = None
        if array is None or array.shape != (2, 3) or not np.isfinite(array).all() \
                or (array[0] > array[1]).any():
            raise CortexError(f"--limits {path}: joint '{name}' needs [[lo x, y, z], [hi x, y, z]] "
                              f"finite radians with lo <= hi, got {box!r}")
    return data


def read_template(source: str, units: str, keypoints, limits, exclude, symmetry, read_artifact,
                  extremities: str | None = None, warn=None, extremities_given: bool = False):
    """A glTF skin or an avatar artifact -> (Template, Shape or None, clips, unit factor).
    ``extremities``: the temporal term's extremity rule for a glTF (default: the model's); an
    avatar keeps the marks it stores, and ``warn`` is told once when the options that only shape a
    glTF (``keypoints``, ``limits``, ``exclude``, ``symmetry``, ``extremities`` when
    ``extremities_given``) come with an avatar."""
    from cortexkit.formats.calibration import unit_factor

    if source.lower().endswith((".glb", ".gltf")):
        from cortexkit.formats.gltf import read_gltf
        from cortexkit.tools.avatar.model import template_from_mesh

        mesh = read_gltf(source)
        factor = unit_factor(units, "--template-units")
        tpl = template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                                 mesh.rest_world, unit_mm=factor,
                                 keypoints=read_mapping(keypoints, "--keypoints"),
                                 limits=read_limits(limits), exclude_offsets=exclude,
                                 symmetry=read_mapping(symmetry, "--symmetry"),
                                 **({} if extremities is None else {"extremities": extremities}))
        return tpl, None, mesh.animations, factor
    from cortexkit.tools.avatar.io import AVATAR, avatar_from_artifact

    tpl, shape, _ = avatar_from_artifact(read_artifact(source, AVATAR))
    given = [f"--{n}" for n, v in (("keypoints", keypoints), ("limits", limits), ("exclude-offsets", exclude),
                                    ("symmetry", symmetry), ("extremities", extremities_given or None)) if v is not None]
    if given and warn is not None:
        warn(f"{', '.join(given)} apply to a glTF template; the avatar {source} keeps the keypoint map, limits, "
             "offsets, symmetry and extremity marks it stores")
    return tpl, shape, {}, 1.0
