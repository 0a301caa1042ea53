"""Rotations in torch: a Rodrigues map that is smooth (and exact) at zero angle, and its inverse."""

from __future__ import annotations

import math

import torch


def skew(v: torch.Tensor) -> torch.Tensor:
    """(..., 3) -> (..., 3, 3) cross-product matrices."""
    zero = torch.zeros_like(v[..., 0])
    x, y, z = v.unbind(-1)
    return torch.stack([torch.stack([zero, -z, y], -1), torch.stack([z, zero, -x], -1),
                        torch.stack([-y, x, zero], -1)], -2)


def rodrigues(axis_angle: torch.Tensor) -> torch.Tensor:
    """(..., 3) axis-angle -> (..., 3, 3) rotation matrices.

    R = I + a(θ) K + b(θ) K², K = [ω]ₓ, a = sin θ / θ, b = (1 − cos θ) / θ²; below θ = 1e-3 the
    Taylor series (a = 1 − θ²/6, b = 1/2 − θ²/24) is used, so the value and the gradient are exact
    and finite at zero (no ε added to the norm)."""
    theta2 = (axis_angle * axis_angle).sum(-1)
    small = theta2 < 1e-6
    safe2 = torch.where(small, torch.ones_like(theta2), theta2)
    theta = safe2.sqrt()
    a = torch.where(small, 1 - theta2 / 6 + theta2 * theta2 / 120, torch.sin(theta) / theta)
    b = torch.where(small, 0.5 - theta2 / 24 + theta2 * theta2 / 720, (1 - torch.cos(theta)) / safe2)
    k = skew(axis_angle)
    eye = torch.eye(3, dtype=axis_angle.dtype, device=axis_angle.device).expand(k.shape)
    return eye + a[..., None, None] * k + b[..., None, None] * (k @ k)


def matrix_to_axis_angle(m: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotation matrices -> (..., 3) axis-angle with angle in [0, π] (via quaternions,
    stable near 0 and π)."""
    from scipy.spatial.transform import Rotation

    shape = m.shape[:-2]
    flat = m.detach().reshape(-1, 3, 3).cpu().double().numpy()
    out = Rotation.from_matrix(flat).as_rotvec()
    return torch.as_tensor(out, dtype=m.dtype, device=m.device).reshape(*shape, 3)


def geodesic_deg(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) x2 -> (...) angle of a^T b in degrees."""
    trace = (a.transpose(-1, -2) @ b).diagonal(dim1=-2, dim2=-1).sum(-1)
    return torch.rad2deg(torch.arccos(((trace - 1) / 2).clamp(-1.0, 1.0)))


def angular_velocity(axis_angle: torch.Tensor) -> torch.Tensor:
    """(T, ..., 3) axis-angle tracks -> (T-1, ..., 3) angular velocity by finite differences,
    ω = Δφ u + sin φ Δu + (1 − cos φ) u × Δu (BigMaQ's compute_angular_velocity)."""
    phi = (axis_angle.pow(2).sum(-1, keepdim=True) + 1e-12).sqrt()
    u = axis_angle / phi
    d_phi, d_u = phi[1:] - phi[:-1], u[1:] - u[:-1]
    p, uu = phi[:-1], u[:-1]
    return d_phi * uu + torch.sin(p) * d_u + (1 - torch.cos(p)) * torch.cross(uu, d_u, dim=-1)


PI = math.pi
