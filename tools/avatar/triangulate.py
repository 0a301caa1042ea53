"""Robust multi-view triangulation: confidence-weighted DLT with outlier rejection.

For every point: all camera pairs that see it are triangulated (linear DLT on undistorted,
normalised coordinates, one batched SVD); the pair whose point has the most views within
``threshold`` pixels (ties: the smallest truncated error) gives the inlier set, then a DLT over
the inliers weighted by the detection confidences, and one more inlier update and refit.
This is RANSAC with the minimal samples enumerated (deterministic; ``max_pairs`` caps the
enumeration on big rigs), so it scales to 16+ cameras in milliseconds per frame. Points seen by
fewer than 2 cameras come back NaN with ``n_views`` < 2 (reported, never an error).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import torch

from cortexkit.tools.avatar.camera import Cameras, project, undistort_points


@dataclass
class TriangulationConfig:
    threshold: float = 10.0     # inlier reprojection error, pixels
    min_confidence: float = 0.0  # detections at or below this confidence are ignored
    max_pairs: int = 120        # camera pairs tried per point (all pairs of 16 cameras)
    seed: int = 0


@dataclass
class Triangulation:
    """points (N, 3) (NaN where < 2 views), error (N,) mean inlier reprojection error (px),
    n_views (N,) inlier views, inliers (C, N) bool."""

    points: np.ndarray
    error: np.ndarray
    n_views: np.ndarray
    inliers: np.ndarray


def dlt(P: np.ndarray, xy: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted DLT. P (C, 3, 4) normalised projections, xy (C, N, 2) undistorted normalised
    points, w (C, N) weights (0 = unused) -> (N, 3)."""
    xy = np.nan_to_num(xy)
    rows_x = xy[..., 0, None] * P[:, None, 2] - P[:, None, 0]   # (C, N, 4)
    rows_y = xy[..., 1, None] * P[:, None, 2] - P[:, None, 1]
    A = np.concatenate([rows_x * w[..., None], rows_y * w[..., None]], 0).transpose(1, 0, 2)
    _, _, vt = np.linalg.svd(A)
    h = vt[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return h[:, :3] / h[:, 3:]


def reprojection(cams: Cameras, points: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    """points (N, 3), pixels (C, N, 2) -> (C, N) pixel errors (inf behind a camera, NaN missing)."""
    finite = np.isfinite(points).all(-1)
    safe = np.where(finite[:, None], points, 0.0)
    X = torch.as_tensor(safe, dtype=torch.float64)
    proj = project(cams, X).numpy()
    z = (cams.R.double() @ X.T + cams.tvec.double()[:, :, None])[:, 2].numpy()
    err = np.linalg.norm(proj - pixels, axis=-1)
    err = np.where(z > 0, err, np.inf)
    return np.where(finite[None], err, np.nan)


def _reproject_np(cams: Cameras, X: np.ndarray, pixels: np.ndarray, repeats: int) -> np.ndarray:
    """X (repeats * n, 3) points, pixels (C, n, 2) -> (repeats, C, n) pixel errors (inf behind)."""
    finite = np.isfinite(X).all(-1)
    Xt = torch.as_tensor(np.where(finite[:, None], X, 0.0), dtype=torch.float64)
    proj = project(cams, Xt).numpy().reshape(len(cams), repeats, -1, 2)
    z = (cams.R.double() @ Xt.T + cams.tvec.double()[:, :, None])[:, 2].numpy().reshape(len(cams), repeats, -1)
    err = np.linalg.norm(proj - pixels[:, None], axis=-1)
    err = np.where((z > 0) & finite.reshape(1, repeats, -1), err, np.inf)
    return err.transpose(1, 0, 2)


def _pair_search(cams, P, xy, pixels, seen, pairs, thr) -> np.ndarray:
    """Inlier masks (C, N) from the best two-view hypothesis of every point (exhaustive RANSAC)."""
    C, N = seen.shape
    pa = np.array([a for a, _ in pairs])
    pb = np.array([b for _, b in pairs])
    best_mask = np.zeros((C, N), bool)
    if len(pairs):
        # every (pair, point) two-view DLT as one batch: (n_pairs, N) points, chunked over points
        chunk = max(1, 200_000 // len(pairs))
        for lo in range(0, N, chunk):
            sl = slice(lo, min(N, lo + chunk))
            n = sl.stop - sl.start
            both = seen[pa, sl] & seen[pb, sl]                       # (n_pairs, n)
            rows = []
            for cam in (pa, pb):
                x = xy[cam, sl]                                      # (n_pairs, n, 2)
                Pc = P[cam][:, None]                                 # (n_pairs, 1, 3, 4)
                rows += [x[..., 0, None] * Pc[..., 2, :] - Pc[..., 0, :],
                         x[..., 1, None] * Pc[..., 2, :] - Pc[..., 1, :]]
            A = np.stack(rows, -2).reshape(-1, 4, 4)
            # inhomogeneous two-view DLT (X_w = 1) by its 3x3 normal equations: the same point as
            # the SVD for finite points, 20x faster on 10^5 small systems
            M, b = A[..., :3], A[..., 3]
            normal = np.einsum("nka,nkb->nab", M, M) + 1e-12 * np.eye(3)
            X = np.linalg.solve(normal, -np.einsum("nka,nk->na", M, b)[..., None])[..., 0]
            X = X.reshape(len(pairs), n, 3)
            err = _reproject_np(cams, X.reshape(-1, 3), pixels[:, sl], len(pairs))  # (n_pairs, C, n)
            err = np.where(seen[None, :, sl] & both[:, None], err, np.inf)
            inl = err < thr
            count = np.where(both, inl.sum(1), -1)
            cost = np.minimum(np.nan_to_num(err, nan=thr, posinf=thr), thr).sum(1)
            score = count * (thr * C + 1.0) - cost                     # most inliers, then least cost
            best = score.argmax(0)
            good = count[best, np.arange(n)] >= 2
            best_mask[:, sl] = inl[best, :, np.arange(n)].T & good[None]
    return best_mask


def triangulate(cams: Cameras, pixels: np.ndarray, confidence: np.ndarray | None = None,
                config: TriangulationConfig = TriangulationConfig()) -> Triangulation:
    """pixels (C, N, 2) with NaN where undetected, confidence (C, N) -> :class:`Triangulation`."""
    C, N = pixels.shape[:2]
    conf = np.ones((C, N)) if confidence is None else np.nan_to_num(np.asarray(confidence, float))
    seen = np.isfinite(pixels).all(-1) & (conf > config.min_confidence)
    conf = np.where(seen, np.clip(conf, 1e-3, None), 0.0)
    xy = undistort_points(cams, np.where(seen[..., None], pixels, 0.0))
    P = cams.projection_matrices()
    pairs = list(combinations(range(C), 2))
    if len(pairs) > config.max_pairs:
        rng = np.random.default_rng(config.seed)
        pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), config.max_pairs, replace=False))]
    thr = config.threshold
    # 1. weighted DLT over all views, dropping the worst view while it is off by more than thr
    mask = seen.copy()
    for _ in range(C - 2):
        ok = mask.sum(0) >= 2
        points = np.full((N, 3), np.nan)
        points[ok] = dlt(P, xy[:, ok], conf[:, ok] * mask[:, ok])
        err = np.where(mask, np.nan_to_num(reprojection(cams, points, pixels), nan=np.inf), -1.0)
        worst = err.argmax(0)
        drop = (err[worst, np.arange(N)] > thr) & (mask.sum(0) > 2)
        if not drop.any():
            break
        mask[worst[drop], np.nonzero(drop)[0]] = False
    err = np.nan_to_num(reprojection(cams, points, pixels), nan=np.inf)
    mask = seen & (err < thr)
    # 2. points the greedy pass could not explain (a majority of views off, or 2 views that
    #    disagree) get the exhaustive two-view search
    hard = (seen.sum(0) >= 2) & ((mask.sum(0) < 2) | (mask.sum(0) < 0.5 * seen.sum(0)))
    if hard.any():
        sub = np.nonzero(hard)[0]
        found = _pair_search(cams, P, xy[:, sub], pixels[:, sub], seen[:, sub], pairs, thr)
        mask[:, sub] = found
    best_mask = mask
    mask = best_mask & seen
    points = np.full((N, 3), np.nan)
    for _ in range(2):
        ok = mask.sum(0) >= 2
        if ok.any():
            points[ok] = dlt(P, xy[:, ok], conf[:, ok] * mask[:, ok])
        err = reprojection(cams, points, pixels)
        mask = seen & (np.nan_to_num(err, nan=np.inf) < thr)
    ok = mask.sum(0) >= 2
    points[~ok] = np.nan
    err = reprojection(cams, points, pixels)
    inlier_err = np.where(mask, err, 0.0).sum(0) / np.maximum(mask.sum(0), 1)
    mean_err = np.where(ok, inlier_err, np.nan)
    return Triangulation(points, mean_err, np.where(ok, mask.sum(0), seen.sum(0).clip(max=1)), mask)


def triangulate_frames(cams: Cameras, pixels: np.ndarray, confidence: np.ndarray | None = None,
                       config: TriangulationConfig = TriangulationConfig()) -> Triangulation:
    """pixels (F, C, K, 2), confidence (F, C, K) -> Triangulation with points (F, K, 3),
    error (F, K), n_views (F, K), inliers (F, C, K): all frames solved as one batch."""
    F, C, K = pixels.shape[:3]
    flat = pixels.transpose(1, 0, 2, 3).reshape(C, F * K, 2)
    conf = None if confidence is None else confidence.transpose(1, 0, 2).reshape(C, F * K)
    out = triangulate(cams, flat, conf, config)
    return Triangulation(out.points.reshape(F, K, 3), out.error.reshape(F, K),
                         out.n_views.reshape(F, K),
                         out.inliers.reshape(C, F, K).transpose(1, 0, 2))


def points_table(cams: Cameras, pixels: np.ndarray, confidence: np.ndarray, names: list[str],
                 config: TriangulationConfig = TriangulationConfig()) -> dict:
    """pixels (F, C, K, 2) -> table columns: frame, NAME_x/_y/_z (mm), NAME_error (px), NAME_views."""
    out = triangulate_frames(cams, pixels, confidence, config)
    columns = {"frame": np.arange(pixels.shape[0], dtype=np.int64)}
    for k, name in enumerate(names):
        for a, axis in enumerate("xyz"):
            columns[f"{name}_{axis}"] = out.points[:, k, a]
        columns[f"{name}_error"] = out.error[:, k]
        columns[f"{name}_views"] = out.n_views[:, k].astype(np.int64)
    return columns


def points_from_table(columns: dict, names: list[str]) -> np.ndarray:
    """Table columns (as written by :func:`points_table`) -> (F, K, 3)."""
    missing = [f"{n}_x" for n in names if f"{n}_x" not in columns]
    if missing:
        raise ValueError(f"the points table lacks {', '.join(missing[:5])} (not a triangulate table of these keypoints?)")
    return np.stack([np.stack([np.asarray(columns[f"{n}_{a}"], float) for a in "xyz"], -1) for n in names], 1)
