"""Conditional density estimator q(theta | x): fixed theta-bijection + z-scored x + zuko NSF.

    log q(theta | x) = log q_flow(u | e((x - mean) / std)) + log |du/dtheta|,   u = T(theta)

T is the prior's bijection to R^d (:class:`~cortexkit.tools.npe.priors.Prior`), e an optional
embedding net (identity by default), q_flow a zuko neural spline flow: ``transforms`` masked
autoregressive rational-quadratic spline layers with ``bins`` bins and conditioners of
``hidden`` x ``depth`` ReLU units, on a standard normal base.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from .priors import Prior

# sbi clamps the x standard deviation from below so constant features stay finite.
MIN_STD = 1e-7


@dataclass(frozen=True)
class FlowConfig:
    """Architecture of the flow (defaults: the MF-NPE paper's)."""

    transforms: int = 5
    bins: int = 8
    hidden: int = 50
    depth: int = 5
    embedding: str = "identity"  # or "mlp": 2-layer MLP(in, 50, out=embedding_dim)
    embedding_dim: int = 0  # 0: same as x dim

    def as_dict(self) -> dict:
        return asdict(self)


class Standardizer(nn.Module):
    """x -> (x - mean) / std with fixed per-dimension statistics (buffers, saved with the model)."""

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))

    def fit(self, x: torch.Tensor) -> "Standardizer":
        """Set the statistics from a training batch x (n, dim)."""
        self.mean.copy_(x.mean(0))
        std = x.std(0) if x.shape[0] > 1 else torch.ones_like(self.std)
        self.std.copy_(std.clamp_min(MIN_STD))
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


def _embedding(cfg: FlowConfig, x_dim: int) -> tuple[nn.Module, int]:
    if cfg.embedding == "identity":
        return nn.Identity(), x_dim
    if cfg.embedding == "mlp":
        out = cfg.embedding_dim or x_dim
        return nn.Sequential(nn.Linear(x_dim, 50), nn.ReLU(), nn.Linear(50, out)), out
    raise ValueError(f"unknown embedding {cfg.embedding!r}; use identity or mlp")


class PosteriorEstimator(nn.Module):
    """q(theta | x) for one prior; shapes: theta (n, d), x (n, x_dim) or (x_dim,) broadcast."""

    def __init__(self, prior: Prior, x_dim: int, cfg: FlowConfig = FlowConfig()):
        super().__init__()
        import zuko

        self.prior = prior
        self.cfg = cfg
        self.x_dim = int(x_dim)
        self.standardizer = Standardizer(self.x_dim)
        self.embedding, context = _embedding(cfg, self.x_dim)
        self.flow = zuko.flows.NSF(
            features=prior.dim,
            context=context,
            bins=cfg.bins,
            transforms=cfg.transforms,
            hidden_features=[cfg.hidden] * cfg.depth,
        )

    def context(self, x: torch.Tensor) -> torch.Tensor:
        return self.embedding(self.standardizer(x))

    def log_prob(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """log q(theta | x) -> (n,). x is (n, x_dim) or one observation (x_dim,)."""
        u, logdet = self.prior.to_unconstrained(theta)
        c = self.context(x)
        if c.dim() == 1:
            c = c.expand(theta.shape[0], -1)
        return self.flow(c).log_prob(u) + logdet

    @torch.no_grad()
    def sample(self, n: int, x_o: torch.Tensor) -> torch.Tensor:
        """n samples from q(theta | x_o) for one observation x_o (x_dim,) -> (n, d), inside the prior support."""
        u = self.flow(self.context(x_o)).sample((n,))
        return self.prior.from_unconstrained(u)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class EnsemblePosterior(nn.Module):
    """Uniform mixture of members: log q = logsumexp_m log q_m - log M; sampling picks a member per draw."""

    def __init__(self, members: list[PosteriorEstimator]):
        super().__init__()
        self.members = nn.ModuleList(members)

    @property
    def prior(self) -> Prior:
        return self.members[0].prior

    def member_log_probs(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """(M, n) log q_m(theta | x)."""
        return torch.stack([m.log_prob(theta, x) for m in self.members])

    def log_prob(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        lp = self.member_log_probs(theta, x)
        if len(self.members) == 1:
            return lp[0]
        return torch.logsumexp(lp, 0) - math.log(len(self.members))

    @torch.no_grad()
    def sample(self, n: int, x_o: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        if len(self.members) == 1:
            return self.members[0].sample(n, x_o)
        which = torch.randint(len(self.members), (n,), generator=generator)
        out = torch.empty(n, self.prior.dim)
        for m, member in enumerate(self.members):
            sel = which == m
            if sel.any():
                out[sel] = member.sample(int(sel.sum()), x_o)
        return out
