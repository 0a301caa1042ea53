"""Evaluation: log Z by importance sampling, W2 on the Gaussian scale, Kendall-tau error, KS.

The CDC's classifier ratio integrates to one only at the optimum, so its raw log-likelihood is
not a likelihood. log Z = log E_q[p(z) / q(z)] with p(z) = c(Phi(z)) prod phi(z_j) the model's
density on the Gaussian scale and a Gaussian-mixture proposal q: the issue's 0.5 N(0, R_hat) +
0.5 N(0, I) (``issue_proposal``), or one built from the model itself (``sample_proposal``): a
Gaussian mixture fitted to the model's own samples on the Gaussian scale, covariances inflated,
with the issue's two components kept as a defensive part (so its weights are never more than
1 / defensive-share worse than the issue proposal's anywhere). The normalised log-likelihood is
raw - log Z, and the effective sample size (sum w)^2 / sum w^2 says how far to trust it (flagged
below 1 %). Any fixed proposal gives an unbiased Z; the model's samples only choose it, they are
never reused as IS draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import linalg, optimize, special, stats


@dataclass
class LogZ:
    log_z: float
    ess: float          # effective sample size
    ess_fraction: float
    draws: int
    stderr: float       # delta-method standard error of log Z
    proposal: str = "issue"

    @property
    def trusted(self) -> bool:
        return self.ess_fraction >= 0.01


@dataclass
class Proposal:
    """A Gaussian mixture on R^d: weights (m,), means (m, d), covariances (m, d, d)."""

    name: str
    weights: np.ndarray
    means: np.ndarray
    covs: np.ndarray

    def __post_init__(self):
        self.weights = np.asarray(self.weights, np.float64) / np.sum(self.weights)
        self.chols = np.linalg.cholesky(self.covs)
        self.logdets = 2 * np.log(np.diagonal(self.chols, axis1=1, axis2=2)).sum(1)

    def sample(self, m: int, rng: np.random.Generator) -> np.ndarray:
        e = rng.standard_normal((m, self.means.shape[1]))
        comp = np.searchsorted(np.cumsum(self.weights)[:-1], rng.random(m), side="right")
        z = np.empty_like(e)
        for k in range(len(self.weights)):
            sel = comp == k
            z[sel] = self.means[k] + e[sel] @ self.chols[k].T
        return z

    def log_pdf(self, z: np.ndarray) -> np.ndarray:
        d = z.shape[1]
        parts = []
        for w, mu, L, logdet in zip(self.weights, self.means, self.chols, self.logdets):
            y = linalg.solve_triangular(L, (z - mu).T, lower=True)
            parts.append(np.log(w) - 0.5 * (y * y).sum(0) - 0.5 * logdet - 0.5 * d * np.log(2 * np.pi))
        return special.logsumexp(np.stack(parts), axis=0)


def issue_proposal(corr: np.ndarray) -> Proposal:
    """The issue's proposal 0.5 N(0, corr) + 0.5 N(0, I)."""
    d = len(corr)
    return Proposal("issue", [0.5, 0.5], np.zeros((2, d)), np.stack([corr, np.eye(d)]))


def sample_proposal(z_samples: np.ndarray, corr: np.ndarray, rng: np.random.Generator,
                    components: int = 8, inflate: float = 1.2, defensive: float = 0.2) -> Proposal:
    """A proposal from the model's own (n, d) samples on the Gaussian scale: a ``components``-Gaussian
    mixture (full covariances, EM) with covariances times ``inflate`` (heavier than the samples,
    whose DDPM last step shrinks them), weight 1 - defensive, plus the issue's N(0, corr) and
    N(0, I) with defensive / 2 each."""
    from sklearn.mixture import GaussianMixture

    z_samples = np.asarray(z_samples, np.float64)
    n, d = z_samples.shape
    k = max(1, min(components, n // (5 * (d + 1))))
    gm = GaussianMixture(k, covariance_type="full", reg_covar=1e-4, max_iter=200,
                         random_state=int(rng.integers(2**31 - 1))).fit(z_samples)
    w = np.concatenate([(1 - defensive) * gm.weights_, [defensive / 2, defensive / 2]])
    means = np.concatenate([gm.means_, np.zeros((2, d))])
    covs = np.concatenate([inflate * gm.covariances_, corr[None], np.eye(d)[None]])
    return Proposal("samples", w, means, covs)


def importance_log_z(log_c_z: Callable[[np.ndarray], np.ndarray], corr: np.ndarray, draws: int,
                     rng: np.random.Generator, chunk: int = 65536,
                     progress: Callable | None = None, proposal: Proposal | None = None,
                     target_stderr: float = 0.0) -> LogZ:
    """log Z of exp(log_c_z(z)) prod phi(z_j) over R^d from at most ``draws`` of ``proposal``
    (default the issue's 0.5 N(0, corr) + 0.5 N(0, I)), drawn ``chunk`` at a time and stopping
    early, after at least two chunks, once the standard error of log Z is at most ``target_stderr``
    (0: draw them all). The draws used are in ``LogZ.draws``."""
    q = proposal or issue_proposal(corr)
    d = len(corr)
    logw: list[np.ndarray] = []
    chunk = min(chunk, draws)
    chunks = range(0, draws, chunk)
    done = 0
    for start in (progress(chunks, desc=f"log Z ({q.name})") if progress else chunks):
        z = q.sample(min(chunk, draws - start), rng)
        log_std = -0.5 * (z * z).sum(1) - 0.5 * d * np.log(2 * np.pi)
        logw.append(log_c_z(z) + log_std - q.log_pdf(z))
        done += len(z)
        if target_stderr > 0 and len(logw) >= 2 and _estimate(np.concatenate(logw))[4] <= target_stderr:
            break
    log_z, ess, frac, used, stderr = _estimate(np.concatenate(logw))
    return LogZ(log_z, ess, frac, used, stderr, q.name)


def _estimate(lw: np.ndarray) -> tuple[float, float, float, int, float]:
    """(log Z, ESS, ESS fraction, draws, delta-method SE of log Z) of (draws,) log weights."""
    draws = len(lw)
    lw = np.where(np.isfinite(lw), lw, -np.inf)
    log_z = special.logsumexp(lw) - np.log(draws)
    w = np.exp(lw - lw.max())
    ess = float(w.sum() ** 2 / (w ** 2).sum())
    rel = np.exp(lw - log_z)
    stderr = float(rel.std() / np.sqrt(draws))
    return float(log_z), ess, ess / draws, draws, stderr


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
