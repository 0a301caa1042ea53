"""The first-try baseline a tokenizer must beat: k-means on the same 1-s patches, same codebook size.

Two codebooks, as TFDual has: the temporal one is k-means on the raw patches (a token's
reconstruction is its centroid), the frequency one k-means on log|rfft| of the patches (a token's
amplitude is exp of its centroid). Both are tokens-only reconstructions: nothing of the input but
the token id reaches them, as with ``amplitude_nmse_signal`` of the tokenizer
(:mod:`cortexkit.tools.eeg.analysis` has the metric definitions).
"""

from __future__ import annotations

import numpy as np
import torch


def kmeans(points: torch.Tensor, k: int, *, iterations: int = 25,
           generator: torch.Generator | None = None, chunk: int = 8192) -> torch.Tensor:
    """Lloyd's k-means (squared Euclidean) of ``points`` (n, d) -> centroids (k, d).

    Starts from k-means++ seeds (each next seed drawn with probability proportional to its squared
    distance to the nearest seed so far); an empty cluster is re-seeded with the point farthest
    from its centroid, so every centroid stays in use where n >= k."""
    n = points.shape[0]
    centroids = points.new_empty(k, points.shape[1])
    centroids[0] = points[torch.randint(0, n, (1,), generator=generator)]
    closest = (points - centroids[0]).pow(2).sum(-1)
    for j in range(1, k):
        weights = closest.double()
        pick = torch.multinomial(weights / weights.sum(), 1, generator=generator) if weights.sum() > 0 \
            else torch.randint(0, n, (1,), generator=generator)
        centroids[j] = points[pick]
        closest = torch.minimum(closest, (points - centroids[j]).pow(2).sum(-1))
    for _ in range(iterations):
        assign, dist = nearest(points, centroids, chunk=chunk)
        sums = torch.zeros_like(centroids).index_add_(0, assign, points)
        counts = torch.bincount(assign, minlength=k)
        moved = sums / counts.clamp_min(1)[:, None].to(points.dtype)
        centroids = torch.where((counts == 0)[:, None], centroids, moved)
        empty = torch.nonzero(counts == 0).flatten()
        if len(empty) and n >= k:
            far = torch.topk(dist, len(empty)).indices
            centroids[empty] = points[far]
    return centroids


def nearest(points: torch.Tensor, centroids: torch.Tensor, *, chunk: int = 8192):
    """Index (n,) and squared distance (n,) of each point's nearest centroid."""
    index, distance = [], []
    c_norm = centroids.pow(2).sum(-1)
    for i in range(0, points.shape[0], chunk):
        p = points[i:i + chunk]
        d = p.pow(2).sum(-1, keepdim=True) - 2 * p @ centroids.t() + c_norm
        best = d.min(dim=-1)
        index.append(best.indices)
        distance.append(best.values.clamp_min(0))
    return torch.cat(index), torch.cat(distance)


def _log_amplitude(patches: torch.Tensor) -> torch.Tensor:
    return torch.log(torch.fft.rfft(patches, dim=-1).abs() + 1e-6)


def kmeans_floor(train: np.ndarray, validation: np.ndarray, k: int, *, seed: int = 0,
                 iterations: int = 25) -> dict[str, float]:
    """Fit both k-means codebooks on the patches of ``train`` (N, C, P, L) and reconstruct those of
    ``validation`` (M, C, P, L) from their token ids alone -> time_nmse, amplitude_nmse_signal
    (|rfft| of the temporal centroid) and amplitude_nmse (exp of the log-amplitude centroid); for
    amplitude_nmse_cluster_mean: the mean |rfft| of each temporal cluster's training patches, read by
    token (the k-means analogue of an amplitude head; train's floor check takes the best of the three)."""
    generator = torch.Generator().manual_seed(seed)
    length = train.shape[-1]
    fit = torch.from_numpy(np.ascontiguousarray(train, dtype=np.float32)).reshape(-1, length)
    test = torch.from_numpy(np.ascontiguousarray(validation, dtype=np.float32)).reshape(-1, length)
    centroids_t = kmeans(fit, k, iterations=iterations, generator=generator)
    centroids_f = kmeans(_log_amplitude(fit), k, iterations=iterations, generator=generator)
    assign_test = nearest(test, centroids_t)[0]
    recon = centroids_t[assign_test].double()
    assign_fit = nearest(fit, centroids_t)[0]
    fit_amplitude = torch.fft.rfft(fit.double(), dim=-1).abs()
    counts = torch.bincount(assign_fit, minlength=k).clamp_min(1).double()
    cluster_amplitude = torch.zeros(k, fit_amplitude.shape[-1], dtype=torch.float64).index_add_(
        0, assign_fit, fit_amplitude) / counts[:, None]
    log_amp = centroids_f[nearest(_log_amplitude(test), centroids_f)[0]].double()
    x = test.double()
    amplitude = torch.fft.rfft(x, dim=-1).abs()
    time_var = (x - x.mean(-1, keepdim=True)).pow(2).sum()
    amp_var = (amplitude - amplitude.mean(-1, keepdim=True)).pow(2).sum()
    return {"time_nmse": float((recon - x).pow(2).sum() / time_var),
            "amplitude_nmse_signal": float((torch.fft.rfft(recon, dim=-1).abs() - amplitude)
                                           .pow(2).sum() / amp_var),
            "amplitude_nmse": float((log_amp.exp() - amplitude).pow(2).sum() / amp_var),
            "amplitude_nmse_cluster_mean": float((cluster_amplitude[assign_test] - amplitude)
                                                 .pow(2).sum() / amp_var)}
