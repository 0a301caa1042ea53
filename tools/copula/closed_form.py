"""Closed-form copulas: exact log-densities and samplers.

Families (``d`` dimensions unless said): ``gaussian`` (equicorrelation ``rho`` or a full matrix),
``student`` (``rho``, ``nu``), ``clayton`` (``theta`` > 0), ``gumbel`` (``theta`` >= 1), ``frank``
(``theta`` > 0), each optionally ``survival`` (u -> 1 - u), and mixtures of any of them with
weights. Archimedean densities use c(u) = psi^(d)(sum_i phi(u_i)) prod_i phi'(u_i) with the d-th
generator derivative in closed form; samplers are Marshall-Olkin (Gamma, positive stable and
log-series frailties).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special, stats

FAMILIES = ("independence", "gaussian", "student", "clayton", "gumbel", "frank")
_EPS = 1e-300


@dataclass
class Copula:
    """One closed-form copula. ``rho`` is a scalar (equicorrelation) or a (d, d) matrix."""

    family: str
    dim: int
    theta: float = 1.0
    rho: float | list = 0.0
    nu: float = 4.0
    survival: bool = False

    def corr(self) -> np.ndarray:
        r = np.asarray(self.rho, dtype=np.float64)
        if r.ndim == 0:
            return (1 - r) * np.eye(self.dim) + r * np.ones((self.dim, self.dim))
        return r

    # ------------------------------------------------------------------ density
    def logpdf(self, u: np.ndarray) -> np.ndarray:
        """(rows, d) u in (0,1)^d -> (rows,) exact log c(u)."""
        u = np.clip(np.asarray(u, dtype=np.float64), 1e-12, 1 - 1e-12)
        if self.survival:
            u = 1.0 - u
        f = self.family
        if f == "independence":
            return np.zeros(len(u))
        if f == "gaussian":
            z = special.ndtri(u)
            R = self.corr()
            return (stats.multivariate_normal(np.zeros(self.dim), R).logpdf(z).reshape(-1)
                    - stats.norm.logpdf(z).sum(1))
        if f == "student":
            x = stats.t.ppf(u, self.nu)
            R = self.corr()
            return (stats.multivariate_t(np.zeros(self.dim), R, df=self.nu).logpdf(x).reshape(-1)
                    - stats.t.logpdf(x, self.nu).sum(1))
        if f in ("clayton", "gumbel", "frank"):
            return _archimedean_logpdf(f, self.theta, u)
        raise ValueError(f"unknown family {f!r}")

    # ------------------------------------------------------------------ sampling
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, d) draws from the copula."""
        d, f = self.dim, self.family
        if f == "independence":
            u = rng.random((n, d))
        elif f == "gaussian":
            L = np.linalg.cholesky(self.corr())
            u = special.ndtr(rng.standard_normal((n, d)) @ L.T)
        elif f == "student":
            L = np.linalg.cholesky(self.corr())
            w = rng.chisquare(self.nu, (n, 1)) / self.nu
            u = stats.t.cdf(rng.standard_normal((n, d)) @ L.T / np.sqrt(w), self.nu)
        else:
            e = rng.exponential(size=(n, d))
            th = self.theta
            if f == "clayton":
                v = rng.gamma(1.0 / th, size=(n, 1))
                u = (1.0 + e / v) ** (-1.0 / th)
            elif f == "gumbel":
                v = _positive_stable(1.0 / th, n, rng)[:, None]
                u = np.exp(-((e / v) ** (1.0 / th)))
            elif f == "frank":
                v = stats.logser.rvs(1.0 - math.exp(-th), size=(n, 1), random_state=rng)
                u = -np.log1p(np.exp(-e / v) * math.expm1(-th)) / th
            else:
                raise ValueError(f"unknown family {f!r}")
        u = np.clip(u, 1e-12, 1 - 1e-12)
        return 1.0 - u if self.survival else u

    def describe(self) -> dict:
        out = {"family": self.family, "dim": self.dim, "survival": self.survival}
        if self.family in ("clayton", "gumbel", "frank"):
            out["theta"] = self.theta
        if self.family in ("gaussian", "student"):
            out["rho"] = self.rho
        if self.family == "student":
            out["nu"] = self.nu
        return out


@dataclass
class Mixture:
    """A finite mixture of copulas: c(u) = sum_m w_m c_m(u) (a mixture of copulas is a copula)."""

    components: list[Copula]
    weights: list[float] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return self.components[0].dim

    def logpdf(self, u: np.ndarray) -> np.ndarray:
        w = np.asarray(self.weights, dtype=np.float64)
        parts = np.stack([c.logpdf(u) for c in self.components], 1) + np.log(w)[None]
        return special.logsumexp(parts, axis=1)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        w = np.asarray(self.weights, dtype=np.float64)
        which = rng.choice(len(w), size=n, p=w / w.sum())
        out = np.empty((n, self.dim))
        for m, comp in enumerate(self.components):
            idx = np.flatnonzero(which == m)
            if idx.size:
                out[idx] = comp.sample(idx.size, rng)
        return out

    def describe(self) -> dict:
        return {"mixture": [{"weight": float(w), **c.describe()}
                            for w, c in zip(self.weights, self.components)]}


THETA_MAX = {"clayton": 200.0, "gumbel": 100.0, "frank": 400.0}


def check(copula: Copula) -> None:
    """Raise ValueError when the parameters are outside the family's range."""
    f, th = copula.family, copula.theta
    if f not in FAMILIES:
        raise ValueError(f"unknown copula family {f!r} (known: {', '.join(FAMILIES)})")
    if copula.dim < 2:
        raise ValueError("a copula needs at least 2 dimensions")
    for key in ("theta", "rho", "nu"):
        value = getattr(copula, key, None)
        if isinstance(value, (int, float)) and not math.isfinite(value):
            raise ValueError(f"{f} needs a finite {key}, got {value}")
    # Past these the family is numerically the comonotone copula (Kendall's tau > 0.99): the
    # density overflows and the sampler returns the same value in every column.
    top = THETA_MAX.get(f)
    if top is not None and isinstance(th, (int, float)) and th > top:
        raise ValueError(f"{f} needs theta <= {top:g} (Kendall's tau above 0.99 is numerically "
                         f"comonotone), got {th:g}")
    if f == "clayton" and not th > 0:
        raise ValueError("clayton needs theta > 0")
    if f == "gumbel" and not th >= 1:
        raise ValueError("gumbel needs theta >= 1")
    if f == "frank" and not th > 0:
        raise ValueError("frank needs theta > 0 (the multivariate Frank copula)")
    if f in ("gaussian", "student"):
        R = copula.corr()
        if R.shape != (copula.dim, copula.dim) or np.linalg.eigvalsh(R).min() <= 0:
            raise ValueError("rho must give a positive-definite correlation matrix")
        if f == "student" and not copula.nu > 0:
            raise ValueError("student needs nu > 0")


# ---------------------------------------------------------------------- Archimedean internals

def _positive_stable(alpha: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) draws of S with E exp(-t S) = exp(-t^alpha), 0 < alpha <= 1 (Kanter / CMS)."""
    if alpha >= 1.0:
        return np.ones(n)
    w = rng.uniform(0, math.pi, n)
    e = rng.exponential(size=n)
    a = (np.sin(alpha * w) / np.sin(w) ** (1 / alpha)) ** (alpha / (1 - alpha)) \
        * np.sin((1 - alpha) * w)
    return (a / e) ** ((1 - alpha) / alpha)


def _archimedean_logpdf(family: str, theta: float, u: np.ndarray) -> np.ndarray:
    d = u.shape[1]
    if family == "clayton":
        s = (u ** -theta).sum(1) - d + 1
        return (np.sum(np.log1p(theta * np.arange(1, d)))
                - (1 + theta) * np.log(u).sum(1) - (d + 1 / theta) * np.log(s))
    if family == "gumbel":
        a = 1.0 / theta
        lu = -np.log(u)                      # -log u_i > 0
        phi = lu ** theta                    # generator phi(u) = (-log u)^theta
        t = phi.sum(1)
        # log |phi'(u)| = log theta + (theta - 1) log(-log u) - log u
        log_dphi = (math.log(theta) + (theta - 1) * np.log(lu) + lu).sum(1)
        # psi(t) = exp(-s), s = t^a; psi^(d)(t) = exp(-s) t^-d P_d(s), P_{k+1} = a s P' - (a s + k) P
        poly = np.array([1.0])               # coefficients in increasing powers of s
        for k in range(d):
            deriv = np.polynomial.polynomial.polyder(poly) if len(poly) > 1 else np.array([0.0])
            nxt = np.zeros(len(poly) + 1)
            nxt[1:len(deriv) + 1] += a * deriv          # a s P'
            nxt[1:] -= a * poly                         # - a s P
            nxt[:len(poly)] -= k * poly                 # - k P
            poly = nxt
        s = t ** a
        val = np.polynomial.polynomial.polyval(s, poly) * (-1) ** d   # psi^(d) has sign (-1)^d
        return -s - d * np.log(t) + np.log(np.maximum(val, _EPS)) + log_dphi
    if family == "frank":
        # phi(u) = -log((e^{-theta u} - 1)/(e^{-theta} - 1)); psi^(d)(t) = (-1)^d/theta Li_{1-d}(c e^{-t})
        c = -math.expm1(-theta)
        x = np.expm1(-theta * u) / math.expm1(-theta)          # = e^{-phi(u)}
        z = c * np.prod(x, axis=1)                              # c e^{-t}
        log_dphi = (math.log(theta) - theta * u - np.log(-np.expm1(-theta * u))).sum(1)
        n = d - 1                                              # Li_{-n}(z) = sum_k k! S(n+1,k+1) r^{k+1}
        r = z / (1 - z)
        li = np.zeros_like(z)
        for k in range(n + 1):
            li += math.factorial(k) * _stirling2(n + 1, k + 1) * r ** (k + 1)
        return np.log(np.maximum(li, _EPS)) - math.log(theta) + log_dphi
    raise ValueError(family)


def _stirling2(n: int, k: int) -> int:
    return sum((-1) ** i * math.comb(k, i) * (k - i) ** n for i in range(k + 1)) // math.factorial(k)


def parse_spec(spec: str, dim: int) -> Copula | Mixture:
    """A copula from text: ``clayton:theta=3``, ``student:rho=0.6,nu=4``, ``gumbel:theta=2,survival``,
    or a mixture ``0.5*clayton:theta=3+0.5*gumbel:theta=2,survival``."""
    parts = [p.strip() for p in spec.split("+") if p.strip()]
    if not parts:
        raise ValueError("empty copula specification")
    comps, weights = [], []
    for part in parts:
        weight = 1.0
        if "*" in part:
            w, part = part.split("*", 1)
            weight = float(w)
        name, _, params = part.partition(":")
        kwargs: dict = {}
        for item in filter(None, (p.strip() for p in params.split(","))):
            key, eq, value = item.partition("=")
            if key == "survival" and not eq:
                kwargs["survival"] = True
            elif key in ("theta", "rho", "nu"):
                kwargs[key] = float(value)
            else:
                raise ValueError(f"unknown copula parameter {item!r} (theta, rho, nu, survival)")
        comp = Copula(name.strip(), dim, **kwargs)
        check(comp)
        comps.append(comp)
        weights.append(weight)
    if len(comps) == 1 and "*" not in parts[0]:
        return comps[0]
    if any(not (w > 0 and math.isfinite(w)) for w in weights):
        raise ValueError("mixture weights must be positive and finite")
    total = sum(weights)
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"mixture weights sum to {total:g}; they must sum to 1")
    return Mixture(comps, [w / total for w in weights])


def transform_margins(u: np.ndarray, margins: str) -> np.ndarray:
    """(n, d) u -> data with ``uniform``, standard ``normal`` or unit ``exponential`` marginals."""
    if margins == "uniform":
        return u
    if margins == "normal":
        return special.ndtri(u)
    if margins == "exponential":
        return -np.log1p(-u)
    raise ValueError(f"unknown margins {margins!r}")
