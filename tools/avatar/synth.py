"""The synthetic protocol: a hidden individual animated in front of calibrated cameras.

A clip's joint world transforms (or sampled poses within the joint limits) become poses of the
template's forward model; a hidden individual (log-normal bone scales shared left/right, a global
scale, smooth left/right-symmetric vertex offsets of a few per cent of the body length) is applied;
ground truth keypoints, joints, vertices and exact silhouettes (supersampled coverage in square
crops around the projected mesh) are rendered; then the 2D keypoints are corrupted with Gaussian
noise, dropout and gross outliers. Fitting starts from the unperturbed template.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cortexkit.tools.avatar.camera import Cameras, project
from cortexkit.tools.avatar.model import Pose, Shape, Template, forward, vertex_offsets
from cortexkit.tools.avatar.raster import hard_silhouette
from cortexkit.tools.avatar.rotation import matrix_to_axis_angle


@dataclass
class SynthConfig:
    noise: float = 2.0           # px, Gaussian sd of the 2D keypoints
    dropout: float = 0.2         # fraction of detections removed
    outliers: float = 0.03       # fraction of detections moved 20-80 px
    bone_sd: float = 0.08        # log-normal sd of the hidden bone scales
    scale_sd: float = 0.05       # log-normal sd of the hidden global scale
    offset_size: float = 0.03    # hidden offsets, fraction of the body length (2-5 % in the protocol)
    crop: int = 64
    masks: bool = True
    seed: int = 0


def poses_from_clip(template: Template, world: np.ndarray, unit_mm: float) -> Pose:
    """(T, J, 4, 4) joint world transforms of a clip (file units) -> :class:`Pose` of the model.

    The global rotation is the root joint's skinning rotation, local rotations are expressed in
    each joint's rest frame (θ_i = log(Q_iᵀ M_parentᵀ M_i Q_i)); the translation puts the first
    free joint where the clip has it (so the clip's root motion is kept)."""
    world = np.asarray(world, np.float64)
    q = template.frames.double().numpy()
    skin_rot = world[:, :, :3, :3] @ q.transpose(0, 2, 1)[None]          # M_i^world (T, J, 3, 3)
    u, _, vt = np.linalg.svd(skin_rot)
    skin_rot = u @ vt
    g = skin_rot[:, 0]
    rel = np.einsum("tba,tjbc->tjac", g, skin_rot)                         # R_gᵀ M_i^world
    T, J = rel.shape[:2]
    theta = np.zeros((T, J, 3))
    for i, p in enumerate(template.parents):
        parent = np.tile(np.eye(3), (T, 1, 1)) if p < 0 else rel[:, p]
        local = q[i].T @ np.swapaxes(parent, 1, 2) @ rel[:, i] @ q[i]
        theta[:, i] = matrix_to_axis_angle(torch.as_tensor(local)).numpy()
    theta *= template.free.numpy()[None, :, None]
    grot = matrix_to_axis_angle(torch.as_tensor(g)).numpy()
    pose = Pose(torch.as_tensor(theta, dtype=torch.float32), torch.as_tensor(grot, dtype=torch.float32),
                torch.zeros(T, 3))
    with torch.no_grad():
        _, joints, _ = forward(template, Shape.neutral(template), pose, with_vertices=False)
    anchor = int(np.nonzero(template.free.numpy())[0][0])
    target = world[:, anchor, :3, 3] * unit_mm
    pose.global_t = torch.as_tensor(target, dtype=torch.float32) - joints[:, anchor]
    return pose


def hidden_individual(template: Template, config: SynthConfig, rng: np.random.Generator) -> Shape:
    """A random subject: bone scales exp(N(0, bone_sd)) per group, global scale, and smooth
    symmetric offsets (free offsets smoothed by 10 Laplacian steps, rescaled to offset_size)."""
    bones = np.exp(rng.normal(0, config.bone_sd, template.n_groups))
    scale = float(np.exp(rng.normal(0, config.scale_sd)))
    offsets = torch.as_tensor(rng.normal(size=(template.n_offsets, 3)), dtype=torch.float32)
    if template.n_offsets:
        e = template.edges
        for _ in range(10):  # smooth the full field, then read back one value per free offset
            full = vertex_offsets(template, offsets)
            acc = full.clone().index_add(0, e[:, 0], full[e[:, 1]]).index_add(0, e[:, 1], full[e[:, 0]])
            deg = torch.ones(len(full)).index_add(0, e.reshape(-1), torch.ones(e.numel()))
            full = acc / deg[:, None]
            back = torch.zeros_like(offsets)
            idx = template.offset_index
            ok = idx >= 0
            back.index_add_(0, idx[ok], full[ok] * template.offset_mirror[ok])
            count = torch.zeros(len(offsets)).index_add(0, idx[ok], torch.ones(int(ok.sum())))
            offsets = back / count.clamp(min=1)[:, None]
        length = float(torch.linalg.norm(template.vertices.max(0).values - template.vertices.min(0).values))
        rms = vertex_offsets(template, offsets).norm(dim=1).max()
        offsets = offsets / rms.clamp(min=1e-9) * config.offset_size * length
    return Shape(torch.tensor(scale), torch.as_tensor(bones, dtype=torch.float32), offsets)


@dataclass
class Synthetic:
    """keypoints (F, C, K, 2) corrupted (NaN = dropped), confidence (F, C, K), clean (F, C, K, 2),
    crops (F, C, 3), masks (F, C, S, S) coverage or None, truth: dict of (F, ...) tensors."""

    keypoints: torch.Tensor
    confidence: torch.Tensor
    clean: torch.Tensor
    crops: torch.Tensor
    masks: torch.Tensor | None
    truth: dict


def crops_around(pixels: torch.Tensor, size: int, margin: float = 0.1) -> torch.Tensor:
    """(C, F, V, 2) projected vertices -> (F, C, 3) square crops (x0, y0, scale)."""
    lo, hi = pixels.min(2).values, pixels.max(2).values
    side = (hi - lo).max(-1).values * (1 + 2 * margin) + 1.0
    centre = (lo + hi) / 2
    crops = torch.stack([centre[..., 0] - side / 2, centre[..., 1] - side / 2, size / side], -1)
    return crops.permute(1, 0, 2).contiguous()


def synthesize(template: Template, pose: Pose, cams: Cameras, config: SynthConfig,
               shape: Shape | None = None) -> Synthetic:
    rng = np.random.default_rng(config.seed)
    shape = hidden_individual(template, config, rng) if shape is None else shape
    with torch.no_grad():
        verts, joints, kps = forward(template, shape, pose)
        clean = project(cams, kps.double()).permute(1, 0, 2, 3).float()       # (F, C, K, 2)
        vpix = project(cams, verts.double()).float()                           # (C, F, V, 2)
    F, C, K = clean.shape[:3]
    noisy = clean + torch.as_tensor(rng.normal(0, config.noise, clean.shape), dtype=torch.float32)
    conf = torch.as_tensor(rng.uniform(0.7, 1.0, (F, C, K)), dtype=torch.float32)
    outlier = torch.as_tensor(rng.random((F, C, K)) < config.outliers)
    angle = rng.uniform(0, 2 * np.pi, (F, C, K))
    radius = rng.uniform(20, 80, (F, C, K))
    shift = torch.as_tensor(np.stack([np.cos(angle), np.sin(angle)], -1) * radius[..., None], dtype=torch.float32)
    noisy = torch.where(outlier[..., None], noisy + shift, noisy)
    w, h = cams.size[:, 0].float(), cams.size[:, 1].float()
    inside = (clean[..., 0] >= 0) & (clean[..., 0] < w[None, :, None]) & (clean[..., 1] >= 0) & (clean[..., 1] < h[None, :, None])
    drop = torch.as_tensor(rng.random((F, C, K)) < config.dropout) | ~inside
    noisy[drop] = float("nan")
    conf[drop] = 0.0
    crops = crops_around(vpix, config.crop)
    masks = None
    if config.masks:
        pix = (vpix.permute(1, 0, 2, 3) - crops[:, :, None, :2]) * crops[:, :, None, 2:]
        masks = hard_silhouette(pix.reshape(F * C, -1, 2), template.faces, config.crop, 4)
        masks = masks.reshape(F, C, config.crop, config.crop)
    truth = {"joints": joints, "keypoints": kps, "vertices": verts, "rotations": pose.rotations,
             "global_rot": pose.global_rot, "global_t": pose.global_t, "scale": shape.scale.reshape(1),
             "bone_scales": shape.bone_scales, "offsets": shape.offsets}
    return Synthetic(noisy, conf, clean, crops, masks, truth)


def sample_poses(template: Template, n: int, rng: np.random.Generator, spread: float = 0.3) -> Pose:
    """n random poses: free joints uniform within spread × their limit box (clipped to ±spread
    rad), a random heading about y, at the origin."""
    lim = template.limits.numpy().clip(-spread, spread)
    theta = rng.uniform(lim[None, :, 0], lim[None, :, 1], (n, template.n_joints, 3))
    theta *= template.free.numpy()[None, :, None]
    grot = np.zeros((n, 3))
    grot[:, 1] = rng.uniform(-np.pi, np.pi, n)
    return Pose(torch.as_tensor(theta, dtype=torch.float32), torch.as_tensor(grot, dtype=torch.float32),
                torch.zeros(n, 3))


def make_views(template: Template, world, unit_mm: float, rig: str, rig_cal: dict | None,
               config: SynthConfig, *, frames: int | None = None, radius: float = 2.2):
    """A clip (world transforms (T, J, 4, 4) in file units, or None for 30 random poses) seen by
    ``rig`` ("ring:N" virtual cameras at ``radius`` body lengths, or a calibration dict, whose
    rig is moved and scaled so the subject fills its common field of view) -> (Cameras, Synthetic)."""
    from cortexkit.tools.avatar.camera import look_at_rig
    from cortexkit.tools.avatar.io import cameras_from_arrays

    rng = np.random.default_rng(config.seed)
    pose = poses_from_clip(template, world, unit_mm) if world is not None else sample_poses(template, 30, rng)
    if frames is not None:
        pose = Pose(pose.rotations[:frames], pose.global_rot[:frames], pose.global_t[:frames])
    with torch.no_grad():
        verts, _, _ = forward(template, Shape.neutral(template), pose)
    centre = verts.reshape(-1, 3).mean(0).double().numpy()
    length = float(np.linalg.norm(np.ptp(verts.reshape(-1, 3).numpy(), 0)))
    if rig_cal is None:
        try:
            n = int(rig.split(":", 1)[1])
        except ValueError:
            raise ValueError(f"--rig {rig}: expected ring:N or a calibration.toml") from None
        if n < 2:
            raise ValueError(f"--rig {rig}: at least 2 cameras")
        cams = look_at_rig(n, radius=radius * length, height=0.6 * radius * length, target=centre,
                           seed=config.seed)
    else:
        cams = cameras_from_arrays(rig_cal)
        centers = cams.centers().numpy()
        axes = cams.R.numpy()[:, 2]
        # the point nearest every optical axis: the rig's common field of view
        A = sum(np.eye(3) - np.outer(a, a) for a in axes)
        b = sum((np.eye(3) - np.outer(a, a)) @ c for a, c in zip(axes, centers))
        focus = np.linalg.solve(A, b)
        dist = np.median(np.linalg.norm(centers - focus, axis=1))
        scale = radius * length / dist
        R = cams.R.double()
        new_centers = (torch.as_tensor(centers - focus) * scale + torch.as_tensor(centre))
        cams.tvec = -(R @ new_centers[:, :, None])[..., 0]
    return cams, synthesize(template, pose, cams, config)
