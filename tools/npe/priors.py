"""Priors over simulator parameters and the fixed bijection from their support to R^d.

A prior is a product of one-dimensional factors, one per named parameter:

* ``uniform``   U[low, high]            -> u = logit((theta - low) / (high - low))
* ``normal``    N(loc, scale^2)         -> u = (theta - loc) / scale
* ``lognormal`` LogNormal(loc, scale)   -> u = (log(theta) - loc) / scale

The flow models u, so  log q(theta | x) = log q_u(u | x) + log |du/dtheta|, and samples mapped
back through the inverse never leave the prior's support. Under the prior every u is standard
(logistic for boxes, N(0, 1) otherwise), which matters because zuko's splines act on [-5, 5] only
and are the identity outside it. The estimator may use affine maps instead (``box="zscore"``, its
default, and ``lognormal="zscore"``, plain NPE's default): sbi's, with the prior's mean and sd;
samples outside the support are then rejected. Boxes and normals get exactly sbi's
``mcmc_transform``, the map the MF-NPE authors use; for log-normals ``mcmc_transform`` stops at log(theta), which leaves a prior
such as LogNormal(-8, 0.5) in the splines' identity tails where the flow cannot move it (checked:
posterior mean of log theta -0.3 instead of -8.3), so the prior's affine standardisation follows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

KINDS = ("uniform", "normal", "lognormal")

# Keeps logit finite when float32 rounding puts a sample exactly on a box edge.
_EDGE_EPS = 1e-7


@dataclass(frozen=True)
class Factor:
    """One prior dimension. ``a, b`` are (low, high) for uniform, (loc, scale) otherwise."""

    name: str
    kind: str
    a: float
    b: float

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"parameter {self.name!r}: unknown prior {self.kind!r}; use one of {', '.join(KINDS)}")
        if not (math.isfinite(self.a) and math.isfinite(self.b)):
            raise ValueError(f"parameter {self.name!r}: prior bounds must be finite numbers")
        if self.kind == "uniform" and not self.a < self.b:
            raise ValueError(f"parameter {self.name!r}: uniform prior needs low < high, got [{self.a}, {self.b}]")
        if self.kind != "uniform" and not self.b > 0:
            raise ValueError(f"parameter {self.name!r}: {self.kind} prior needs scale > 0, got {self.b}")

    def as_dict(self) -> dict:
        if self.kind == "uniform":
            return {"name": self.name, "dist": "uniform", "low": self.a, "high": self.b}
        return {"name": self.name, "dist": self.kind, "loc": self.a, "scale": self.b}


@dataclass(frozen=True)
class Prior:
    """Product prior over d named parameters, with the fixed bijection to R^d."""

    factors: tuple[Factor, ...] = field(default_factory=tuple)

    # ---------------------------------------------------------------- construction
    @staticmethod
    def from_spec(spec) -> "Prior":
        """Parse a spec: a list (or ``{"parameters": [...]}``) of entries such as
        ``{name: mu, dist: uniform, low: 0.1, high: 3}``, ``{name: beta, dist: lognormal, loc: -0.9,
        scale: 0.5}``, ``{name: w, dist: normal, loc: 0, scale: 1}``. ``count: k`` repeats an entry k
        times with names ``name_1..name_k``."""
        if isinstance(spec, dict):
            spec = spec.get("parameters", spec.get("prior"))
        if not isinstance(spec, list) or not spec:
            raise ValueError("prior spec must be a non-empty list of parameters (or {parameters: [...]})")
        factors = []
        for i, entry in enumerate(spec):
            if not isinstance(entry, dict):
                raise ValueError(f"prior entry {i} must be a mapping with name, dist and its parameters")
            name = str(entry.get("name", f"theta_{i}"))
            kind = str(entry.get("dist", "")).lower().replace("-", "").replace("_", "")
            kind = {"box": "uniform", "boxuniform": "uniform", "gaussian": "normal", "lognorm": "lognormal"}.get(kind, kind)
            try:
                if kind == "uniform":
                    a, b = float(entry["low"]), float(entry["high"])
                else:
                    a, b = float(entry["loc"]), float(entry["scale"])
            except KeyError as missing:
                raise ValueError(f"prior entry {name!r} ({kind or 'no dist'}) lacks key {missing}") from None
            count = int(entry.get("count", 1))
            if count < 1:
                raise ValueError(f"prior entry {name!r}: count must be >= 1")
            names = [name] if count == 1 else [f"{name}_{k + 1}" for k in range(count)]
            factors.extend(Factor(n, kind, a, b) for n in names)
        names = [f.name for f in factors]
        if len(set(names)) != len(names):
            raise ValueError(f"prior parameter names must be unique, got {names}")
        return Prior(tuple(factors))

    def to_spec(self) -> list[dict]:
        return [f.as_dict() for f in self.factors]

    # ---------------------------------------------------------------- basic facts
    @property
    def dim(self) -> int:
        return len(self.factors)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.factors]

    def _col(self, kind: str) -> torch.Tensor:
        return torch.tensor([f.kind == kind for f in self.factors])

    def _ab(self, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.tensor([f.a for f in self.factors], dtype=dtype)
        b = torch.tensor([f.b for f in self.factors], dtype=dtype)
        return a, b

    # ---------------------------------------------------------------- density and sampling
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw n parameter vectors. Returns (n, d) float32."""
        a, b = self._ab()
        z = torch.randn(n, self.dim, generator=generator, dtype=torch.float64)
        r = torch.rand(n, self.dim, generator=generator, dtype=torch.float64)
        uni, logn = self._col("uniform"), self._col("lognormal")
        out = torch.where(uni, a + (b - a) * r, a + b * z)
        out = torch.where(logn, torch.exp(out), out)
        return out.float()

    def in_support(self, theta: torch.Tensor) -> torch.Tensor:
        """(n, d) -> (n,) bool: inside the closed support of every factor and finite."""
        a, b = self._ab(theta.dtype)
        uni, logn = self._col("uniform"), self._col("lognormal")
        ok = torch.isfinite(theta)
        ok &= ~uni | ((theta >= a) & (theta <= b))
        ok &= ~logn | (theta > 0)
        return ok.all(dim=-1)

    def log_prob(self, theta: torch.Tensor) -> torch.Tensor:
        """(n, d) -> (n,) log p(theta); -inf outside the support."""
        t = theta.double()
        a, b = self._ab()
        uni, logn = self._col("uniform"), self._col("lognormal")
        lp_uni = -torch.log(b - a).expand_as(t)
        y = torch.where(logn, torch.log(t.clamp_min(1e-300)), t)
        lp_gauss = -0.5 * ((y - a) / b) ** 2 - torch.log(b) - 0.5 * math.log(2 * math.pi)
        lp_gauss = lp_gauss - torch.where(logn, y, torch.zeros_like(y))
        lp = torch.where(uni, lp_uni, lp_gauss).sum(-1)
        lp = torch.where(self.in_support(theta), lp, torch.full_like(lp, -math.inf))
        return lp.to(theta.dtype)

    # ---------------------------------------------------------------- the bijection support -> R^d
    @property
    def has_box(self) -> bool:
        """Whether some parameter has a bounded (uniform) prior."""
        return any(f.kind == "uniform" for f in self.factors)

    @property
    def has_lognormal(self) -> bool:
        """Whether some parameter has a log-normal prior (support theta > 0)."""
        return any(f.kind == "lognormal" for f in self.factors)

    def _lognormal_moments(self, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean, sd) of each factor read as LogNormal(a, b): exp(a + b^2/2), mean sqrt(exp(b^2) - 1)."""
        a, b = self._ab(torch.float64)
        mean = torch.exp(a + b**2 / 2)
        return mean.to(dtype), (mean * torch.sqrt(torch.expm1(b**2))).to(dtype)

    def to_unconstrained(self, theta: torch.Tensor, box: str = "logit",
                         lognormal: str = "log") -> tuple[torch.Tensor, torch.Tensor]:
        """theta (n, d) -> (u (n, d), log|det du/dtheta| (n,)).

        Box, ``box="logit"`` (the paper's map onto R): s = (theta - low)/(high - low),
        u = log s - log(1 - s), log|du/dtheta| = -log s - log(1-s) - log(high-low).
        Box, ``box="zscore"`` (sbi's default, affine: the flow's mass can leak past the bounds):
        u = (theta - (low + high)/2) / ((high - low)/sqrt(12)), the prior's mean and sd.
        Log-normal, ``lognormal="log"``: u = (log theta - loc)/scale, log|du/dtheta| = -log theta - log scale.
        Log-normal, ``lognormal="zscore"`` (sbi's: theta itself z-scored, mass can leak below 0):
        u = (theta - m)/s with the prior's mean m = exp(loc + scale^2/2) and sd s = m sqrt(exp(scale^2) - 1).
        Normal: u = (theta - loc)/scale, log|du/dtheta| = -log scale."""
        a, b = self._ab(theta.dtype)
        uni, logn = self._col("uniform"), self._col("lognormal")
        if box == "zscore":
            sd = (b - a) / math.sqrt(12.0)
            u_box = (theta - (a + b) / 2) / sd
            ld_box = -torch.log(sd).expand_as(theta)
        else:
            s = ((theta - a) / (b - a)).clamp(_EDGE_EPS, 1 - _EDGE_EPS)
            u_box = torch.log(s) - torch.log1p(-s)
            ld_box = -torch.log(s) - torch.log1p(-s) - torch.log(b - a)
        log_t = torch.log(theta.clamp_min(torch.finfo(theta.dtype).tiny))
        u = torch.where(uni, u_box, (torch.where(logn, log_t, theta) - a) / b)
        logdet = torch.where(uni, ld_box, torch.where(logn, -log_t, torch.zeros_like(theta)) - torch.log(b))
        if lognormal == "zscore" and self.has_lognormal:
            m, s = self._lognormal_moments(theta.dtype)
            u = torch.where(logn, (theta - m) / s, u)
            logdet = torch.where(logn, -torch.log(s).expand_as(theta), logdet)
        return u, logdet.sum(-1)

    def from_unconstrained(self, u: torch.Tensor, box: str = "logit", lognormal: str = "log") -> torch.Tensor:
        """u (n, d) -> theta (n, d), the inverse of :meth:`to_unconstrained`. The logit and log maps land
        in the support; the z-score maps may not (the caller rejects what falls outside)."""
        a, b = self._ab(u.dtype)
        uni, logn = self._col("uniform"), self._col("lognormal")
        if box == "zscore":
            box_theta = (a + b) / 2 + (b - a) / math.sqrt(12.0) * u
        else:
            box_theta = a + (b - a) * torch.sigmoid(u)
            box_theta = torch.minimum(torch.maximum(box_theta, a), b)  # rounding never steps outside [low, high]
        box = box_theta
        y = a + b * u
        if lognormal == "zscore" and self.has_lognormal:
            m, s = self._lognormal_moments(u.dtype)
            pos = m + s * u
        else:
            pos = torch.exp(y)
        return torch.where(uni, box, torch.where(logn, pos, y))
