"""BigMaQ's texture stage: per-vertex colour from the faces visible in the images.

For every keyframe and camera the posed avatar is rasterised with one face per pixel (a
painter's z-buffer: faces filled far to near with OpenCV, so the nearest face wins); every pixel
covered by a visible face adds its image colour to that face's three vertices; the sums are
averaged over pixels, cameras and keyframes (BigMaQ ``render_colormaps``). Vertices no camera
saw take the mean of their seen neighbours (repeated along mesh edges), then the global mean.
BigMaQ then refines the colours with a photometric loss ("Color" stage); that refinement is not
done here.

The same rasteriser renders synthetic images (flat-shaded faces, each the mean of its vertex
colours) and full-size masks for ``synth``.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from cortexkit.formats.errors import CortexError
from cortexkit.tools.avatar.camera import Cameras, depth, project


def face_index(pixels: np.ndarray, z: np.ndarray, faces: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Visible face per pixel. pixels (V, 2) image px, z (V,) depth along the optical axis,
    faces (F, 3), size (w, h) -> (h, w) int32 face index, -1 where no face."""
    import cv2

    w, h = int(size[0]), int(size[1])
    out = np.full((h, w), -1, np.int32)
    shift = 4
    tri = pixels[faces] * (1 << shift)
    ok = (z[faces] > 0).all(1) & np.isfinite(tri).all((1, 2))
    tri = np.clip(tri, -(2 ** 24), 2 ** 24).round().astype(np.int32)
    far_first = np.argsort(-z[faces].mean(1), kind="stable")
    for f in far_first:
        if ok[f]:
            cv2.fillConvexPoly(out, tri[f], int(f), lineType=cv2.LINE_8, shift=shift)
    return out


def _project(cams: Cameras, verts: torch.Tensor):
    """(V, 3) mm -> per camera (C, V, 2) pixels and (C, V) depth (numpy)."""
    with torch.no_grad():
        pts = verts.double()[None]
        pix = project(cams, pts)[:, 0].numpy()
        z = depth(cams, pts)[:, 0].numpy()
    return pix, z


def render(cams: Cameras, verts: torch.Tensor, faces: torch.Tensor, colors: np.ndarray | None = None):
    """Full-size renders of one posed mesh (V, 3) in every camera: a list of (h, w, 3) uint8
    flat-shaded colour images (BGR order, as OpenCV writes them; ``colors`` (V, 3) RGB in
    [0, 1]) or, without colours, (h, w) uint8 masks (255 inside)."""
    pix, z = _project(cams, verts)
    f = faces.numpy()
    out = []
    for c in range(len(cams)):
        idx = face_index(pix[c], z[c], f, cams.size[c].numpy())
        if colors is None:
            out.append(np.where(idx >= 0, 255, 0).astype(np.uint8))
            continue
        face_rgb = np.asarray(colors, float)[f].mean(1)
        img = np.zeros(idx.shape + (3,), np.uint8)
        hit = idx >= 0
        img[hit] = np.round(255 * face_rgb[idx[hit]][:, ::-1]).clip(0, 255).astype(np.uint8)
        out.append(img)
    return out


def vertex_colors(verts: torch.Tensor, faces: torch.Tensor, edges: torch.Tensor, cams: Cameras,
                  image, use: np.ndarray | None = None):
    """Per-vertex colour from the visible faces, averaged over views.

    verts (B, V, 3) posed vertices (mm) of B keyframes; image(b, c) -> (h, w, 3) BGR uint8 image
    of keyframe b in camera c (or None when missing); use (B, C) bool cameras to read.
    -> (colors (V, 3) RGB in [0, 1], seen (V,) bool)."""
    B, V = verts.shape[:2]
    f = faces.numpy()
    total = np.zeros((V, 3))
    count = np.zeros(V)
    for b in range(B):
        pix, z = _project(cams, verts[b])
        for c in range(len(cams)):
            if use is not None and not use[b, c]:
                continue
            img = image(b, c)
            if img is None:
                continue
            if img.shape[:2] != (int(cams.size[c, 1]), int(cams.size[c, 0])):
                raise ValueError(f"image of keyframe {b}, camera {cams.names[c]} is "
                                 f"{img.shape[1]}x{img.shape[0]}, the calibration says "
                                 f"{int(cams.size[c, 0])}x{int(cams.size[c, 1])}")
            idx = face_index(pix[c], z[c], f, cams.size[c].numpy())
            hit = idx >= 0
            rgb = img[hit][:, ::-1].astype(float) / 255.0 if img.ndim == 3 else \
                np.repeat(img[hit][:, None].astype(float) / 255.0, 3, 1)
            corners = f[idx[hit]]                          # (P, 3) vertices of each pixel's face
            for k in range(3):
                np.add.at(total, corners[:, k], rgb)
                np.add.at(count, corners[:, k], 1.0)
    seen = count > 0
    colors = np.zeros((V, 3))
    colors[seen] = total[seen] / count[seen, None]
    if not seen.any():
        raise ValueError("no vertex is visible in any image: check the images and the poses")
    known = seen.copy()
    e = edges.numpy()
    for _ in range(50):  # fill unseen vertices from their neighbours along the mesh edges
        if known.all():
            break
        acc, n = np.zeros((V, 3)), np.zeros(V)
        for a, b in ((e[:, 0], e[:, 1]), (e[:, 1], e[:, 0])):
            ok = known[b] & ~known[a]
            np.add.at(acc, a[ok], colors[b[ok]])
            np.add.at(n, a[ok], 1.0)
        new = n > 0
        colors[new] = acc[new] / n[new, None]
        known |= new
    colors[~known] = colors[seen].mean(0)
    return colors, seen


def avatar_colors(template, shape, pose, cameras: Cameras, image):
    """The texture stage for a fitted avatar: posed keyframes (``pose`` of B keyframes) ->
    (colors (V, 3) RGB in [0, 1], seen (V,) bool); image(b, c) as in :func:`vertex_colors`."""
    from cortexkit.tools.avatar.model import forward

    with torch.no_grad():
        verts, _, _ = forward(template, shape, pose)
    return vertex_colors(verts, template.faces, template.edges, cameras, image)


def crop_mask(mask: np.ndarray, crop, size: int) -> np.ndarray:
    """A full-size mask (H, W) coverage in [0, 1] -> the (size, size) crop (x0, y0, scale) by area
    averaging (the crop's square of size / scale image pixels, zero outside the image)."""
    import cv2

    x0, y0, s = (float(v) for v in crop)
    side = max(1, int(round(size / s)))
    ix, iy = int(round(x0 + 0.5)), int(round(y0 + 0.5))  # pixel i spans [i - .5, i + .5)
    h, w = mask.shape
    roi = np.zeros((side, side), np.float32)
    xa, xb, ya, yb = max(ix, 0), min(ix + side, w), max(iy, 0), min(iy + side, h)
    if xa < xb and ya < yb:
        roi[ya - iy:yb - iy, xa - ix:xb - ix] = mask[ya:yb, xa:xb]
    return cv2.resize(roi, (size, size), interpolation=cv2.INTER_AREA)


def masks_from_files(read, crops: torch.Tensor, size: int) -> torch.Tensor:
    """read(f, c) -> (H, W) mask of frame f, camera c; crops (F, C, 3) -> (F, C, size, size)."""
    F, C = crops.shape[:2]
    out = np.zeros((F, C, size, size), np.float32)
    for f in range(F):
        for c in range(C):
            out[f, c] = crop_mask(read(f, c), crops[f, c].tolist(), size)
    return torch.from_numpy(out)


def synthetic_colors(rest: torch.Tensor) -> np.ndarray:
    """A smooth hidden colour field over the rest vertices (V, 3) -> (V, 3) RGB in [0.1, 0.9]."""
    v = rest.double().numpy()
    u = (v - v.min(0)) / np.ptp(v, 0).clip(min=1e-9)
    return 0.5 + 0.4 * np.stack([np.sin(2.0 * np.pi * u[:, 0]), np.cos(3.0 * np.pi * u[:, 1]),
                                 np.sin(1.5 * np.pi * u[:, 2] + 1.0)], 1)


def write_renders(cams, vertices, faces, colors, image_dir, mask_dir, progress=None):
    """Images (``colors``) and/or full-size masks of the posed meshes, ``FOLDER/<camera>/NNNNN.png``."""
    import cv2

    for folder, cols in ((image_dir, colors), (mask_dir, None)):
        if folder is None:
            continue
        for name in cams.names:
            os.makedirs(os.path.join(folder, name), exist_ok=True)
        frames = vertices if progress is None else progress(vertices, desc="render", unit="frame")
        for f, verts in enumerate(frames):
            for name, img in zip(cams.names, render(cams, verts, faces, cols)):
                path = os.path.join(folder, name, f"{f:05d}.png")
                if not cv2.imwrite(path, img):
                    raise CortexError(f"{path}: cannot write the image")
