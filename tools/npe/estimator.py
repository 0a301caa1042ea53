"""Conditional density estimator q(theta | x): fixed theta-map + z-scored x + zuko NSF.

    log q(theta | x) = log q_flow(u | e((x - mean) / std)) + log |du/dtheta| - log Z(x),   u = T(theta)

T is the prior's map of theta (:class:`~cortexkit.tools.npe.priors.Prior`): for box (uniform)
parameters either the logit onto R (``theta_map="logit"``, the MF-NPE paper's; Z = 1) or an affine
z-score with the prior's mean and sd (``"zscore"``, sbi's default); for log-normal parameters either
theta itself z-scored with the prior's mean and sd (``lognormal_map="zscore"``, sbi's) or log theta
standardised (``"log"``; Z = 1). An affine map lets the flow put
mass outside the support, so samples are drawn by rejection (kept inside the prior's support) and the
density is renormalised by Z(x) = P_flow(theta in support | x), the acceptance rate, estimated from
``LEAK_SAMPLES`` flow draws under a fixed seed (so a score is a deterministic function of theta, x
and the weights); outside the support log q = -inf. Training maximises the unnormalised term (sbi
does the same: Z only matters once training is over). e is an optional
embedding net (identity by default), q_flow a zuko neural spline flow: ``transforms`` masked
autoregressive rational-quadratic spline layers with ``bins`` bins and conditioners of
``hidden`` x ``depth`` ReLU units, on a standard normal base.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch
from torch import nn

from .priors import Prior

# sbi clamps the x standard deviation from below so constant features stay finite.
MIN_STD = 1e-7
# Flow draws per observation that estimate the leaked mass (sd of log Z about 0.01 at Z = 0.9).
LEAK_SAMPLES = 2000
_LEAK_SEED = 20260
THETA_MAPS = ("zscore", "logit")
LOGNORMAL_MAPS = ("zscore", "log")  # and "auto" in a FlowConfig, resolved by FlowConfig.resolve


@dataclass(frozen=True)
class FlowConfig:
    """Architecture of the flow (defaults: the MF-NPE paper's, except 10 spline bins, sbi 0.27's, to the
    paper's 8: chosen on two moons, SLCP and SIR, benchmarks/simulate_npe/RESULTS.md stop 41)."""

    transforms: int = 5
    bins: int = 10
    hidden: int = 50
    depth: int = 5
    embedding: str = "identity"  # or "mlp": 2-layer MLP(in, 50, out=embedding_dim)
    embedding_dim: int = 0  # 0: same as x dim
    theta_map: str = "zscore"  # box parameters: zscore (affine, leakage corrected) or logit (the paper's)
    # log-normal parameters: zscore (theta itself, leakage below 0 corrected; sbi's) or log (log theta
    # standardised). auto: zscore for plain NPE, chosen at stop 42 on SIR NPE 10^3; log (the map before)
    # for the LF-pretrained and sequential methods, where zscore was worse on SIR MF-NPE
    # (benchmarks/simulate_npe/RESULTS.md). A built estimator holds the resolved name.
    lognormal_map: str = "auto"

    def as_dict(self) -> dict:
        return asdict(self)

    def resolve(self, method: str = "npe") -> "FlowConfig":
        """This config with ``lognormal_map="auto"`` made concrete for ``method``: zscore for npe, log
        for the others (mf-npe, tsnpe, mf-tsnpe, a-mf-tsnpe)."""
        if self.lognormal_map != "auto":
            return self
        return replace(self, lognormal_map="zscore" if method == "npe" else "log")


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

        if cfg.theta_map not in THETA_MAPS:
            raise ValueError(f"unknown theta map {cfg.theta_map!r}; use one of {', '.join(THETA_MAPS)}")
        cfg = cfg.resolve("npe")  # a bare estimator (plain NPE) unless the caller resolved it for its method
        if cfg.lognormal_map not in LOGNORMAL_MAPS:
            raise ValueError(f"unknown log-normal map {cfg.lognormal_map!r}; use one of {', '.join(LOGNORMAL_MAPS)}")
        self.prior = prior
        self.cfg = cfg
        self.box_map = cfg.theta_map
        self.lognormal_map = cfg.lognormal_map
        self.leaks = ((cfg.theta_map == "zscore" and prior.has_box)
                      or (cfg.lognormal_map == "zscore" and prior.has_lognormal))
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

    def flow_log_prob(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """log q(theta | x) before the leakage renormalisation -> (n,): the training objective."""
        u, logdet = self.prior.to_unconstrained(theta, self.box_map, self.lognormal_map)
        c = self.context(x)
        if c.dim() == 1:
            c = c.expand(theta.shape[0], -1)
        return self.flow(c).log_prob(u) + logdet

    def log_prob(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """log q(theta | x) -> (n,). x is (n, x_dim) or one observation (x_dim,). With the z-score map
        of a box prior: renormalised to the support, -inf outside it."""
        lp = self.flow_log_prob(theta, x)
        if not self.leaks:
            return lp
        lp = lp - self.log_acceptance(x).to(lp.dtype)
        return torch.where(self.prior.in_support(theta), lp, torch.full_like(lp, -math.inf))

    @torch.no_grad()
    def log_acceptance(self, x: torch.Tensor, n_samples: int = LEAK_SAMPLES) -> torch.Tensor:
        """log P_flow(theta in the prior's support | x): () for one observation x (x_dim,), else (n,)
        for x (n, x_dim) (estimated once per distinct row). At least 1 / n_samples."""
        rows = x[None] if x.dim() == 1 else x
        uniq, inverse = torch.unique(rows, dim=0, return_inverse=True)
        acc = torch.empty(uniq.shape[0])
        per_call = max(1, 200_000 // n_samples)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_LEAK_SEED)
            for i in range(0, uniq.shape[0], per_call):
                c = self.context(uniq[i:i + per_call])
                u = self.flow(c).sample((n_samples,))  # (n_samples, k, d)
                theta = self.prior.from_unconstrained(u.reshape(-1, u.shape[-1]), self.box_map, self.lognormal_map)
                inside = self.prior.in_support(theta).reshape(n_samples, -1)
                acc[i:i + per_call] = inside.double().mean(0).float()
        out = torch.log(acc.clamp_min(1.0 / n_samples))[inverse]
        return out[0] if x.dim() == 1 else out

    @torch.no_grad()
    def sample(self, n: int, x_o: torch.Tensor, max_draws: int = 10**8) -> torch.Tensor:
        """n samples from q(theta | x_o) for one observation x_o (x_dim,) -> (n, d), inside the prior
        support (by rejection under the z-score map of a box prior)."""
        flow = self.flow(self.context(x_o))
        if not self.leaks:
            return self.prior.from_unconstrained(flow.sample((n,)), self.box_map, self.lognormal_map)
        kept, have, drawn, rate = [], 0, 0, 1.0
        while have < n:
            if drawn >= max_draws or (drawn >= 100 * n and rate < 1e-3):
                raise ValueError(f"only {have} of {drawn} posterior draws fell inside the prior's bounds; the "
                                 "flow has leaked almost all its mass (retrain, or train with --theta-map logit "
                                 "--lognormal-map log)")
            m = min(max_draws, int(1.2 * (n - have) / max(rate, 1e-3)) + 16)
            theta = self.prior.from_unconstrained(flow.sample((m,)), self.box_map, self.lognormal_map)
            theta = theta[self.prior.in_support(theta)]
            kept.append(theta)
            have += theta.shape[0]
            drawn += m
            rate = max(have / drawn, 1e-6)
        return torch.cat(kept)[:n]

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
