"""A differentiable soft silhouette rasteriser (SoftRas / PyTorch3D's SoftSilhouetteShader).

For pixel p and triangle f, d_f(p) is the squared distance from p to the triangle's boundary,
negative inside; the pixel's coverage is

    α(p) = 1 − Π_f (1 − sigmoid(−d_f(p) / σ))

computed in log space (log(1 − sigmoid(−x)) = −softplus(−x)). Pairs farther than the blur radius
sqrt(ln(1/1e-4 − 1) σ) from a triangle contribute < 1e-4 and are skipped (PyTorch3D's
blur_radius), so only (pixel, face) pairs within each face's expanded bounding box are computed:
the cost follows the silhouette's area and depth complexity, not pixels × faces. Unlike
PyTorch3D, every face within the radius enters the product, not only the nearest K in depth
(for a silhouette the far faces only push α further towards 1). Coordinates are crop pixels,
σ in squared pixels.
"""

from __future__ import annotations

import math

import torch


def soft_silhouette(pixels: torch.Tensor, faces: torch.Tensor, size: int, sigma: float = 0.5) -> torch.Tensor:
    """pixels (N, V, 2) vertex positions in crop pixels (x right, y down; pixel centres at
    integer + 0.5), faces (F, 3) -> (N, size, size) soft coverage in [0, 1]."""
    n = pixels.shape[0]
    tri = pixels[:, faces]                                   # (N, F, 3, 2)
    radius = math.sqrt(math.log(1 / 1e-4 - 1) * sigma)
    with torch.no_grad():
        lo = (tri.min(2).values - radius - 0.5).ceil().clamp(0, size - 1).long()   # first pixel index
        hi = (tri.max(2).values + radius - 0.5).floor().clamp(-1, size - 1).long()  # last pixel index
        extent = (hi - lo + 1).clamp(min=0)                 # (N, F, 2) pixels covered per axis
        wx, wy = int(extent[..., 0].max()), int(extent[..., 1].max())
        ox = torch.arange(max(wx, 1))
        oy = torch.arange(max(wy, 1))
        ok = (ox[None, None, None, :] < extent[..., 0, None, None]) & (oy[None, None, :, None] < extent[..., 1, None, None])
        img, face, dy, dx = ok.nonzero(as_tuple=True)     # (N, F, wy, wx) windows, not (N, F, H, W)
        col = lo[img, face, 0] + dx
        row = lo[img, face, 1] + dy
    p = torch.stack([col.to(pixels.dtype) + 0.5, row.to(pixels.dtype) + 0.5], -1)  # (P, 2)
    t = tri[img, face]                                       # (P, 3, 2)
    a, b = t, t.roll(-1, dims=1)
    e = b - a                                                # edges (P, 3, 2)
    w = p[:, None] - a
    u = ((w * e).sum(-1) / (e * e).sum(-1).clamp(min=1e-12)).clamp(0, 1)
    d2 = ((w - u[..., None] * e) ** 2).sum(-1).min(1).values  # squared distance to boundary
    cross = e[..., 0] * w[..., 1] - e[..., 1] * w[..., 0]    # (P, 3) edge functions
    area = (e[:, 0, 0] * (-e[:, 2, 1]) - e[:, 0, 1] * (-e[:, 2, 0]))
    inside = ((cross * area[:, None]) >= 0).all(1)
    signed = torch.where(inside, -d2, d2)
    log_out = -torch.nn.functional.softplus(-signed / sigma)  # log(1 - prob)
    acc = torch.zeros(n * size * size, dtype=pixels.dtype)
    acc = acc.index_add(0, img * size * size + row * size + col, log_out)
    return (1 - acc.exp()).reshape(n, size, size)


def hard_silhouette(pixels: torch.Tensor, faces: torch.Tensor, size: int, supersample: int = 4) -> torch.Tensor:
    """Exact coverage by polygon filling (OpenCV, sub-pixel vertices, ``supersample``² samples per
    pixel): (N, V, 2) crop pixels, (F, 3) -> (N, size, size) coverage in [0, 1]."""
    import cv2
    import numpy as np

    shift = 4
    # fine pixel k is centred at fine coordinate k (OpenCV) and at crop coordinate (k + 0.5) / ss
    tri = ((pixels.detach().double().numpy()[:, faces.numpy()] * supersample - 0.5) * (1 << shift)).round()
    tri = np.ascontiguousarray(np.clip(np.nan_to_num(tri), -(2 ** 24), 2 ** 24).astype(np.int32))
    out = np.zeros((len(tri), size, size), np.float32)
    fine = size * supersample
    for i in range(len(tri)):
        canvas = np.zeros((fine, fine), np.uint8)
        for triangle in tri[i]:  # one at a time: fillPoly of many contours is even-odd, not a union
            cv2.fillConvexPoly(canvas, triangle, 1, lineType=cv2.LINE_8, shift=shift)
        out[i] = canvas.reshape(size, supersample, size, supersample).mean((1, 3))
    return torch.from_numpy(out)
