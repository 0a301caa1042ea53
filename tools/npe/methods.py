"""NPE, MF-NPE, TSNPE, MF-TSNPE and A-MF-TSNPE (Krouglova et al., ICLR 2026).

Amortized:
    NPE     fresh flow, x-standardiser fitted on the HF data, Adam lr 5e-4.
    MF-NPE  pretrain a fresh flow on LF data (lr 1e-4), then fine-tune *every* parameter on HF data
            with a fresh Adam (lr 5e-4) and an x-standardiser re-fitted on the HF data.
Sequential, per observation x_o (R rounds of N_HF // R simulations):
    TSNPE      fresh flow (x-standardiser from round-1 data); each round the same network is trained
               with the plain NPE loss on all rounds' data; next proposal = prior truncated to
               {theta : log q(theta | x_o) > tau}, tau = the ``quantile`` quantile of log q over
               ``truncation_samples`` posterior draws, sampled by rejection from the prior.
    MF-TSNPE   the same loop starting from the pretrained LF flow (keeping its LF x-statistics).
    A-MF-TSNPE an ensemble of M members, all copies of the pretrained LF flow; from round 2 on a
               fraction ``active_fraction`` of each round's parameters is chosen among C prior draws
               by the largest (unbiased) variance over members of log q_m(theta | x_o); the
               posterior is the uniform mixture of the members and truncation uses it.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from .estimator import EnsemblePosterior, FlowConfig, PosteriorEstimator
from .priors import Prior
from .training import TrainConfig, TrainHistory, train

LR_PRETRAIN = 1e-4
LR_FINETUNE = 5e-4
# LF pretraining keeps the paper's patience: on SIR (LF 10^3, HF 50, 2 seeds) 60 gained nothing after
# fine-tuning (RF-C2ST 0.851 vs 0.843 at 20) for 1.3-3.4x the pretraining epochs, the longest stage
PATIENCE_PRETRAIN = 20

Simulator = Callable[[torch.Tensor], torch.Tensor]


def _generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


def check_pair(theta: torch.Tensor, x: torch.Tensor, prior: Prior, what: str) -> None:
    """Raise ValueError for shapes that do not fit the prior, non-finite values or theta outside the prior."""
    if theta.dim() != 2 or x.dim() != 2 or theta.shape[0] != x.shape[0]:
        raise ValueError(f"{what}: theta {tuple(theta.shape)} and x {tuple(x.shape)} must be (n, d) and (n, x_dim) with the same n")
    if theta.shape[1] != prior.dim:
        raise ValueError(f"{what}: theta has {theta.shape[1]} columns but the prior has {prior.dim} parameters ({', '.join(prior.names)})")
    if not torch.isfinite(x).all():
        bad = int((~torch.isfinite(x).all(1)).nonzero()[0])
        raise ValueError(f"{what}: x row {bad} is not finite (NaN/inf); drop invalid simulations first")
    inside = prior.in_support(theta)
    if not inside.all():
        bad = int((~inside).nonzero()[0])
        raise ValueError(f"{what}: theta row {bad} = {theta[bad].tolist()} lies outside the prior")


# ------------------------------------------------------------------------------------------ amortized
def fit_npe(prior: Prior, theta: torch.Tensor, x: torch.Tensor, flow_cfg: FlowConfig = FlowConfig(),
            train_cfg: TrainConfig | None = None, seed: int = 0, on_epoch=None,
            split: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[PosteriorEstimator, TrainHistory]:
    """Plain NPE on one data set: theta (n, d), x (n, x_dim). Returns the trained estimator.
    ``split``: (train rows, validation rows) instead of a random split (see ``training.train``);
    the x-standardiser is fitted on all of x either way, as fine-tuning refits it."""
    train_cfg = train_cfg or TrainConfig(lr=LR_FINETUNE)
    torch.manual_seed(seed)
    model = PosteriorEstimator(prior, x.shape[1], flow_cfg)
    model.standardizer.fit(x)
    hist = train(model, theta, x, train_cfg, _generator(seed), on_epoch, split)
    return model, hist


def fine_tune(pretrained: PosteriorEstimator, theta: torch.Tensor, x: torch.Tensor, train_cfg: TrainConfig | None = None,
              seed: int = 0, refit_x_stats: bool = True, on_epoch=None) -> tuple[PosteriorEstimator, TrainHistory]:
    """Copy ``pretrained`` and train every parameter on (theta, x); nothing is frozen."""
    train_cfg = train_cfg or TrainConfig(lr=LR_FINETUNE)
    model = copy.deepcopy(pretrained)
    if refit_x_stats:
        model.standardizer.fit(x)
    for p in model.parameters():
        p.requires_grad_(True)
    hist = train(model, theta, x, train_cfg, _generator(seed + 1), on_epoch)
    return model, hist


def fit_mf_npe(prior: Prior, theta_lf, x_lf, theta_hf, x_hf, flow_cfg: FlowConfig = FlowConfig(),
               lr_pretrain: float = LR_PRETRAIN, lr_finetune: float = LR_FINETUNE, base_cfg: TrainConfig | None = None,
               seed: int = 0, refit_x_stats: bool = True, pretrained: PosteriorEstimator | None = None, on_epoch=None,
               patience_pretrain: int = PATIENCE_PRETRAIN):
    """MF-NPE. Returns (estimator, {"pretrain": hist, "finetune": hist}, pretrained)."""
    if x_lf is not None and x_lf.shape[1] != x_hf.shape[1]:
        raise ValueError(f"LF x has {x_lf.shape[1]} dimensions but HF x has {x_hf.shape[1]}; both fidelities must share the x-space")
    base_cfg = base_cfg or TrainConfig()
    flow_cfg = flow_cfg.resolve("mf-npe")
    hists = {}
    if pretrained is None:
        pretrained, hists["pretrain"] = fit_npe(prior, theta_lf, x_lf, flow_cfg, pretrain_config(base_cfg, lr_pretrain, patience_pretrain), seed, on_epoch)
    model, hists["finetune"] = fine_tune(pretrained, theta_hf, x_hf, _with_lr(base_cfg, lr_finetune), seed, refit_x_stats, on_epoch)
    return model, hists, pretrained


@torch.no_grad()
def held_out_loss(model, theta: torch.Tensor, x: torch.Tensor) -> float:
    """Mean -log q(theta | x) over held-out pairs theta (n, d), x (n, x_dim): the normalised density
    (renormalised for leaked mass under the z-score map), so two fits compare fairly."""
    return float(-model.log_prob(theta, x).double().mean())


def pretrain_config(cfg: TrainConfig, lr: float = LR_PRETRAIN, patience: int = PATIENCE_PRETRAIN) -> TrainConfig:
    """``cfg`` with the LF pretraining's learning rate and patience."""
    c = _with_lr(cfg, lr)
    c.patience = patience
    c.patience_steps = 0  # --patience-steps is the HF fits' (pretraining keeps --patience-pretrain epochs)
    return c


def _with_lr(cfg: TrainConfig, lr: float) -> TrainConfig:
    c = copy.copy(cfg)
    c.lr = lr
    return c


# ------------------------------------------------------------------------------------------ truncation
@torch.no_grad()
def density_threshold(posterior, x_o: torch.Tensor, quantile: float = 1e-6, n_samples: int = 10**6,
                      chunk: int = 100_000) -> float:
    """tau such that {log q(theta|x_o) > tau} holds 1 - quantile of the posterior mass (sbi's rule:
    the value at index floor(quantile * n) of the sorted log-probs of n posterior draws)."""
    lps = []
    left = n_samples
    while left > 0:
        k = min(chunk, left)
        th = posterior.sample(k, x_o)
        lps.append(posterior.log_prob(th, x_o))
        left -= k
    lp = torch.sort(torch.cat(lps)).values
    return float(lp[int(quantile * n_samples)])


@torch.no_grad()
def sample_truncated_prior(prior: Prior, posterior, x_o: torch.Tensor, tau: float, n: int,
                           generator: torch.Generator | None = None, batch: int = 10_000,
                           max_draws: int = 10**8) -> tuple[torch.Tensor, float]:
    """n draws of the prior restricted to {log q(theta | x_o) > tau}, by rejection from the prior.
    Returns (theta (n, d), acceptance rate)."""
    if n <= 0:
        return torch.empty(0, prior.dim), 1.0
    kept, have, drawn = [], 0, 0
    while have < n:
        if drawn >= max_draws:
            raise RuntimeError(f"truncated prior: only {have} of {n} samples accepted in {drawn} prior draws; "
                               "the truncated region is too small for rejection sampling")
        th = prior.sample(max(batch, 2 * n), generator)
        drawn += th.shape[0]
        acc = th[posterior.log_prob(th, x_o) > tau]
        kept.append(acc)
        have += acc.shape[0]
    return torch.cat(kept)[:n], have / drawn


def acquisition_candidates(n_hf: int) -> int:
    """Number of prior candidates scored by the acquisition function (paper: 250 / 2500 / 25000)."""
    if n_hf <= 1_000:
        return 250
    if n_hf <= 10_000:
        return 2_500
    return 25_000


@torch.no_grad()
def acquisition_scores(ensemble: EnsemblePosterior, theta: torch.Tensor, x_o: torch.Tensor) -> torch.Tensor:
    """a(theta) = Var_m[log q_m(theta | x_o)] (unbiased, over the M members) -> (n,)."""
    lp = ensemble.member_log_probs(theta, x_o)
    return lp.var(dim=0, unbiased=True)


def round_sizes(n_hf: int, rounds: int, active_fraction: float) -> list[tuple[int, int]]:
    """[(n_from_proposal, n_acquired)] per round: n_r = n_hf // rounds (remainder dropped); round 1 is all
    from the prior; later rounds take floor((1 - active_fraction) n_r) from the proposal."""
    n_r = n_hf // rounds
    if n_r < 2:
        raise ValueError(f"HF budget {n_hf} gives {n_r} simulations per round over {rounds} rounds; need at least 2")
    sizes = []
    for r in range(rounds):
        if r == 0 or active_fraction <= 0:
            sizes.append((n_r, 0))
        else:
            n_prop = math.floor((1 - active_fraction) * n_r + 1e-9)
            sizes.append((n_prop, n_r - n_prop))
    return sizes


@dataclass
class RoundRecord:
    theta: torch.Tensor
    x: torch.Tensor
    acquired: torch.Tensor  # bool (n,)
    n_invalid: int
    tau: float  # threshold defining the *next* proposal (nan after the last round)
    acceptance: float  # acceptance rate of the rejection sampler that produced this round (1 for the prior)
    train: list[dict] = field(default_factory=list)


def run_sequential(prior: Prior, simulator: Simulator, x_o: torch.Tensor, n_hf: int, *,
                   pretrained: PosteriorEstimator | None = None, flow_cfg: FlowConfig = FlowConfig(),
                   ensemble_size: int = 1, active_fraction: float = 0.0, rounds: int = 5,
                   quantile: float = 1e-6, truncation_samples: int = 10**6, candidates: int | None = None,
                   train_cfg: TrainConfig | None = None, seed: int = 0, refit_x_stats: bool = False,
                   on_round=None, on_epoch=None, monitor=None):
    """TSNPE (pretrained None), MF-TSNPE (pretrained given) or A-MF-TSNPE (ensemble_size > 1,
    active_fraction 0.2). x_o (x_dim,). A pretrained flow keeps its LF x-statistics unless
    ``refit_x_stats`` (then they are re-fitted on the first round's HF data). Returns
    (EnsemblePosterior, [RoundRecord]). ``monitor(round, member)``, when given, returns the
    ``on_epoch`` callback of that fit, with a ``close(history)`` called when the fit ends."""
    train_cfg = train_cfg or TrainConfig(lr=LR_FINETUNE)
    if ensemble_size > 1 and pretrained is None:
        raise ValueError("an ensemble needs a pretrained flow to initialise its members")
    if active_fraction > 0 and ensemble_size < 2:
        raise ValueError("acquisition needs an ensemble of at least 2 members")
    gen = _generator(seed)
    torch.manual_seed(seed)
    sizes = round_sizes(n_hf, rounds, active_fraction)
    n_cand = candidates or acquisition_candidates(n_hf)
    members = [copy.deepcopy(pretrained) for _ in range(ensemble_size)] if pretrained is not None else None
    all_theta, all_x = [], []
    records: list[RoundRecord] = []
    posterior = None
    tau, acceptance = math.nan, 1.0
    for r, (n_prop, n_act) in enumerate(sizes):
        if r == 0:
            theta_r = prior.sample(n_prop, gen)
            acq = torch.zeros(n_prop, dtype=torch.bool)
        else:
            theta_prop, acceptance = sample_truncated_prior(prior, posterior, x_o, tau, n_prop, gen)
            parts, flags = [theta_prop], [torch.zeros(n_prop, dtype=torch.bool)]
            if n_act > 0:
                cand = prior.sample(n_cand, gen)
                top = torch.topk(acquisition_scores(posterior, cand, x_o), min(n_act, n_cand)).indices
                parts.append(cand[top])
                flags.append(torch.ones(top.numel(), dtype=torch.bool))
            theta_r, acq = torch.cat(parts), torch.cat(flags)
        x_r = simulator(theta_r)
        valid = torch.isfinite(x_r).all(1)
        rec = RoundRecord(theta_r[valid], x_r[valid], acq[valid], int((~valid).sum()), math.nan, acceptance)
        all_theta.append(rec.theta)
        all_x.append(rec.x)
        theta_all, x_all = torch.cat(all_theta), torch.cat(all_x)
        if members is None:  # TSNPE: the network is built on the first round's data
            m = PosteriorEstimator(prior, x_all.shape[1], flow_cfg.resolve("tsnpe"))
            m.standardizer.fit(x_all)
            members = [m]
        elif r == 0 and refit_x_stats:
            for m in members:
                m.standardizer.fit(x_all)
        for i, m in enumerate(members):
            hook = monitor(r, i) if monitor is not None else on_epoch
            h = train(m, theta_all, x_all, train_cfg, _generator(seed * 1000 + 97 * r + i + 1), hook)
            if monitor is not None:
                hook.close(h)
            rec.train.append(h.summary())
        posterior = EnsemblePosterior(members)
        if r < rounds - 1:
            tau = density_threshold(posterior, x_o, quantile, truncation_samples)
            rec.tau = tau
        records.append(rec)
        if on_round is not None:
            on_round(r, rec)
    return posterior, records
