"""Calibrated cameras and OpenCV's pinhole projection with distortion, in torch.

Conventions are OpenCV's (and aniposelib's): x_cam = R X + t with R from the Rodrigues vector
``rvec``, pixels u = fx x'' + cx, v = fy y'' + cy with the rational radial, tangential model
(k1, k2, p1, p2, k3, k4, k5, k6), exactly what cv2.projectPoints computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cortexkit.tools.avatar.rotation import rodrigues


@dataclass
class Cameras:
    """C cameras: names, K (C, 3, 3), dist (C, 8), rvec (C, 3), tvec (C, 3) (mm), size (C, 2) (w, h)."""

    names: list[str]
    K: torch.Tensor
    dist: torch.Tensor
    rvec: torch.Tensor
    tvec: torch.Tensor
    size: torch.Tensor

    def __len__(self) -> int:
        return len(self.names)

    def subset(self, index) -> "Cameras":
        index = list(index)
        return Cameras([self.names[i] for i in index], self.K[index], self.dist[index],
                       self.rvec[index], self.tvec[index], self.size[index])

    @property
    def R(self) -> torch.Tensor:
        return rodrigues(self.rvec.double()).to(self.K.dtype)

    def projection_matrices(self) -> np.ndarray:
        """(C, 3, 4) normalised projection matrices [R | t] (to be used with undistorted,
        K-normalised points)."""
        return np.concatenate([self.R.double().numpy(), self.tvec.double().numpy()[:, :, None]], 2)

    def centers(self) -> torch.Tensor:
        """(C, 3) camera centres in world coordinates."""
        return -(self.R.transpose(1, 2) @ self.tvec[:, :, None])[..., 0]


def to_camera(cams: Cameras, points: torch.Tensor) -> torch.Tensor:
    """(..., P, 3) world points -> (C, ..., P, 3) camera coordinates."""
    R = cams.R.to(points.dtype)
    t = cams.tvec.to(points.dtype)
    shape = (len(cams),) + (1,) * (points.dim() - 2) + (3, 3)
    return torch.einsum("c...ab,...pb->c...pa", R.reshape(shape), points) + t.reshape(shape[:-1])[..., None, :]


def distort(cams: Cameras, xy: torch.Tensor) -> torch.Tensor:
    """(C, ..., P, 2) normalised image coordinates -> distorted ones (OpenCV rational model)."""
    d = cams.dist.to(xy.dtype)
    d = d.reshape((len(cams),) + (1,) * (xy.dim() - 2) + (8,))
    k1, k2, p1, p2, k3, k4, k5, k6 = d.unbind(-1)
    x, y = xy.unbind(-1)
    r2 = x * x + y * y
    radial = (1 + r2 * (k1 + r2 * (k2 + r2 * k3))) / (1 + r2 * (k4 + r2 * (k5 + r2 * k6)))
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return torch.stack([xd, yd], -1)


def project(cams: Cameras, points: torch.Tensor, *, min_depth: float = 1e-3) -> torch.Tensor:
    """(..., P, 3) world points -> (C, ..., P, 2) pixels. Points behind a camera come back at
    depth clamped to ``min_depth`` (callers mask them with :func:`depth`)."""
    xc = to_camera(cams, points)
    z = xc[..., 2:].clamp(min=min_depth)
    xy = distort(cams, xc[..., :2] / z)
    K = cams.K.to(points.dtype).reshape((len(cams),) + (1,) * (points.dim() - 2) + (3, 3))
    u = K[..., 0, 0, None] * xy[..., 0] + K[..., 0, 1, None] * xy[..., 1] + K[..., 0, 2, None]
    v = K[..., 1, 1, None] * xy[..., 1] + K[..., 1, 2, None]
    return torch.stack([u, v], -1)


def depth(cams: Cameras, points: torch.Tensor) -> torch.Tensor:
    """(..., P, 3) -> (C, ..., P) depth along each camera's optical axis."""
    return to_camera(cams, points)[..., 2]


def undistort_points(cams: Cameras, pixels: np.ndarray, iterations: int = 20) -> np.ndarray:
    """(C, ..., 2) pixels -> (C, ..., 2) normalised undistorted coordinates (the fixed-point
    iteration cv2.undistortPoints uses). NaN stays NaN."""
    K = cams.K.double().numpy()
    dist = cams.dist.double().numpy()
    out = np.empty(pixels.shape, np.float64)
    for c in range(len(cams)):
        fx, fy, cx, cy, skew = K[c, 0, 0], K[c, 1, 1], K[c, 0, 2], K[c, 1, 2], K[c, 0, 1]
        y0 = (pixels[c, ..., 1] - cy) / fy
        x0 = (pixels[c, ..., 0] - cx - skew * y0) / fx
        k1, k2, p1, p2, k3, k4, k5, k6 = dist[c]
        x, y = x0.copy(), y0.copy()
        if np.any(dist[c] != 0):
            for _ in range(iterations):
                r2 = x * x + y * y
                icdist = (1 + r2 * (k4 + r2 * (k5 + r2 * k6))) / (1 + r2 * (k1 + r2 * (k2 + r2 * k3)))
                dx = 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
                dy = p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
                x, y = (x0 - dx) * icdist, (y0 - dy) * icdist
        out[c, ..., 0], out[c, ..., 1] = x, y
    return out


def look_at_rig(n: int, *, radius: float, height: float, target: np.ndarray, focal: float = 1800.0,
                size: tuple[int, int] = (2464, 2056), rings: int = 2, seed: int = 0) -> Cameras:
    """A virtual rig of ``n`` cameras on ``rings`` rings around ``target`` (y up), all looking at it."""
    rng = np.random.default_rng(seed)
    per = [n // rings + (1 if r < n % rings else 0) for r in range(rings)]
    names, rvecs, tvecs = [], [], []
    from scipy.spatial.transform import Rotation

    k = 0
    for r, count in enumerate(per):
        elevation = height * (r + 1) / rings
        for i in range(count):
            angle = 2 * np.pi * (i + 0.5 * r) / count + rng.uniform(-0.05, 0.05)
            eye = target + np.array([radius * np.cos(angle), elevation, radius * np.sin(angle)])
            forward = target - eye
            forward /= np.linalg.norm(forward)
            right = np.cross(forward, [0.0, 1.0, 0.0])
            right /= np.linalg.norm(right)
            down = np.cross(forward, right)
            R = np.stack([right, down, forward])  # rows: camera axes in world
            rvecs.append(Rotation.from_matrix(R).as_rotvec())
            tvecs.append(-R @ eye)
            names.append(f"cam{k:02d}")
            k += 1
    K = np.array([[focal, 0, (size[0] - 1) / 2], [0, focal, (size[1] - 1) / 2], [0, 0, 1]])
    c = len(names)
    return Cameras(names, torch.tensor(np.tile(K, (c, 1, 1))), torch.zeros(c, 8, dtype=torch.float64),
                   torch.tensor(np.stack(rvecs)), torch.tensor(np.stack(tvecs)),
                   torch.tensor([list(size)] * c, dtype=torch.float64))
