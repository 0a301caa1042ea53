"""The tool's artifacts as tensors + metadata (no files here: the command writes them).

``avatar-views`` (cameras, 2D keypoints, confidences, optional crops/masks, optional truth.*),
``avatar`` (template.* + shape.*), ``avatar-poses`` (rotations, global_rot, global_t, losses).
"""

from __future__ import annotations

import numpy as np
import torch

from cortexkit.tools.avatar.camera import Cameras
from cortexkit.tools.avatar.model import (Pose, Shape, Template, keypoint_markers, template_from_tensors,
                                          template_to_tensors)

VIEWS, AVATAR, POSES = "avatar-views", "avatar", "avatar-poses"


def cameras_from_arrays(cal: dict) -> Cameras:
    t = lambda k: torch.as_tensor(np.asarray(cal[k]), dtype=torch.float64)  # noqa: E731
    return Cameras(list(cal["names"]), t("K"), t("dist"), t("rvec"), t("tvec"), t("size"))


def cameras_to_arrays(cams: Cameras) -> dict:
    return {"names": list(cams.names), "K": cams.K.numpy(), "dist": cams.dist.numpy(),
            "rvec": cams.rvec.numpy(), "tvec": cams.tvec.numpy(), "size": cams.size.numpy()}


def views_to_tensors(cams: Cameras, keypoints, confidence, keypoint_names, *, crops=None, masks=None,
                     truth: dict | None = None, fps: float = 30.0):
    tensors = {"cameras.K": cams.K, "cameras.dist": cams.dist, "cameras.rvec": cams.rvec,
               "cameras.tvec": cams.tvec, "cameras.size": cams.size,
               "keypoints": torch.as_tensor(keypoints, dtype=torch.float32),
               "confidence": torch.as_tensor(confidence, dtype=torch.float32)}
    if crops is not None:
        tensors["crops"] = torch.as_tensor(crops, dtype=torch.float32)
    if masks is not None:
        tensors["masks"] = (torch.as_tensor(masks).clamp(0, 1) * 255).round().to(torch.uint8)
    for k, v in (truth or {}).items():
        tensors[f"truth.{k}"] = torch.as_tensor(v).float()
    meta = {"cortexkit.camera_names": list(cams.names), "cortexkit.keypoint_names": list(keypoint_names),
            "cortexkit.fps": fps}
    return tensors, meta


def views_from_detections(cams: Cameras, keypoint_names, detections, fps: float = 30.0) -> dict:
    """Per-camera 2D detections as read from files, [(xy (F_c, K, 2), score (F_c, K))] in the
    order of ``cams`` -> a views dict (frames cut to the shortest file; no crops, masks or truth)."""
    frames = min(len(xy) for xy, _ in detections)
    return {"cameras": cams, "keypoint_names": list(keypoint_names), "crops": None, "masks": None, "truth": {},
            "keypoints": torch.as_tensor(np.stack([xy[:frames] for xy, _ in detections], 1), dtype=torch.float32),
            "confidence": torch.as_tensor(np.stack([s[:frames] for _, s in detections], 1), dtype=torch.float32),
            "fps": fps}


def select_cameras(cal: dict, names: list[str]) -> Cameras:
    """Calibration arrays (formats.calibration.read_calibration) -> Cameras of ``names``, in that order."""
    index = [list(cal["names"]).index(n) for n in names]
    return cameras_from_arrays({k: (v if k == "names" else np.asarray(v)[index]) for k, v in cal.items()}
                               | {"names": list(names)})


def views_from_artifact(art) -> dict:
    t = art.tensors
    cams = Cameras(art.meta_json("cortexkit.camera_names"), t["cameras.K"].double(), t["cameras.dist"].double(),
                   t["cameras.rvec"].double(), t["cameras.tvec"].double(), t["cameras.size"].double())
    masks = t.get("masks")
    return {"cameras": cams, "keypoints": t["keypoints"].float(), "confidence": t["confidence"].float(),
            "keypoint_names": art.meta_json("cortexkit.keypoint_names"), "crops": t.get("crops"),
            "masks": None if masks is None else masks.float() / 255.0,
            "truth": {k[6:]: v for k, v in t.items() if k.startswith("truth.")},
            "fps": float(art.meta_json("cortexkit.fps", 30.0))}


def avatar_to_tensors(template: Template, shape: Shape, colors=None):
    tensors, meta = template_to_tensors(template)
    tensors.update({"shape.scale": shape.scale.detach().reshape(1).float(),
                    "shape.bone_scales": shape.bone_scales.detach().float(),
                    "shape.offsets": shape.offsets.detach().float()})
    markers = keypoint_markers(template, shape)
    if markers is not None:                                       # (K, 3) mm, rows of the keypoints
        tensors["shape.markers"] = markers.detach().float()
    from cortexkit.tools.avatar.export import rest_mesh

    tensors["mesh.vertices"] = rest_mesh(template, shape)          # (V_src, 3) the input's order
    if colors is not None:
        tensors["colors"] = torch.as_tensor(colors, dtype=torch.float32)
    return tensors, {"cortexkit.avatar": meta}


def avatar_from_artifact(art):
    meta = art.meta_json("cortexkit.avatar")
    template = template_from_tensors(art.tensors, meta)
    t = art.tensors
    markers = t.get("shape.markers")          # optional: avatars written before the markers have none
    shape = Shape(t["shape.scale"].reshape(()).float(), t["shape.bone_scales"].float(), t["shape.offsets"].float(),
                  None if markers is None else markers.float(),
                  None if markers is None else list(template.keypoint_names))
    return template, shape, t.get("colors")


def poses_to_tensors(pose: Pose, keypoint_error, silhouette_error, cameras_used, seconds_per_frame: float,
                     joint_names, fps: float = 30.0):
    tensors = {"rotations": pose.rotations.detach().float(), "global_rot": pose.global_rot.detach().float(),
               "global_t": pose.global_t.detach().float(), "keypoint_error": keypoint_error.float(),
               "silhouette_error": silhouette_error.float(), "cameras_used": cameras_used.to(torch.uint8)}
    return tensors, {"cortexkit.joint_names": list(joint_names), "cortexkit.seconds_per_frame": seconds_per_frame,
                     "cortexkit.fps": fps}


def poses_from_artifact(art) -> Pose:
    t = art.tensors
    return Pose(t["rotations"].float(), t["global_rot"].float(), t["global_t"].float())
