"""The fit-avatar artifact schemas, checked on read (see formats/schema.py): views whose cameras,
keypoints and names agree, an avatar whose template indices stay inside it, poses of finite
rotations for the avatar's joints.

Symbols: C cameras, F frames, K keypoints, V vertices, J joints, G bone-scale groups, P offsets.
"""

from __future__ import annotations

from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register


def _names(artifact, key: str, size: int, what: str) -> None:
    names = artifact.meta_json(key)
    if not isinstance(names, list) or len(names) != size:
        count = len(names) if isinstance(names, list) else "no list of"
        raise CortexError(f"{artifact.source}: metadata '{key}' names {count} {what}, the tensors hold {size}")


def _check_views(artifact, sizes) -> None:
    import numpy as np

    from cortexkit.formats.schema import _numpy

    intrinsics = _numpy(artifact.tensors["cameras.K"]).astype(np.float64)
    if len(intrinsics):
        focal = np.stack([intrinsics[:, 0, 0], intrinsics[:, 1, 1]], 1)
        bad = np.flatnonzero(~(np.abs(np.linalg.det(intrinsics)) > 0) | ~(focal > 0).all(1))
        if len(bad):
            raise CortexError(f"{artifact.source}: tensor 'cameras.K' of camera {int(bad[0])} is not a "
                              "camera matrix (positive focal lengths, invertible); damaged calibration")
    shape = tuple(artifact.tensors["keypoints"].shape)
    _names(artifact, "cortexkit.camera_names", shape[1], "cameras")
    _names(artifact, "cortexkit.keypoint_names", shape[2], "keypoints")


def _check_avatar(artifact, sizes) -> None:
    meta = artifact.meta_json("cortexkit.avatar")
    if not isinstance(meta, dict):
        raise CortexError(f"{artifact.source}: metadata 'cortexkit.avatar' is not a mapping (damaged)")
    t = artifact.tensors
    for key, tensor, what in (("joint_names", "template.joints", "joints"),
                              ("keypoint_names", "template.keypoints_joint", "keypoints"),
                              ("group_names", "shape.bone_scales", "bone-scale groups")):
        size = int(t[tensor].shape[0])
        if not isinstance(meta.get(key), list) or len(meta[key]) != size:
            raise CortexError(f"{artifact.source}: the avatar's {key} do not match tensor '{tensor}' "
                              f"({size} {what})")
    if meta.get("n_offsets") != int(t["shape.offsets"].shape[0]):
        raise CortexError(f"{artifact.source}: the avatar's n_offsets {meta.get('n_offsets')!r} does not "
                          f"match tensor 'shape.offsets' ({int(t['shape.offsets'].shape[0])} rows)")
    group, offset = t["template.bone_group"], t["template.offset_index"]
    if int(group.max()) >= int(t["shape.bone_scales"].shape[0]) or int(offset.max()) >= meta["n_offsets"]:
        raise CortexError(f"{artifact.source}: template.bone_group or template.offset_index points past "
                          "the shape's groups or offsets (damaged)")


def _check_poses(artifact, sizes) -> None:
    _names(artifact, "cortexkit.joint_names", int(artifact.tensors["rotations"].shape[1]), "joints")


VIEWS = Schema(
    "avatar-views", version=1,
    metadata=("cortexkit.camera_names", "cortexkit.keypoint_names"),
    json_metadata=("cortexkit.camera_names", "cortexkit.keypoint_names", "cortexkit.fps"),
    tensors=(Tensor("keypoints", "float", ("F", "C", "K", 2)),     # NaN where a keypoint was not detected
             Tensor("confidence", "float", ("F", "C", "K"), finite=True, min=0),
             Tensor("cameras.K", "float", ("C", 3, 3), finite=True),
             Tensor("cameras.dist", "float", ("C", None), finite=True),
             Tensor("cameras.rvec", "float", ("C", 3), finite=True),
             Tensor("cameras.tvec", "float", ("C", 3), finite=True),
             Tensor("cameras.size", "float", ("C", 2), finite=True, min=1),
             Tensor("crops", "float", finite=True, optional=True),
             Tensor("masks", "integer", optional=True),
             Tensor("truth.*", "float", optional=True)),
    check=_check_views)

AVATAR = Schema(
    "avatar", version=1,
    metadata=("cortexkit.avatar",), json_metadata=("cortexkit.avatar",),
    tensors=(Tensor("template.vertices", "float", ("V", 3), finite=True),
             Tensor("template.joints", "float", ("J", 3), finite=True),
             Tensor("template.faces", "int", (None, 3), min=0, below="V"),
             Tensor("template.edges", "int", (None, 2), min=0, below="V"),
             Tensor("template.weights", "float", ("V", "J"), finite=True, min=0),
             Tensor("template.parents", "int", ("J",), min=-1, below="J"),
             Tensor("template.frames", "float", ("J", 3, 3), finite=True),
             Tensor("template.free", "integer", ("J",)),
             Tensor("template.extremity", "integer", ("J",)),
             Tensor("template.extremity_twist", "float", ("J", 3), finite=True, optional=True),
             Tensor("template.limits", "float", ("J", 2, 3), no_nan=True),
             Tensor("template.bone_group", "int", ("J",), min=-1),
             Tensor("template.offset_index", "int", ("V",), min=-1),
             Tensor("template.offset_mirror", "float", ("V", 3), finite=True),
             Tensor("template.keypoints_joint", "float", ("K", "J"), finite=True),
             Tensor("template.keypoints_vertex", "float", ("K", "V"), finite=True),
             Tensor("template.source_index", "int", ("S",), min=0, below="V", optional=True),
             Tensor("template.source_faces", "int", (None, 3), min=0, below="S", optional=True),
             Tensor("mesh.vertices", "float", ("S", 3), finite=True, optional=True),
             Tensor("shape.scale", "float", (1,), finite=True, min=0, min_open=True),
             Tensor("shape.bone_scales", "float", ("G",), finite=True),
             Tensor("shape.offsets", "float", ("P", 3), finite=True),
             Tensor("shape.markers", "float", ("K", 3), finite=True, optional=True),
             Tensor("colors", "float", ("V", None), finite=True, optional=True)),
    check=_check_avatar)

POSES = Schema(
    "avatar-poses", version=1,
    metadata=("cortexkit.joint_names",),
    json_metadata=("cortexkit.joint_names", "cortexkit.fps", "cortexkit.seconds_per_frame"),
    tensors=(Tensor("rotations", "float", ("N", "J", 3), finite=True),
             Tensor("global_rot", "float", ("N", 3), finite=True),
             Tensor("global_t", "float", ("N", 3), finite=True),
             Tensor("keypoint_error", "float", ("N",), no_nan=True),
             Tensor("silhouette_error", "float", ("N",), no_nan=True),
             Tensor("cameras_used", "integer", ("N", None))),
    check=_check_poses)

register(VIEWS, AVATAR, POSES)
