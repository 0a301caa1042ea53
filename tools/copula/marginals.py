"""Marginals: the empirical CDF of the training split, and the Gaussian scale.

Pseudo-observations of the training rows are u = rank / (n + 1) with ties broken at random (with
the seed) or averaged. New points go through the interpolated ECDF: linear between the distinct
training values (at the mean rank of their ties), clipped to [1/(n+1), n/(n+1)]. The optional KDE
marginal is a Gaussian kernel density with reflection at the observed range (boundary-corrected),
integrated on a grid, so that u, its inverse and the data-space density all come from one smooth
CDF.

Discrete columns (integer levels, categorical codes) keep a step CDF: knots are the levels v_1 <
... < v_m and F_i = (count of training values <= v_i) / n. Training rows are spread over their
step by the distributional transform u = F_{i-1} + V (F_i - F_{i-1}), V ~ U(0, 1) seeded (the
continuous extension of the copula literature: the copula of the extended variables is a copula of
the discrete ones); new rows go to the middle of their step, (F_{i-1} + F_i) / 2; samples go back
through the generalised inverse, the smallest level with F_i >= u, so only levels seen in training
come out. The data-space "density" of a discrete column is its probability mass F_i - F_{i-1}.

With fit --input cube the rows are already pseudo-observations: ``uniform`` marginals (the
identity on [0, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

CLIP_Z = 1e-5  # z = Phi^-1(clip(u, 1e-5, 1 - 1e-5)), as the authors do


@dataclass
class Marginals:
    """Per-column marginal CDFs as knot tables: ``knots_x[j]`` (m_j,) increasing, ``knots_u[j]``.

    ``kind`` is ``ecdf`` or ``kde``; ``n`` the number of training rows. For ``kde`` the knots are a
    fine grid of the smoothed CDF; for ``ecdf`` the distinct training values at their mean rank / (n+1).
    """

    kind: str
    n: int
    knots_x: list[np.ndarray]
    knots_u: list[np.ndarray]
    discrete: list[bool] | None = None   # per column: a step CDF over levels (see the module doc)

    def __post_init__(self):
        if self.discrete is None:
            self.discrete = [False] * len(self.knots_x)

    @property
    def dim(self) -> int:
        return len(self.knots_x)

    def _steps(self, j: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lower F_{i-1}, upper F_i, is a training level) of column j's step CDF at the (rows,) x;
        a value between two levels gets the step edge below it (lower = upper)."""
        levels, upper = self.knots_x[j], self.knots_u[j]
        lower = np.concatenate([[0.0], upper[:-1]])
        idx = np.searchsorted(levels, x, side="right") - 1
        inside = idx >= 0
        safe = np.clip(idx, 0, len(levels) - 1)
        exact = inside & (levels[safe] == x)
        hi = np.where(inside, upper[safe], 0.0)
        lo = np.where(exact, lower[safe], hi)
        return lo, hi, exact

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """(rows, d) data -> (rows, d) u in [1/(n+1), n/(n+1)] by the interpolated CDF (a discrete
        column: the middle of the value's step)."""
        x = np.asarray(x, dtype=np.float64)
        lo, hi = 1.0 / (self.n + 1), self.n / (self.n + 1)
        out = np.empty_like(x)
        for j in range(self.dim):
            if self.discrete[j]:
                a, b, _ = self._steps(j, x[:, j])
                out[:, j] = 0.5 * (a + b)
            else:
                out[:, j] = np.interp(x[:, j], self.knots_x[j], self.knots_u[j])
        return np.clip(out, lo, hi)

    def extend(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(rows, d) data -> (rows, d) u with each discrete column spread uniformly over its step
        (the distributional transform, seeded); continuous columns as :meth:`cdf`."""
        u = self.cdf(x)
        for j in range(self.dim):
            if self.discrete[j]:
                a, b, _ = self._steps(j, np.asarray(x[:, j], dtype=np.float64))
                u[:, j] = a + rng.random(len(u)) * (b - a)
        return u

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """(rows, d) u -> (rows, d) data by the inverse of the interpolated CDF (empirical quantile);
        a discrete column: the smallest level whose F reaches u."""
        u = np.asarray(u, dtype=np.float64)
        out = np.empty_like(u)
        for j in range(self.dim):
            if self.discrete[j]:
                idx = np.searchsorted(self.knots_u[j], u[:, j], side="left")
                out[:, j] = self.knots_x[j][np.clip(idx, 0, len(self.knots_x[j]) - 1)]
            else:
                out[:, j] = np.interp(u[:, j], self.knots_u[j], self.knots_x[j])
        return out

    def log_density(self, x: np.ndarray) -> np.ndarray:
        """(rows, d) data -> (rows, d) log f_j(x_j): the slope of the interpolated CDF.

        For ``ecdf`` this is a histogram with one bin per gap between distinct training values
        (mass 1/(n+1) per step); outside the training range the density is 0 (log = -inf).
        """
        x = np.asarray(x, dtype=np.float64)
        out = np.empty_like(x)
        for j in range(self.dim):
            if self.discrete[j]:
                a, b, exact = self._steps(j, x[:, j])
                with np.errstate(divide="ignore"):
                    out[:, j] = np.where(exact, np.log(np.maximum(b - a, 1e-300)), -np.inf)
                continue
            kx, ku = self.knots_x[j], self.knots_u[j]
            slope = np.diff(ku) / np.maximum(np.diff(kx), 1e-300)
            idx = np.clip(np.searchsorted(kx, x[:, j], side="right") - 1, 0, len(kx) - 2)
            inside = (x[:, j] >= kx[0]) & (x[:, j] <= kx[-1])
            with np.errstate(divide="ignore"):
                out[:, j] = np.where(inside, np.log(slope[idx]), -np.inf)
        return out


def pseudo_observations(x: np.ndarray, ties: str = "random",
                        rng: np.random.Generator | None = None) -> np.ndarray:
    """(n, d) data -> (n, d) u = rank / (n + 1), ties ``random`` (seeded) or ``average``."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    u = np.empty_like(x)
    rng = rng if rng is not None else np.random.default_rng(0)
    for j in range(d):
        if ties == "average":
            u[:, j] = stats.rankdata(x[:, j], method="average") / (n + 1)
        elif ties == "random":
            order = np.lexsort((rng.random(n), x[:, j]))
            ranks = np.empty(n)
            ranks[order] = np.arange(1, n + 1)
            u[:, j] = ranks / (n + 1)
        else:
            raise ValueError(f"ties must be random or average, not {ties!r}")
    return u


def fit_ecdf(x: np.ndarray) -> Marginals:
    """The interpolated ECDF of the (n, d) training data."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    knots_x, knots_u = [], []
    for j in range(x.shape[1]):
        values, counts = np.unique(x[:, j], return_counts=True)
        ends = np.cumsum(counts)
        mean_rank = ends - (counts - 1) / 2.0  # mean of the tied ranks
        knots_x.append(values)
        knots_u.append(mean_rank / (n + 1))
    return Marginals("ecdf", n, knots_x, knots_u)


def fit_marginals(x: np.ndarray, kind: str = "ecdf", discrete: list[bool] | None = None) -> Marginals:
    """Marginals of the (n, d) training data: ``ecdf`` or ``kde`` for the continuous columns, a
    step CDF over the levels for the ``discrete`` ones; ``uniform`` (the identity on [0, 1]) for
    rows that are already pseudo-observations."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    discrete = list(discrete) if discrete is not None else [False] * d
    if kind == "uniform":
        return Marginals("uniform", n, [np.array([0.0, 1.0])] * d, [np.array([0.0, 1.0])] * d, [False] * d)
    base = fit_kde(x) if kind == "kde" else fit_ecdf(x)
    for j in np.flatnonzero(discrete):
        levels, counts = np.unique(x[:, j], return_counts=True)
        base.knots_x[j], base.knots_u[j] = levels, np.cumsum(counts) / n
    base.discrete = discrete
    return base


def training_u(marg: Marginals, x: np.ndarray, ties: str, rng: np.random.Generator) -> np.ndarray:
    """(n, d) pseudo-observations of the training rows: rank / (n + 1) (ECDF), the smoothed CDF
    (KDE) or the rows themselves (uniform) for continuous columns; the distributional transform
    for discrete ones."""
    x = np.asarray(x, dtype=np.float64)
    if marg.kind == "uniform":
        return x.copy()
    u = marg.cdf(x) if marg.kind == "kde" else pseudo_observations(x, ties, rng)
    ext = marg.extend(x, rng) if any(marg.discrete) else None
    for j in np.flatnonzero(marg.discrete):
        u[:, j] = ext[:, j]
    return u


def fit_kde(x: np.ndarray, grid: int = 2048, bandwidth: float | None = None) -> Marginals:
    """Boundary-corrected (reflected) Gaussian KDE CDFs of the (n, d) data on ``grid`` knots.

    The bandwidth is Silverman's rule per column unless given (as a multiple of it).
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    knots_x, knots_u = [], []
    lo_u, hi_u = 1.0 / (n + 1), n / (n + 1)
    for j in range(x.shape[1]):
        col = x[:, j]
        a, b = col.min(), col.max()
        sd = min(col.std(), stats.iqr(col) / 1.349) or col.std() or 1.0
        h = 0.9 * sd * n ** -0.2 * (bandwidth or 1.0)
        g = np.linspace(a, b, grid)
        # reflected kernel CDF: mass of N(x_i, h) + N(2a - x_i, h) + N(2b - x_i, h) left of g
        sample = col if n <= 4000 else np.random.default_rng(0).choice(col, 4000, replace=False)
        cdf = np.zeros(grid)
        for centre, sign in ((sample, 1.0), (2 * a - sample, 1.0), (2 * b - sample, 1.0)):
            cdf += special.ndtr((g[:, None] - centre[None, :]) / h).mean(1) * sign
        cdf = (cdf - cdf[0]) / (cdf[-1] - cdf[0])
        cdf = lo_u + (hi_u - lo_u) * np.maximum.accumulate(cdf)
        keep = np.concatenate([[True], np.diff(cdf) > 0])
        knots_x.append(g[keep])
        knots_u.append(cdf[keep])
    return Marginals("kde", n, knots_x, knots_u)


def to_gaussian(u: np.ndarray) -> np.ndarray:
    """(rows, d) u -> z = Phi^-1(clip(u, 1e-5, 1 - 1e-5))."""
    return special.ndtri(np.clip(u, CLIP_Z, 1 - CLIP_Z))


def to_cube(z: np.ndarray) -> np.ndarray:
    """(rows, d) z -> u = Phi(z)."""
    return special.ndtr(z)


def log_phi(z: np.ndarray) -> np.ndarray:
    """(rows,) sum_j log phi(z_j) of (rows, d) z."""
    return -0.5 * (z ** 2).sum(1) - 0.5 * z.shape[1] * np.log(2 * np.pi)
