"""BigMaQ's objective and stages: the subject avatar over keyframes, then tracking per frame.

Objective per frame (BigMaQ ``BaseOpt`` / ``losses.py``), in crop pixels:

* keypoints  L_kp[c] = Σ_k w_k conf_ck ‖π_c(X_k) − x_ck‖ / Σ_k w_k conf_ck  (mean distance, not squared);
* silhouette L_sil[c] = mean_pixels (α_c − M_c)², switched on for camera c only while
  L_kp[c] < τ (the gate); both averaged over the frame's selected cameras;
* joint limits Σ (relu(lo − θ) + relu(θ − hi))² on the axis-angle components;
* bone-scale band Σ (relu(0.85 − b) + relu(b − 1/0.85))², global scale band [0.5, 2] × its init;
* keypoint markers (per-keypoint offsets, :class:`Shape`): ``keypoint_offsets`` × B × mean_k ‖m_k‖²
  with m in body lengths (B frames, as the keypoint term is summed over frames, so the weight is per
  frame and free of units and subject size);
* offsets: uniform Laplacian Σ_v ‖Δ_v − mean_{u∼v} Δ_u‖² and edge term Σ_(u,v) ‖Δ_u − Δ_v‖²
  (in body lengths);
* temporal: mean ‖ω‖² of every joint's angular velocity (× ``extremity_factor`` on the joints
  ``template.extremity`` marks: each limb's last free joint by default; for the joints
  ``template.extremity_twist`` marks, the mid-limb wrists and ankles, ‖ω‖² + (``extremity_twist_factor``
  − 1)(ω · R a)², the twist about the bone a to the child charged, the swing not; RESULTS section 22),
  of the global rotation, and Σ ‖Δt‖² (body lengths); with ``temporal_order`` 2 (the default)
  the same of their frame-to-frame changes (acceleration), so steady motion costs nothing.

Each frame's terms are summed once per step (BigMaQ accumulates a minibatch's image terms
B − i times for frame i; we do not). Stages use Adam with a MultiStepLR(0.85, 0.94 of the
steps, × 0.25) as Time.json's [300, 330] of 350; one step covers every frame of the batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from cortexkit.tools.avatar.camera import Cameras, project
from cortexkit.tools.avatar.model import Pose, Shape, Template, forward
from cortexkit.tools.avatar.raster import soft_silhouette
from cortexkit.tools.avatar.rotation import angular_velocity, matrix_to_axis_angle, rodrigues


@dataclass
class Observations:
    """keypoints (F, C, K, 2) pixels (NaN = missing), confidence (F, C, K), masks (F, C, S, S)
    crop coverage or None, crops (F, C, 3) (x0, y0, crop pixels per image pixel)."""

    cameras: Cameras
    keypoints: torch.Tensor
    confidence: torch.Tensor
    keypoint_names: list[str]
    masks: torch.Tensor | None = None
    crops: torch.Tensor | None = None

    def frames(self, index) -> "Observations":
        index = torch.as_tensor(index)
        return Observations(self.cameras, self.keypoints[index], self.confidence[index],
                            self.keypoint_names,
                            None if self.masks is None else self.masks[index],
                            None if self.crops is None else self.crops[index])


MASKS_IN = ("bones,mesh", "mesh", "mesh-bones", "spanned,mesh", "auto")   # FitConfig.masks_in's values
AUTO_MASKS_IN = ("bones,mesh", "mesh-bones")   # what masks_in "auto" chooses between (RESULTS section 25)
AUTO_MEASURES = ("keypoints", "iou")           # how it scores them on the held-out camera


@dataclass
class FitConfig:
    keypoint_weight: float = 1.0
    silhouette_weight: float = 50.0
    joint_limit_weight: float = 3.0
    bone_weight: float = 10.0
    laplacian_weight: float = 1000.0
    edge_weight: float = 100.0
    temporal_weight: float = 1.0
    extremity_factor: float = 100.0
    # the factor on the twist (about the bone to the child) of the joints the template's
    # ``extremity_twist`` marks (``limb-ends+twist``: mid-limb wrists and ankles; RESULTS section 22)
    extremity_twist_factor: float = 100.0
    translation_weight: float = 10.0
    gate: float = 2.0               # crop pixels: silhouettes count once keypoints fit within this
    crop: int = 64                  # crop size (pixels) of the keypoint scale and the silhouettes
    sigma: float = 0.1              # soft rasteriser blur, squared crop pixels (PyTorch3D 1e-4 NDC² at 100 px ≈ 0.25)
    # The blur's default is the shape command's default ``--sigma mesh-auto`` (RESULTS section 16): the bones
    # stage at ``sigma``, the mesh stage at the calibrated blur (sigma_bias 0.03, sigma_bias_bones false). These
    # fields are its one source: the command's modes are defined as changes to them (cli sigma_options).
    # sigma_bias 0 gives ``sigma`` in every stage, the default before 2026-12-07.
    sigma_bias: float = 0.03        # > 0: the blur follows the subject's pixel size: the largest sigma (<= sigma)
                                    # at which the body fitted to the keypoints renders at most this much
                                    # larger than the masks (:func:`calibrated_sigma`; study,
                                    # benchmarks/fit_avatar RESULTS section 14)
    sigma_bias_mesh: bool = True    # with sigma_bias: the calibrated blur in the mesh stage too (False: the
                                    # bones stage only, the mesh stage's offsets keep ``sigma``'s reach)
    sigma_bias_bones: bool = False  # with sigma_bias: the calibrated blur in the bones stage too (``--sigma auto``;
                                    # False: the bones stage keeps ``sigma``; calibrated on the keypoint fit all the same)
    sigma_mesh: float = 0.0         # > 0: the mesh stage's blur instead of ``sigma`` (a calibrated one wins)
    sigma_anneal: bool = False      # the mesh stage's blur falls geometrically from ``sigma`` (reach) to its
                                    # own (the calibrated one, or sigma_mesh; accuracy) over its steps
                                    # (:func:`sigma_schedule`; RESULTS section 16)
    silhouettes: bool = True
    lr: float = 0.03
    shape_steps: tuple = (100, 150, 150, 150)   # global, pose, bones, mesh
    track_steps: int = 240          # Adam steps per window (Fox mean MPJPE 3.90 -> 3.28 mm from 120, benchmarks/fit_avatar RESULTS 4)
    window: int = 20
    overlap: int = 5
    cameras: int = 0                # per-frame camera subset (0 = all; BigMaQ's waterfall keeps 6)
    temporal_order: int = 2         # 1: angular velocity (BigMaQ), 2: angular acceleration (Fox Walk
                                    # 2.97 -> 2.67 mm, Run 5.47 -> 4.82 mm at weight 1, 16 cameras)
    silhouette_cameras: int = 6     # cameras per frame that render silhouettes (0 = all; BigMaQ: 6)
    track_silhouette_cameras: int = 4  # the same budget while tracking (0 = all; BigMaQ: 6; 4 by RESULTS section 10)
    silhouette_grad_all: bool = False  # rasteriser backward through autograd over every (pixel, face) pair
                                       # (the reference path; default: only the pairs with a gradient
                                       # that counts, benchmarks/fit_avatar RESULTS section 9)
    silhouette_windows: bool = True  # rasteriser forward window by window (section 15, same coverage to
                                       # ~1e-7, 1.7-2 x faster); False: pair by pair, the path before 2026-12-07
    silhouette_deferred: bool = False  # windows: the backward's pairs picked once the coverage is complete,
                                       # written in place (the same α bit for bit, gradient to float rounding;
                                       # `track --masks` 0.87 x CPU, masked shape 1.00-1.01 x: not adopted by
                                       # RESULTS section 17's rule, an option); False: section 15's selection.
                                       # Governs the shape stages only; tracking follows the next field
    track_silhouette_deferred: bool = True  # the same choice while tracking (as track_silhouette_cameras is
                                       # silhouette_cameras' while tracking): deferred, adopted for `track` by
                                       # RESULTS section 18's rule (CPU 0.86-0.88 x on the quadruped and hexapod,
                                       # 0.90 x on the held-out primate; MPJPE within 0.6 %)
    outlier_px: float = 10.0        # image px: detections farther than this from the fit are dropped
                                    # half-way (0 = keep all; robust 2D residuals)
    mesh_bones: bool = False        # also refine scale and bone scales in the mesh stage (with silhouettes)
    # where the silhouettes act (one of MASKS_IN; ``shape --masks-in`` offers the first two; RESULTS sections 19, 24):
    # "bones,mesh" the bones and the mesh stages (as bones_silhouettes says); "mesh" the mesh stage only (the
    # bones stage fits the keypoints only: bones_silhouettes false); "mesh-bones" the mesh stage only, with the
    # global scale and bone scales free there beside the offsets (with their keypoint terms and band prior),
    # so offsets and bones meet the silhouettes together; "spanned,mesh" the bones stage too, but its
    # silhouette term moves only the bone groups a keypoint pair spans (the others get the keypoints' pull only)
    masks_in: str = "bones,mesh"
    # masks_in "auto" (RESULTS section 25): both AUTO_MASKS_IN fitted without one camera (the one the
    # track's baseline check holds out: most confident detections), scored on that camera, the better kept
    auto_measure: str = "keypoints"  # "keypoints": the held-out camera's keypoint reprojection median px (lower
                                    # wins; section 25's first look: it ranked the truth right where the IoU
                                    # did not); "iou": its silhouette IoU (higher wins); ties: the first
    auto_refit: bool = False        # True: refit the chosen one on every camera; False: keep its fit
    bones_silhouettes: bool = True  # silhouettes (gated) already in the bones stage: masks shape the bones
    bones_fixed_scale: bool = False  # with silhouettes in the bones stage, keep the global scale of the
                                     # pose stage there (study, benchmarks/fit_avatar RESULTS section 5)
    markers_in_bones: bool = True     # markers free in the bones stage as well as the mesh stage
    bones_split: bool = False       # with masks: the bones stage fits keypoints only, then a 'split' stage
                                    # (as many steps) adds silhouettes with only the bone groups no keypoint
                                    # pair spans free (global scale and spanned bones kept; RESULTS section 11)
    bones_offsets: bool = False     # vertex offsets free in the bones stage too (study, RESULTS section 11)
    keypoint_offsets: float = 0.0     # L2 weight of the per-keypoint markers (0 = off; the command's default
                                      # 'auto' resolves it with markers.auto_keypoint_offsets, RESULTS section 7)
    keypoint_weights: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# initialisation

def procrustes(source: np.ndarray, target: np.ndarray, scale: bool = True):
    """Similarity (s, R, t) minimising ‖s R source + t − target‖ over rows (Umeyama).
    source, target (K, 3) -> (s, R (3, 3), t (3,))."""
    mu_s, mu_t = source.mean(0), target.mean(0)
    a, b = source - mu_s, target - mu_t
    u, d, vt = np.linalg.svd(b.T @ a)
    sign = np.diag([1.0, 1.0, np.sign(np.linalg.det(u @ vt))])
    R = u @ sign @ vt
    s = float((d * np.diag(sign)).sum() / (a ** 2).sum()) if scale else 1.0
    return s, R, mu_t - s * R @ mu_s


def rest_keypoints(template: Template, shape: Shape) -> np.ndarray:
    """(K, 3) keypoints of the template at zero pose, identity global transform."""
    with torch.no_grad():
        _, _, kp = forward(template, shape, Pose.zeros(1, template), with_vertices=False)
    return kp[0].double().numpy()


def init_global(template: Template, shape: Shape, points3d: np.ndarray, *, fit_scale: bool):
    """Per-frame Procrustes of the rest keypoints onto triangulated ones.
    points3d (F, K, 3) with NaN -> (scales (F,), rotations (F, 3) axis-angle, translations (F, 3))."""
    rest = rest_keypoints(template, shape)
    scales, rots, trans = [], [], []
    for f, pts in enumerate(points3d):
        ok = np.isfinite(pts).all(1)
        if ok.sum() < 3:
            scales.append(np.nan)
            rots.append(np.full(3, np.nan))
            trans.append(np.full(3, np.nan))
            continue
        s, R, t = procrustes(rest[ok], pts[ok], scale=fit_scale)
        scales.append(s)
        rots.append(matrix_to_axis_angle(torch.as_tensor(R)).numpy())
        trans.append(t)
    return np.array(scales), np.array(rots), np.array(trans)


def fill_missing(values: np.ndarray) -> np.ndarray:
    """(F, ...) with NaN rows -> rows copied from the nearest finite frame."""
    ok = np.isfinite(values.reshape(len(values), -1)).all(1)
    if not ok.any():
        raise ValueError("no frame has 3 or more triangulated keypoints: cannot place the template")
    idx = np.nonzero(ok)[0]
    nearest = idx[np.abs(np.arange(len(values))[:, None] - idx[None]).argmin(1)]
    return values[nearest]


def body_length(template: Template) -> float:
    return float(torch.linalg.norm(template.vertices.max(0).values - template.vertices.min(0).values))


def crops_from_keypoints(obs: Observations, size: int, margin: float = 0.15) -> torch.Tensor:
    """(F, C, 3) square crops around each view's detected keypoints (x0, y0, scale)."""
    kp = obs.keypoints
    valid = torch.isfinite(kp).all(-1) & (obs.confidence > 0)
    big = torch.finfo(kp.dtype).max
    lo = torch.where(valid[..., None], kp, torch.full_like(kp, big)).min(2).values
    hi = torch.where(valid[..., None], kp, torch.full_like(kp, -big)).max(2).values
    none = ~valid.any(2)
    lo = torch.where(none[..., None], torch.zeros_like(lo), lo)
    hi = torch.where(none[..., None], obs.cameras.size.to(kp.dtype).expand_as(hi), hi)
    side = (hi - lo).max(-1).values * (1 + 2 * margin) + 1.0
    centre = (hi + lo) / 2
    return torch.stack([centre[..., 0] - side / 2, centre[..., 1] - side / 2, size / side], -1)


def subject_crop_size(keypoints: torch.Tensor, confidence: torch.Tensor, largest: int = 64,
                      smallest: int = 16) -> int:
    """The silhouette crop size (px) for a subject: the median side of its detected keypoints'
    box in the images (F, C, K, 2), clipped to [smallest, largest] and rounded to 8 px, so a
    subject 30 px tall is rendered at 32 px, not 64 (the cost follows the crop's area)."""
    valid = torch.isfinite(keypoints).all(-1) & (confidence > 0)
    big = torch.finfo(keypoints.dtype).max
    lo = torch.where(valid[..., None], keypoints, torch.full_like(keypoints, big)).min(2).values
    hi = torch.where(valid[..., None], keypoints, torch.full_like(keypoints, -big)).max(2).values
    ok = valid.sum(-1) >= 2
    if not ok.any():
        return largest
    side = float((hi - lo).max(-1).values[ok].median()) * 1.3
    return int(min(largest, max(smallest, 8 * round(side / 8))))


def select_cameras(confidence: torch.Tensor, n: int, min_keypoints: int = 3) -> torch.Tensor:
    """BigMaQ's waterfall camera subset: (F, C, K) confidences -> (F, C) bool with ≤ n cameras per
    frame; cameras sorted by detection count, the previous frame's cameras kept while still valid,
    the rest refilled from the sorted list."""
    detected = (confidence > 0).sum(-1)          # (F, C)
    F, C = detected.shape
    if n <= 0 or n >= C:
        return detected >= 1
    order = torch.argsort(detected.sum(0), descending=True, stable=True).tolist()
    out = torch.zeros(F, C, dtype=torch.bool)
    previous: list[int] = []
    for f in range(F):
        valid = [c for c in order if detected[f, c] >= min_keypoints]
        keep = [c for c in previous if c in valid][:n]
        for c in valid:
            if len(keep) >= n:
                break
            if c not in keep:
                keep.append(c)
        out[f, keep] = True
        previous = keep
    return out


def crop_pixels(obs: Observations, verts: torch.Tensor, b_idx: torch.Tensor, c_idx: torch.Tensor):
    """Vertices (B, V, 3) projected into the silhouette crops of the (frame, camera) pairs
    (b_idx, c_idx) -> (N, V, 2) crop pixels."""
    vproj = project(obs.cameras, verts).permute(1, 0, 2, 3)[b_idx, c_idx]
    crop = obs.crops[b_idx, c_idx].to(vproj.dtype)
    return (vproj - crop[:, None, :2]) * crop[:, None, 2:]


def _area_ratio(pix: torch.Tensor, faces: torch.Tensor, size: int, sigma: float, masks: torch.Tensor,
                chunk: int = 16) -> float:
    """Soft-rendered area of (N, V, 2) crop-pixel meshes over the area of masks (N, size, size)."""
    with torch.no_grad():
        area = sum(float(soft_silhouette(pix[i:i + chunk], faces, size, sigma).sum())
                   for i in range(0, len(pix), chunk))
    return area / max(float(masks.sum()), 1e-9)


def sigma_schedule(start: float, end: float, steps: int) -> list[float]:
    """The blur per Adam step of an annealed stage: geometric from ``start`` at the first step to
    ``end`` at the last (coarse to fine, as soft rasterisers anneal their blur), monotone;
    one step gets ``end``."""
    if steps <= 0:
        return []
    if steps == 1 or start == end:
        return [float(end)] * steps
    ratio = math.log(end / start)
    out = [start * math.exp(ratio * i / (steps - 1)) for i in range(steps)]
    out[0], out[-1] = float(start), float(end)
    return out


def calibrated_sigma(template: Template, verts: torch.Tensor, obs: Observations, use: torch.Tensor,
                     largest: float, tolerance: float, smallest: float = 0.005, iterations: int = 6):
    """The blur that follows the subject's pixel size. The soft rasteriser renders thin parts too
    large (the front and back faces both add their blur at an outline: +23 % area for the hexapod's
    1-2 px legs at sigma 0.1, +4.5 % for the Fox at 64 px; benchmarks/fit_avatar RESULTS section
    13), and a silhouette term that sees its body too large shrinks it. So the body as the keypoints
    have fitted it, verts (B, V, 3), is rendered in the views ``use`` (B, C) the silhouettes will use
    and its soft area compared with the masks' there; sigma is the largest in [smallest, largest]
    whose area ratio is <= 1 + tolerance (bisection in log sigma; the ratio grows with sigma), so
    the silhouettes start without a net pull on the size the keypoints gave.
    Returns (sigma, ratio at sigma, ratio at largest)."""
    b_idx, c_idx = use.nonzero(as_tuple=True)
    if len(b_idx) == 0:
        return largest, float("nan"), float("nan")
    size = obs.masks.shape[-1]
    pix = crop_pixels(obs, verts.detach(), b_idx, c_idx)
    masks = obs.masks[b_idx, c_idx].to(pix.dtype)
    top = _area_ratio(pix, template.faces, size, largest, masks)
    if top <= 1 + tolerance:
        return largest, top, top
    low = _area_ratio(pix, template.faces, size, smallest, masks)
    if low > 1 + tolerance:
        return smallest, low, top
    lo, hi, ratio = math.log(smallest), math.log(largest), low
    for _ in range(iterations):
        mid = (lo + hi) / 2
        r = _area_ratio(pix, template.faces, size, math.exp(mid), masks)
        if r <= 1 + tolerance:
            lo, ratio = mid, r
        else:
            hi = mid
    return math.exp(lo), ratio, top


# ---------------------------------------------------------------------------------------------
# objective

def _laplacian_parts(template: Template):
    e = template.edges
    deg = torch.zeros(len(template.vertices)).index_add(0, e.reshape(-1), torch.ones(e.numel()))
    return e, deg.clamp(min=1)


def image_terms(template: Template, verts, keypoints, obs: Observations, use: torch.Tensor,
                config: FitConfig, silhouettes: bool, kp_weights: torch.Tensor):
    """Per-frame keypoint and silhouette terms. verts (B, V, 3), keypoints (B, K, 3),
    use (B, C) selected cameras -> (L_kp (B,), L_sil (B,), per-camera kp px (B, C))."""
    cams = obs.cameras
    proj = project(cams, keypoints).permute(1, 0, 2, 3)          # (B, C, K, 2)
    target = obs.keypoints.to(proj.dtype)
    conf = obs.confidence.to(proj.dtype) * kp_weights
    valid = torch.isfinite(target).all(-1) & (conf > 0)
    conf = torch.where(valid, conf, torch.zeros_like(conf))
    diff = torch.where(valid[..., None], proj - torch.nan_to_num(target), torch.zeros_like(proj))
    dist = (diff.pow(2).sum(-1) + 1e-9).sqrt()
    scale = obs.crops[..., 2].to(proj.dtype)                     # crop px per image px
    kp_cam = (conf * dist).sum(-1) / conf.sum(-1).clamp(min=1e-9) * scale   # (B, C)
    active = use & valid.any(-1)
    n_active = active.sum(1).clamp(min=1)
    l_kp = torch.where(active, kp_cam, torch.zeros_like(kp_cam)).sum(1) / n_active
    l_sil = torch.zeros_like(l_kp)
    if silhouettes and obs.masks is not None and verts is not None:
        gated = active & (kp_cam.detach() < config.gate)
        if config.silhouette_cameras > 0:   # the rendering budget: the best-covered cameras only
            gated &= select_cameras(obs.confidence, config.silhouette_cameras)
        if gated.any():
            b_idx, c_idx = gated.nonzero(as_tuple=True)
            pix = crop_pixels(obs, verts, b_idx, c_idx)
            alpha = soft_silhouette(pix, template.faces, obs.masks.shape[-1], config.sigma,
                                    grad_all=config.silhouette_grad_all, windows=config.silhouette_windows,
                                    deferred=config.silhouette_deferred)
            err = (alpha - obs.masks[b_idx, c_idx].to(alpha.dtype)).pow(2).mean((1, 2))
            l_sil = l_sil.index_add(0, b_idx, err) / n_active
    return l_kp, l_sil, kp_cam


def prior_terms(template: Template, shape: Shape, pose: Pose, config: FitConfig, length: float,
                scale0: float, temporal: bool):
    """(per-frame joint limits (B,), shape terms (), temporal ())."""
    free = template.free[None, :, None]
    th = pose.rotations
    lo, hi = template.limits[None, :, 0].to(th.dtype), template.limits[None, :, 1].to(th.dtype)
    limit = ((torch.relu(lo - th) + torch.relu(th - hi)) * free).pow(2).sum((1, 2))
    b = shape.bone_scales
    bone = (torch.relu(0.85 - b) + torch.relu(b - 1 / 0.85)).pow(2).sum()
    rel = shape.scale / scale0
    bone = bone + (torch.relu(0.5 - rel) + torch.relu(rel - 2.0)).pow(2)
    smooth = torch.zeros((), dtype=th.dtype)
    if shape.offsets.numel():
        from cortexkit.tools.avatar.model import vertex_offsets

        d = vertex_offsets(template, shape.offsets) / length
        e, deg = _laplacian_parts(template)
        mean_n = torch.zeros_like(d).index_add(0, e[:, 0], d[e[:, 1]]).index_add(0, e[:, 1], d[e[:, 0]])
        lap = (d - mean_n / deg[:, None]).pow(2).sum()
        edge = (d[e[:, 0]] - d[e[:, 1]]).pow(2).sum()
        smooth = config.laplacian_weight * lap + config.edge_weight * edge
    if shape.markers is not None and config.keypoint_offsets > 0 and shape.markers.requires_grad:
        smooth = smooth + config.keypoint_offsets * th.shape[0] * (shape.markers / length).pow(2).sum(-1).mean()
    temp = torch.zeros((), dtype=th.dtype)
    if temporal and th.shape[0] > 1:
        w = torch.where(template.extremity, config.extremity_factor, 1.0).to(th.dtype)
        omega = angular_velocity(th * free)                          # (B-1, J, 3)
        omega_g = angular_velocity(pose.global_rot)
        dt = (pose.global_t[1:] - pose.global_t[:-1]) / length
        if config.temporal_order == 2 and th.shape[0] > 2:
            # penalise changes of velocity (acceleration), not velocity: steady motion is free, so
            # the weight does not depend on how fast the subject moves
            omega, omega_g, dt = omega[1:] - omega[:-1], omega_g[1:] - omega_g[:-1], dt[1:] - dt[:-1]
        twist = template.extremity_twist
        if twist is not None and config.extremity_twist_factor != 1.0:
            # the component along the joint's bone to its child, rotated with the joint (ω_s . R a:
            # the twist rate about the bone), at the pose each difference starts from (order 2: the
            # middle frame); its square gets the factor, the swing keeps weight 1
            axis = (rodrigues(th * free) @ twist.to(th.dtype)[None, :, :, None])[..., 0]   # (B, J, 3)
            axis = axis[1:-1] if config.temporal_order == 2 and th.shape[0] > 2 else axis[:-1]
            along = (omega * axis).sum(-1).pow(2)                         # (B-2 or B-1, J)
            omega = omega.pow(2).sum(-1) + (config.extremity_twist_factor - 1.0) * along
        else:
            omega = omega.pow(2).sum(-1)
        temp = (omega * w * template.free).sum(1).mean() / template.free.sum().clamp(min=1) + omega_g.pow(2).sum(-1).mean()
        temp = config.temporal_weight * temp + config.translation_weight * dt.pow(2).sum(-1).mean()
    return limit, bone, smooth, temp


# ---------------------------------------------------------------------------------------------
# the optimisation loop

@dataclass
class Params:
    """Free variables of a stage: what is optimised and how it maps to Shape and Pose."""

    rot: torch.Tensor            # (B, J, 3)
    grot: torch.Tensor           # (B, 3)
    dt: torch.Tensor             # (B, 3) translation change in body lengths
    log_scale: torch.Tensor      # ()
    log_bones: torch.Tensor      # (G,)
    offsets: torch.Tensor        # (P, 3) in body lengths
    t0: torch.Tensor
    scale0: float
    length: float
    markers: torch.Tensor | None = None      # (K, 3) in body lengths, rows of marker_names
    marker_names: list[str] | None = None

    def shape(self) -> Shape:
        markers = None if self.markers is None else self.markers * self.length
        return Shape(self.scale0 * self.log_scale.exp(), self.log_bones.exp(), self.offsets * self.length,
                     markers, self.marker_names)

    def pose(self) -> Pose:
        return Pose(self.rot, self.grot, self.t0 + self.dt * self.length)


def _optimise(template, params: Params, obs: Observations, use: torch.Tensor, config: FitConfig,
              train: list[str], steps: int, silhouettes: bool, temporal: bool,
              kp_weights: torch.Tensor, on_step: Callable | None = None, frozen_bones: torch.Tensor | None = None,
              sigmas: list[float] | None = None, sil_frozen_bones: torch.Tensor | None = None):
    """Adam on ``train`` for ``steps`` steps; on_step(step, l_kp (B,), l_sil (B,)) after each;
    ``frozen_bones`` (G,) bool: bone groups whose log scale gets no update; ``sigmas`` (steps,): the
    rasteriser blur per step (an annealed stage; None: ``config.sigma`` throughout);
    ``sil_frozen_bones`` (G,) bool: bone groups the silhouette term does not move (the body it renders
    has their scales detached; the keypoint terms and priors still move them).
    Returns the last (l_kp, l_sil, kp_cam) (detached)."""
    tensors = {n: getattr(params, n) for n in train}
    for t in tensors.values():
        t.requires_grad_(True)
    lrs = {"rot": config.lr, "grot": config.lr, "dt": config.lr * 0.5, "log_scale": config.lr,
           "log_bones": config.lr, "offsets": config.lr * 0.05, "markers": config.lr * 0.05}
    opt = torch.optim.Adam([{"params": [tensors[n]], "lr": lrs[n]} for n in train])
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [int(0.85 * steps), int(0.94 * steps)], 0.25)
    need_verts = silhouettes or bool(template.keypoints_vertex.abs().sum() > 0)
    last = None
    for step in range(steps):
        opt.zero_grad()
        shape, pose = params.shape(), params.pose()
        verts, _, kps = forward(template, shape, pose, with_vertices=need_verts)
        if silhouettes and sil_frozen_bones is not None and bool(sil_frozen_bones.any()):
            held = torch.where(sil_frozen_bones, shape.bone_scales.detach(), shape.bone_scales)
            verts, _, _ = forward(template, Shape(shape.scale, held, shape.offsets, shape.markers, shape.marker_names),
                                  pose, with_vertices=True)
        step_config = config if sigmas is None else replace(config, sigma=sigmas[step])
        l_kp, l_sil, kp_cam = image_terms(template, verts, kps, obs, use, step_config, silhouettes, kp_weights)
        limit, bone, smooth, temp = prior_terms(template, shape, pose, config, params.length,
                                                params.scale0, temporal)
        loss = (config.keypoint_weight * l_kp + config.silhouette_weight * l_sil
                + config.joint_limit_weight * limit).sum() + config.bone_weight * bone + smooth + temp * len(l_kp)
        loss.backward()
        if frozen_bones is not None and params.log_bones.grad is not None:
            params.log_bones.grad[frozen_bones] = 0.0
        opt.step()
        sched.step()
        last = (l_kp.detach(), l_sil.detach(), kp_cam.detach())
        if on_step is not None:
            on_step(step, last[0], last[1])
    for t in tensors.values():
        t.requires_grad_(False)
    return last


def reject_outliers(obs: Observations, points3d: np.ndarray, threshold: float) -> Observations:
    """Robust 2D residuals, decided by geometry rather than by the fit: a detection whose distance
    to the projection of the robustly triangulated point (points3d (F, K, 3), NaN where fewer than
    2 views agree) exceeds ``threshold`` image px gets confidence 0. A fit that is still wrong in
    one frame (a leg on the wrong side) thus never discards the detections that would correct it;
    points without a triangulation keep all their detections."""
    if threshold <= 0:
        return obs
    with torch.no_grad():
        pts = torch.as_tensor(points3d, dtype=torch.float64)
        ok = torch.isfinite(pts).all(-1)                                        # (F, K)
        proj = project(obs.cameras, torch.nan_to_num(pts)).permute(1, 0, 2, 3)  # (F, C, K, 2)
        dist = (proj - obs.keypoints.double()).norm(dim=-1)
        far = ok[:, None] & torch.isfinite(dist) & (dist > threshold)
    conf = torch.where(far, torch.zeros_like(obs.confidence), obs.confidence)
    return Observations(obs.cameras, obs.keypoints, conf, obs.keypoint_names, obs.masks, obs.crops)


def _kp_weights(template: Template, config: FitConfig) -> torch.Tensor:
    return torch.tensor([float(config.keypoint_weights.get(n, 1.0)) for n in template.keypoint_names])


@dataclass
class ShapeResult:
    shape: Shape
    pose: Pose
    keypoint_error: torch.Tensor   # (B,) crop px
    silhouette_error: torch.Tensor  # (B,)
    keyframes: list[int] = field(default_factory=list)
    sigma: float | None = None      # the rasteriser blur the silhouettes used (config.sigma_bias: calibrated)
    sigma_ratio: tuple | None = None  # with sigma_bias: (area ratio at sigma, at config.sigma)
    sigma_stages: dict = field(default_factory=dict)  # the blur each silhouette stage used: a float, or
                                                      # (first, last) for an annealed stage
    masks_in: str | None = None     # where the silhouettes acted (masks_in "auto": the one it chose)
    auto: dict | None = None        # masks_in "auto": its record (camera, measure, scores, chosen, why)
    candidates: dict | None = None  # masks_in "auto": each candidate's ShapeResult fitted without the camera


@dataclass
class Hooks:
    """How a long fit talks to its caller (the command passes its Run's methods).

    log(message): one line per stage; detail(message): per-iteration figures (``-v``);
    progress(total=, desc=, unit=): a context manager with ``update(n)`` (a tqdm bar);
    stopped(stage, ran, planned, unit, reason, **figures): once per loop, when it ends."""

    log: Callable[[str], None] = lambda m: None
    detail: Callable[[str], None] = lambda m: None
    progress: Callable | None = None
    stopped: Callable | None = None

    def bar(self, total: int, desc: str, unit: str = "step"):
        if self.progress is None:
            from contextlib import nullcontext
            from types import SimpleNamespace

            return nullcontext(SimpleNamespace(update=lambda n=1: None))
        return self.progress(total=total, desc=desc, unit=unit)

    def stop(self, stage: str, ran: int, planned: int, unit: str, reason: str, **figures) -> None:
        if self.stopped is not None:
            self.stopped(stage, ran, planned, unit, reason, **figures)


def _every(steps: int) -> int:
    return max(1, steps // 10)


def spanned_groups(template: Template) -> torch.Tensor:
    """(G,) bool: bone groups with a bone whose both ends are keypoint joints (its length is seen
    directly by the keypoints; the other groups are seen only through the sums of their chains)."""
    kp_joints = set(torch.nonzero(template.keypoints_joint.abs().sum(0) > 0).reshape(-1).tolist())
    out = torch.zeros(template.n_groups, dtype=torch.bool)
    for i, p in enumerate(template.parents):
        g = int(template.bone_group[i])
        if g >= 0 and i in kp_joints and p in kp_joints:
            out[g] = True
    return out


def fit_shape(template: Template, obs: Observations, points3d: np.ndarray, config: FitConfig,
              log: Callable[[str], None] = lambda m: None, hooks: Hooks | None = None) -> ShapeResult:
    """Stage A (subject avatar) over the keyframes of ``obs``: Procrustes init from the
    triangulated keypoints points3d (B, K, 3), then global (R, t, s) -> pose (+θ) -> bones (+b)
    -> mesh (+Δ, silhouettes; scale and bone scales stay at the bones stage's values unless
    ``config.mesh_bones``: the silhouette term otherwise trades bone length for surface)."""
    neutral = Shape.neutral(template)
    scales, rots, trans = init_global(template, neutral, points3d, fit_scale=True)
    s0 = float(np.nanmedian(scales))
    if not np.isfinite(s0):
        raise ValueError("no keyframe has 3 or more triangulated keypoints: cannot place the template")
    if not 0.2 <= s0 <= 5.0:
        raise ValueError(f"the subject is {s0:.3g} times the template's size: check the units of the "
                         "template (--template-units) and of the calibration (--units)")
    _, rots, trans = init_global(template, Shape(torch.tensor(s0), neutral.bone_scales, neutral.offsets),
                                 points3d, fit_scale=False)
    rots, trans = fill_missing(rots), fill_missing(trans)
    B = len(points3d)
    length = body_length(template)
    params = Params(torch.zeros(B, template.n_joints, 3), torch.as_tensor(rots, dtype=torch.float32),
                    torch.zeros(B, 3), torch.zeros(()), torch.zeros(template.n_groups),
                    torch.zeros(template.n_offsets, 3), torch.as_tensor(trans, dtype=torch.float32),
                    s0, length * s0)
    markers = config.keypoint_offsets > 0
    if markers:
        params.markers = torch.zeros(len(template.keypoint_names), 3)
        params.marker_names = list(template.keypoint_names)
    use = select_cameras(obs.confidence, config.cameras)
    kw = _kp_weights(template, config)
    if config.masks_in == "auto":
        config = replace(config, masks_in=AUTO_MASKS_IN[0])   # fit_shape alone has no held-out camera
    if config.masks_in not in MASKS_IN:
        raise ValueError(f"masks_in {config.masks_in!r}: one of {', '.join(MASKS_IN)}")
    split = config.silhouettes and config.bones_split
    bones_sil = (config.silhouettes and config.bones_silhouettes and not split
                 and config.masks_in in ("bones,mesh", "spanned,mesh"))
    mesh_bones = config.mesh_bones or config.masks_in == "mesh-bones"
    stages = [("global", ["grot", "dt", "log_scale"], False),
              ("pose", ["grot", "dt", "log_scale", "rot"], False),
              ("bones", ["grot", "dt", "rot", "log_bones"] + ([] if bones_sil and config.bones_fixed_scale else ["log_scale"])
               + (["markers"] if markers and config.markers_in_bones else [])
               + (["offsets"] if config.bones_offsets else []), bones_sil),
              ("mesh", ["grot", "dt", "rot", "offsets"] + (["log_scale", "log_bones"] if mesh_bones else [])
               + (["markers"] if markers else []), config.silhouettes)]
    stage_steps = list(config.shape_steps)
    frozen, sil_frozen = {}, {}
    if bones_sil and config.masks_in == "spanned,mesh":   # the silhouettes leave the unspanned groups alone
        sil_frozen["bones"] = ~spanned_groups(template)
    if split:   # silhouettes move only the bones no keypoint pair spans; keypoints keep their chains' lengths
        stages.insert(3, ("split", ["grot", "dt", "rot", "log_bones"], True))
        stage_steps.insert(3, stage_steps[2])
        frozen["split"] = spanned_groups(template)
    hooks = hooks or Hooks(log=log)
    last = None
    calibrate = config.silhouettes and config.sigma_bias > 0 and obs.masks is not None
    ratios, calibrated, sigma_stages, base_sigma = None, config.sigma, {}, config.sigma
    for (name, train, sil), steps in zip(stages, stage_steps):
        if steps <= 0:
            hooks.stop(f"shape {name}", 0, 0, "steps", "skipped (0 steps)")
            continue
        if sil and calibrate:   # once, before the first silhouette stage, on the body fitted to keypoints
            calibrate = False
            with torch.no_grad():
                verts, _, _ = forward(template, params.shape(), params.pose(), with_vertices=True)
            views = use & (torch.isfinite(obs.keypoints).all(-1) & (obs.confidence > 0)).any(-1)
            if config.silhouette_cameras > 0:
                views &= select_cameras(obs.confidence, config.silhouette_cameras)
            sigma, ratio, top = calibrated_sigma(template, verts, obs, views, config.sigma, config.sigma_bias)
            hooks.log(f"shape: rasteriser blur sigma {sigma:.4g} crop px^2 (rendered / mask area {ratio:.3f}; "
                      f"{top:.3f} at {config.sigma:g})")
            ratios, base_sigma, calibrated = (ratio, top), config.sigma, sigma
        sigmas = None
        stage_config = config
        if sil and name == "mesh":
            end = calibrated if ratios is not None and config.sigma_bias_mesh else (
                config.sigma_mesh if config.sigma_mesh > 0 else base_sigma)
            if config.sigma_anneal:
                sigmas = sigma_schedule(base_sigma, end, steps)
                hooks.log(f"shape {name}: blur annealed {base_sigma:.4g} -> {end:.4g} crop px^2 "
                          f"(geometric over {steps} steps)")
            stage_config = replace(config, sigma=end)
        elif sil:
            stage_config = replace(config, sigma=calibrated if ratios is not None and config.sigma_bias_bones
                                   else base_sigma)
        if sil:
            sigma_stages[name] = (sigmas[0], sigmas[-1]) if sigmas else stage_config.sigma
        with hooks.bar(steps, f"shape {name}") as bar:
            def on_step(step, l_kp, l_sil, name=name, steps=steps, bar=bar):
                bar.update(1)
                if (step + 1) % _every(steps) == 0:
                    hooks.detail(f"shape {name} step {step + 1}/{steps}: keypoints {float(l_kp.mean()):.3f} "
                                 f"crop px, silhouette {float(l_sil.mean()):.4f}")
            last = _optimise(template, params, obs, use, stage_config, train, steps, sil, False, kw, on_step,
                             frozen.get(name), sigmas, sil_frozen.get(name))
        hooks.log(f"shape stage {name}: keypoint error {last[0].mean():.3f} crop px, "
                  f"silhouette {last[1].mean():.4f}")
        hooks.stop(f"shape {name}", steps, steps, "steps", "completed",
                   keypoint_px=round(float(last[0].mean()), 4), silhouette=round(float(last[1].mean()), 5))
    return ShapeResult(params.shape(), params.pose(), last[0], last[1], sigma=calibrated, sigma_ratio=ratios,
                       sigma_stages=sigma_stages,
                       masks_in=config.masks_in if config.silhouettes and obs.masks is not None else None)


@dataclass
class TrackResult:
    pose: Pose
    keypoint_error: torch.Tensor    # (F,) crop px
    silhouette_error: torch.Tensor  # (F,)
    cameras_used: torch.Tensor      # (F, C) bool


def track(template: Template, shape: Shape, obs: Observations, points3d: np.ndarray,
          config: FitConfig, progress: Callable[[int], None] = lambda n: None,
          hooks: Hooks | None = None) -> TrackResult:
    """Stage B (tracking): shape frozen; R, t, θ per frame over overlapping windows, warm-started
    from the previous window; ``config.cameras`` cameras per frame (waterfall selection).
    points3d (F, K, 3) triangulated keypoints for the Procrustes init of R_g, t_g."""
    from dataclasses import replace

    config = replace(config, silhouette_cameras=config.track_silhouette_cameras,
                     silhouette_deferred=config.track_silhouette_deferred)
    F = obs.keypoints.shape[0]
    shape = Shape(shape.scale.detach().float(), shape.bone_scales.detach().float(), shape.offsets.detach().float(),
                  None if shape.markers is None else shape.markers.detach().float(), shape.marker_names)
    _, rots, trans = init_global(template, shape, points3d, fit_scale=False)
    rots, trans = fill_missing(rots), fill_missing(trans)
    use_all = select_cameras(obs.confidence, config.cameras)
    length = body_length(template) * float(shape.scale)
    out_rot = torch.zeros(F, template.n_joints, 3)
    out_grot = torch.as_tensor(rots, dtype=torch.float32).clone()
    out_t = torch.as_tensor(trans, dtype=torch.float32).clone()
    kp_err, sil_err = torch.zeros(F), torch.zeros(F)
    kw = _kp_weights(template, config)
    stride = max(1, config.window - config.overlap)
    start, done_until, windows = 0, 0, 0
    while start < F:
        stop = min(F, start + config.window)
        idx = torch.arange(start, stop)
        if start > 0:  # warm start: frames not fitted yet begin at the last fitted frame's pose
            fresh = idx[idx >= done_until]
            out_rot[fresh] = out_rot[done_until - 1].clone()
        log_scale = torch.log(shape.scale)
        params = Params(out_rot[idx].clone(), out_grot[idx].clone(), torch.zeros(len(idx), 3),
                        log_scale * 0, torch.log(shape.bone_scales), shape.offsets / length,
                        out_t[idx].clone(), float(shape.scale), length,
                        None if shape.markers is None else shape.markers / length, shape.marker_names)
        sub = obs.frames(idx)
        kp_only = max(1, config.track_steps // 2) if config.silhouettes else config.track_steps
        _optimise(template, params, sub, use_all[idx], config, ["rot", "grot", "dt"], kp_only, False, True, kw)
        last = None
        if config.silhouettes and sub.masks is not None:
            last = _optimise(template, params, sub, use_all[idx], config, ["rot", "grot", "dt"],
                             config.track_steps - kp_only, True, True, kw)
        with torch.no_grad():
            pose = params.pose()
            if last is None:
                verts, _, kps = forward(template, params.shape(), pose, with_vertices=False)
                last = image_terms(template, None, kps, sub, use_all[idx], config, False, kw)
        keep_from = 0 if start == 0 else min(len(idx), config.overlap // 2)
        sel = idx[keep_from:]
        out_rot[sel], out_grot[sel], out_t[sel] = pose.rotations[keep_from:], pose.global_rot[keep_from:], pose.global_t[keep_from:]
        kp_err[sel], sil_err[sel] = last[0][keep_from:], last[1][keep_from:]
        progress(int(stop - done_until))
        windows += 1
        if hooks is not None:
            hooks.detail(f"track window {windows} (frames {start}-{stop - 1}): keypoints "
                         f"{float(last[0].mean()):.3f} crop px, silhouette {float(last[1].mean()):.4f}")
        done_until = stop
        if stop >= F:
            break
        start += stride
    if hooks is not None:
        hooks.stop("track", int(done_until), F, "frames", "completed", windows=windows,
                   steps_per_window=config.track_steps, keypoint_px=round(float(kp_err.mean()), 4))
    return TrackResult(Pose(out_rot, out_grot, out_t), kp_err, sil_err, use_all)


def _with_crops(obs: Observations, config: FitConfig) -> Observations:
    if obs.crops is None:
        obs = Observations(obs.cameras, obs.keypoints, obs.confidence, obs.keypoint_names, obs.masks,
                           crops_from_keypoints(obs, config.crop))
    return obs


def _triangulated(obs: Observations) -> np.ndarray:
    from cortexkit.tools.avatar.triangulate import triangulate_frames

    return triangulate_frames(obs.cameras, obs.keypoints.double().numpy(), obs.confidence.double().numpy()).points


def fit_avatar_shape(template: Template, obs: Observations, config: FitConfig, n_keyframes: int = 8,
                     keyframes: list[int] | None = None, log: Callable[[str], None] = lambda m: None,
                     hooks: Hooks | None = None) -> ShapeResult:
    """Stage A from raw views: keyframes (explicit, or ``n_keyframes`` spread evenly), robust
    triangulation for the Procrustes init, then :func:`fit_shape`."""
    F = obs.keypoints.shape[0]
    if keyframes is None:
        keyframes = sorted(set(np.linspace(0, F - 1, min(n_keyframes, F)).round().astype(int).tolist()))
    bad = [k for k in keyframes if not 0 <= k < F]
    if bad:
        raise ValueError(f"keyframe(s) {bad} outside the {F} frames")
    obs = _with_crops(obs, config).frames(keyframes)
    if config.masks_in == "auto":
        result = _auto_masks_in(template, obs, config, log, hooks)
    else:
        result = _fit_views(template, obs, config, log, hooks)
    result.keyframes = list(keyframes)
    return result


def _fit_views(template: Template, obs: Observations, config: FitConfig, log: Callable[[str], None] = lambda m: None,
               hooks: Hooks | None = None) -> ShapeResult:
    """fit_shape on keyframe views: their robust triangulation, outlying detections dropped."""
    points = _triangulated(obs)
    return fit_shape(template, reject_outliers(obs, points, config.outlier_px), points, config, log, hooks)


def held_out_scores(template: Template, result: ShapeResult, obs: Observations, camera: int,
                    min_confidence: float = 0.5) -> dict:
    """A shape fit's keyframe poses scored on camera index ``camera`` of obs (its keyframes): the
    keypoint reprojection median / mean image px over the detections above ``min_confidence``, and the
    mean IoU of the exact render (supersampled 4 x) with the camera's masks over the keyframes."""
    from cortexkit.tools.avatar.metrics import silhouette_iou

    cam = obs.cameras.subset([camera])
    with torch.no_grad():
        verts, _, kps = forward(template, result.shape, result.pose, with_vertices=True)
        proj = project(cam, kps.double())[0]
        target = obs.keypoints[:, camera].double()
        ok = torch.isfinite(target).all(-1) & (obs.confidence[:, camera] > min_confidence)
        dist = (proj - torch.nan_to_num(target)).norm(dim=-1)[ok]
        out = {"keypoints_px_median": float(dist.median()) if len(dist) else float("nan"),
               "keypoints_px_mean": float(dist.mean()) if len(dist) else float("nan"),
               "detections": int(ok.sum())}
        if obs.masks is not None and obs.crops is not None:
            out["iou"] = silhouette_iou(template, verts, cam, obs.crops[:, [camera]], obs.masks[:, [camera]])
    return out


def _auto_masks_in(template: Template, obs: Observations, config: FitConfig, log, hooks) -> ShapeResult:
    """masks_in "auto" over keyframe views obs (crops set): each of AUTO_MASKS_IN fitted without the
    held-out camera, scored there by ``config.auto_measure``; the better one kept (or refitted on every
    camera with ``auto_refit``). Deterministic: the camera is the baseline check's (most confident
    detections, lowest index on a tie), ties go to AUTO_MASKS_IN[0]."""
    from cortexkit.tools.avatar.baseline import held_out_camera, without_camera

    if config.auto_measure not in AUTO_MEASURES:
        raise ValueError(f"auto_measure {config.auto_measure!r}: one of {', '.join(AUTO_MEASURES)}")
    hooks = hooks or Hooks(log=log)
    C = len(obs.cameras)

    def fit(o: Observations, masks_in: str, h) -> ShapeResult:
        return _fit_views(template, o, replace(config, masks_in=masks_in), hooks=h)

    if not config.silhouettes or obs.masks is None or C < 3:
        why = ("no silhouettes" if not config.silhouettes or obs.masks is None
               else f"{C} camera(s): holding one out leaves too few to triangulate")
        result = fit(obs, AUTO_MASKS_IN[0], hooks)
        result.auto = {"chosen": result.masks_in, "why": f"auto not run: {why}"}
        hooks.log(f"shape: masks-in auto not run ({why}): {AUTO_MASKS_IN[0]}")
        return result
    camera = held_out_camera(obs.confidence, 0.5)
    rest = without_camera(obs, camera)
    name = obs.cameras.names[camera]

    def quiet(masks_in: str) -> Hooks:   # the candidates' stage records, named by candidate
        return Hooks(log=lambda m: None, detail=hooks.detail, progress=hooks.progress,
                     stopped=lambda stage, *a, **k: hooks.stop(f"{stage} ({masks_in}, camera {name} held out)",
                                                               *a, **k))

    candidates, scores = {}, {}
    for masks_in in AUTO_MASKS_IN:
        hooks.log(f"shape: masks-in auto: fitting {masks_in} without camera {name}")
        candidates[masks_in] = fit(rest, masks_in, quiet(masks_in))
        scores[masks_in] = held_out_scores(template, candidates[masks_in], obs, camera)
    key = "iou" if config.auto_measure == "iou" else "keypoints_px_median"
    sign = -1.0 if config.auto_measure == "iou" else 1.0
    chosen = min(AUTO_MASKS_IN, key=lambda m: (sign * scores[m][key] if math.isfinite(scores[m][key])
                                               else math.inf, AUTO_MASKS_IN.index(m)))   # NaN: no detection
    fmt = " vs ".join(f"{m} {scores[m][key]:.4f}" for m in AUTO_MASKS_IN)
    why = (f"camera {name} held out of both fits: {'silhouette IoU' if key == 'iou' else 'keypoint median px'} "
           f"{fmt} ({'higher' if key == 'iou' else 'lower'} wins)")
    hooks.log(f"shape: masks-in auto chose {chosen}: {why}")
    hooks.stop("shape masks-in auto", len(AUTO_MASKS_IN), len(AUTO_MASKS_IN), "fits", "completed",
               chosen=chosen, why=why, camera=name, measure=config.auto_measure,
               **{f"{m}_{k}": round(float(scores[m][k]), 5) for m in AUTO_MASKS_IN
                  for k in ("iou", "keypoints_px_median") if k in scores[m]})
    record = {"chosen": chosen, "why": why, "camera": name, "measure": config.auto_measure,
              "refit": bool(config.auto_refit),
              "scores": {m: {k: round(v, 5) if isinstance(v, float) else v for k, v in s.items()}
                         for m, s in scores.items()}}
    if config.auto_refit:
        result = fit(obs, chosen, hooks)
    else:
        result = candidates[chosen]
    result.auto, result.candidates = record, candidates
    return result


def track_sequence(template: Template, shape: Shape, obs: Observations, config: FitConfig,
                   progress: Callable[[int], None] = lambda n: None, hooks: Hooks | None = None) -> TrackResult:
    """Stage B from raw views (triangulation for the per-frame global init, then :func:`track`)."""
    obs = _with_crops(obs, config)
    points = _triangulated(obs)
    return track(template, shape, reject_outliers(obs, points, config.outlier_px), points, config, progress, hooks)
