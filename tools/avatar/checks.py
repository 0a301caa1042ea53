"""Checks of 2D detections before any work (one-line errors, named warnings)."""

from __future__ import annotations

import torch


def check_views(keypoints: torch.Tensor, confidence: torch.Tensor, camera_names: list[str]) -> list[str]:
    """keypoints (F, C, K, 2), confidence (F, C, K). Raises ValueError on unusable values; returns
    warnings (frames with fewer than 2 usable views of every keypoint)."""
    if keypoints.ndim != 4 or keypoints.shape[-1] != 2 or confidence.shape != keypoints.shape[:3]:
        raise ValueError(f"keypoints of shape {list(keypoints.shape)} and confidence {list(confidence.shape)}: "
                         "expected (frames, cameras, keypoints, 2) and (frames, cameras, keypoints)")
    if keypoints.shape[0] == 0:
        raise ValueError("no frames in the 2D keypoints")
    if len(camera_names) != keypoints.shape[1]:
        raise ValueError(f"{keypoints.shape[1]} cameras of keypoints, {len(camera_names)} camera names")
    if len(camera_names) < 2:
        raise ValueError(f"only {len(camera_names)} camera: triangulation and fitting need at least 2 views")
    if torch.isinf(keypoints).any():
        raise ValueError("infinite 2D keypoint coordinates (use NaN for undetected points)")
    half = torch.isnan(keypoints).any(-1) & ~torch.isnan(keypoints).all(-1)
    if half.any():
        f, c, k = (int(x) for x in half.nonzero()[0])
        raise ValueError(f"NaN detection: frame {f}, camera {camera_names[c]}, keypoint {k} has one "
                         "coordinate NaN and the other not")
    seen = torch.isfinite(keypoints).all(-1)
    bad = seen & ~torch.isfinite(confidence)
    if bad.any():
        f, c, k = (int(x) for x in bad.nonzero()[0])
        raise ValueError(f"NaN confidence for a detected point: frame {f}, camera {camera_names[c]}, keypoint {k}")
    if ((confidence < 0) & seen).any():
        raise ValueError("negative detection confidence")
    usable = (seen & (confidence > 0)).sum(1)       # (F, K) views per keypoint
    poor = (usable.max(1).values < 2).nonzero().reshape(-1).tolist()
    warnings = []
    if len(poor) == keypoints.shape[0]:
        raise ValueError("no frame has a keypoint seen in 2 or more views: nothing can be triangulated")
    if poor:
        shown = ", ".join(map(str, poor[:8])) + (" ..." if len(poor) > 8 else "")
        warnings.append(f"{len(poor)} frame(s) with < 2 usable views of any keypoint ({shown}): "
                        "they are carried by the temporal term only")
    return warnings
