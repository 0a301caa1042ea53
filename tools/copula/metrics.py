"""Evaluation: log Z by importance sampling, W2 on the Gaussian scale, Kendall-tau error, KS.

The CDC's classifier ratio integrates to one only at the optimum, so its raw log-likelihood is
not a likelihood. log Z = log E_q[p(z) / q(z)] with p(z) = c(Phi(z)) prod phi(z_j) the model's
density on the Gaussian scale and the proposal q = 0.5 N(0, R_hat) + 0.5 N(0, I); the normalised
log-likelihood is raw - log Z, and the effective sample size (sum w)^2 / sum w^2 says how far to
trust it (flagged below 1 %).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import optimize, special, stats


@dataclass
class LogZ:
    log_z: float
    ess: float          # effective sample size
    ess_fraction: float
    draws: int
    stderr: float       # delta-method standard error of log Z

    @property
    def trusted(self) -> bool:
        return self.ess_fraction >= 0.01


def importance_log_z(log_c_z: Callable[[np.ndarray], np.ndarray], corr: np.ndarray, draws: int,
                     rng: np.random.Generator, chunk: int = 65536,
                     progress: Callable | None = None) -> LogZ:
    """log Z of exp(log_c_z(z)) prod phi(z_j) over R^d, ``draws`` from 0.5 N(0, corr) + 0.5 N(0, I)."""
    d = len(corr)
    L = np.linalg.cholesky(corr)
    _, logdet = np.linalg.slogdet(corr)
    inv = np.linalg.inv(corr)
    logw = []
    chunks = range(0, draws, chunk)
    for start in (progress(chunks, desc="log Z") if progress else chunks):
        m = min(chunk, draws - start)
        e = rng.standard_normal((m, d))
        pick = rng.random(m) < 0.5
        z = np.where(pick[:, None], e @ L.T, e)
        sq = (z * z).sum(1)
        log_std = -0.5 * sq - 0.5 * d * np.log(2 * np.pi)
        log_corr = -0.5 * np.einsum("ij,jk,ik->i", z, inv, z) - 0.5 * logdet - 0.5 * d * np.log(2 * np.pi)
        log_q = np.logaddexp(log_corr, log_std) + np.log(0.5)
        logw.append(log_c_z(z) + log_std - log_q)
    lw = np.concatenate(logw)
    lw = np.where(np.isfinite(lw), lw, -np.inf)
    log_z = special.logsumexp(lw) - np.log(draws)
    w = np.exp(lw - lw.max())
    ess = float(w.sum() ** 2 / (w ** 2).sum())
    rel = np.exp(lw - log_z)
    stderr = float(rel.std() / np.sqrt(draws))
    return LogZ(float(log_z), ess, ess / draws, draws, stderr)


def w2_gaussian(z_a: np.ndarray, z_b: np.ndarray) -> float:
    """Exact W2 between two equal-size (n, d) clouds: optimal assignment, squared Euclidean cost."""
    if len(z_a) != len(z_b):
        raise ValueError("W2 compares equal sample sizes")
    cost = ((z_a[:, None, :] - z_b[None, :, :]) ** 2).sum(-1)
    rows, cols = optimize.linear_sum_assignment(cost)
    return float(np.sqrt(cost[rows, cols].mean()))


def kendall_matrix(u: np.ndarray) -> np.ndarray:
    """(d, d) Kendall-tau matrix of (n, d) data."""
    d = u.shape[1]
    tau = np.eye(d)
    for i in range(d):
        for j in range(i + 1, d):
            tau[i, j] = tau[j, i] = stats.kendalltau(u[:, i], u[:, j])[0]
    return tau


def tau_frobenius(u_a: np.ndarray, u_b: np.ndarray) -> float:
    """Frobenius norm of the difference of the Kendall-tau matrices."""
    return float(np.linalg.norm(kendall_matrix(u_a) - kendall_matrix(u_b)))


def ks_uniform(u: np.ndarray) -> np.ndarray:
    """(d,) Kolmogorov-Smirnov distance of each column of (n, d) u against U(0, 1)."""
    n = len(u)
    s = np.sort(u, axis=0)
    i = np.arange(1, n + 1)[:, None]
    return np.maximum(i / n - s, s - (i - 1) / n).max(0)
