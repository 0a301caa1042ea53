"""The floor of ``track``: plain triangulation of the same 2D keypoints, scored on a held-out camera.

Without 3D ground truth the honest split of the training data is by view. One camera (the one
with the most confident detections in the block) is held out of a block of at most
``BaselineConfig.frames`` consecutive frames; on the remaining cameras both methods run as a user
would run them, :func:`~cortexkit.tools.avatar.triangulate.triangulate_frames` (the robust DLT of
``triangulate``) and :func:`~cortexkit.tools.avatar.fit.track_sequence` (the same avatar and
options); both 3D keypoint sets are projected into the held-out camera and compared with that
camera's own detections (confidence above ``min_confidence``), over the detections both methods
place (triangulation leaves points seen by fewer than 2 remaining cameras unplaced).

Cost: one extra track of ``frames`` frames (about ``frames / F`` of the track itself) and one
triangulation (milliseconds).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from cortexkit.tools.avatar.camera import project
from cortexkit.tools.avatar.fit import FitConfig, Hooks, Observations, track_sequence
from cortexkit.tools.avatar.model import Shape, Template, forward


@dataclass
class BaselineConfig:
    frames: int = 20              # frames of the block refitted without the held-out camera
    min_confidence: float = 0.5   # held-out detections scored: confidence above this
    tolerance: float = 0.05       # the avatar loses when its median is > (1 + tolerance) x triangulation's


def held_out_camera(confidence: torch.Tensor, min_confidence: float) -> int:
    """confidence (F, C, K) -> the camera whose detections above ``min_confidence`` sum highest."""
    conf = torch.nan_to_num(confidence.double())
    return int(torch.where(conf > min_confidence, conf, torch.zeros_like(conf)).sum((0, 2)).argmax())


def frame_block(n_frames: int, size: int) -> tuple[int, int]:
    """The middle ``size`` frames of ``n_frames`` as (start, stop)."""
    size = min(size, n_frames)
    start = (n_frames - size) // 2
    return start, start + size


def without_camera(obs: Observations, camera: int) -> Observations:
    """obs with camera index ``camera`` removed from the cameras, keypoints, masks and crops."""
    keep = [c for c in range(len(obs.cameras)) if c != camera]
    return Observations(obs.cameras.subset(keep), obs.keypoints[:, keep], obs.confidence[:, keep],
                        obs.keypoint_names, None if obs.masks is None else obs.masks[:, keep],
                        None if obs.crops is None else obs.crops[:, keep])


def _pixel_errors(obs: Observations, camera: int, points: np.ndarray) -> np.ndarray:
    """points (F, K, 3) mm (NaN = not placed) -> (F, K) pixel distance to the detections of
    ``camera`` (NaN where either is missing)."""
    cam = obs.cameras.subset([camera])
    pts = torch.as_tensor(points, dtype=torch.float64)
    placed = torch.isfinite(pts).all(-1)
    proj = project(cam, torch.nan_to_num(pts))[0]                        # (F, K, 2)
    dist = (proj - obs.keypoints[:, camera].double()).norm(dim=-1)
    return torch.where(placed, dist, torch.full_like(dist, float("nan"))).numpy()


def held_out_check(template: Template, shape: Shape, obs: Observations, config: FitConfig,
                   check: BaselineConfig = BaselineConfig(), hooks: Hooks | None = None) -> dict:
    """The avatar's track and the robust triangulation, both fitted without one camera on a block
    of frames, scored against that camera's detections (image px).

    obs: the views (F, C, K) the track ran on; template: the avatar's template with obs's keypoints.
    Returns a record: ``camera``, ``frames`` [start, stop), ``detections`` (scored by both),
    ``avatar_px_median``/``_mean``, ``triangulation_px_median``/``_mean``, ``triangulation_coverage``
    (share of the held-out detections triangulation placed), ``seconds``, ``loses`` (the avatar's
    median is above triangulation's by more than ``tolerance``), the settings; or ``skipped`` with
    the reason when there is nothing to compare."""
    from cortexkit.tools.avatar.triangulate import triangulate_frames

    record = asdict(check)
    C = len(obs.cameras)
    if C < 3:
        return {**record, "skipped": f"{C} camera(s): triangulation needs 2 after holding one out"}
    start, stop = frame_block(obs.keypoints.shape[0], check.frames)
    block = obs.frames(torch.arange(start, stop))
    camera = held_out_camera(block.confidence, check.min_confidence)
    record.update(camera=obs.cameras.names[camera], frames=[start, stop])
    scored = (torch.isfinite(block.keypoints[:, camera]).all(-1)
              & (block.confidence[:, camera] > check.min_confidence)).numpy()
    if not scored.any():
        return {**record, "skipped": f"no detection above confidence {check.min_confidence:g} in frames "
                                     f"{start}-{stop - 1}"}
    began = time.perf_counter()
    rest = without_camera(block, camera)
    triangulated = triangulate_frames(rest.cameras, rest.keypoints.double().numpy(),
                                      rest.confidence.double().numpy()).points
    inner = None if hooks is None else Hooks(detail=lambda m: hooks.detail(f"baseline check: {m}"))
    tracked = track_sequence(template, shape, rest, config, hooks=inner)
    with torch.no_grad():
        _, _, kps = forward(template, shape, tracked.pose,
                            with_vertices=bool(template.keypoints_vertex.abs().sum() > 0))
    seconds = time.perf_counter() - began
    avatar = _pixel_errors(block, camera, kps.double().numpy())
    tri = _pixel_errors(block, camera, triangulated)
    both = scored & np.isfinite(avatar) & np.isfinite(tri)
    record.update(seconds=round(seconds, 3), detections=int(both.sum()),
                  triangulation_coverage=round(float(both.sum() / scored.sum()), 4))
    if not both.any():
        return {**record, "skipped": "triangulation placed none of the held-out camera's detections"}
    figures = {"avatar_px_median": float(np.median(avatar[both])), "avatar_px_mean": float(avatar[both].mean()),
               "triangulation_px_median": float(np.median(tri[both])),
               "triangulation_px_mean": float(tri[both].mean())}
    record.update({k: round(v, 4) for k, v in figures.items()})
    record["loses"] = bool(figures["avatar_px_median"]
                           > (1 + check.tolerance) * figures["triangulation_px_median"])
    return record


def messages(record: dict) -> tuple[str, str | None]:
    """The line a command prints for a :func:`held_out_check` record, and its warning (None when the
    avatar holds its own)."""
    if "skipped" in record:
        return f"baseline check skipped: {record['skipped']}", None
    r = record
    line = (f"baseline check (camera {r['camera']} held out, frames {r['frames'][0]}-{r['frames'][1] - 1}, "
            f"{r['detections']} detections, {r['seconds']:.1f} s; --baseline none skips it): held-out 2D "
            f"error median/mean avatar {r['avatar_px_median']:.2f}/{r['avatar_px_mean']:.2f} px vs "
            f"triangulate {r['triangulation_px_median']:.2f}/{r['triangulation_px_mean']:.2f} px")
    if not r["loses"]:
        return line, None
    return line, (f"triangulation of the same keypoints beats the avatar on held-out camera {r['camera']} "
                  f"(median {r['avatar_px_median']:.2f} vs {r['triangulation_px_median']:.2f} px, mean "
                  f"{r['avatar_px_mean']:.2f} vs {r['triangulation_px_mean']:.2f}): for 3D keypoints prefer "
                  "`fit-avatar triangulate`; the poses add joint rotations and the mesh, not accuracy")
