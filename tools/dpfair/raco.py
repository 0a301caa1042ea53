"""RaCO-DP: differentially private stochastic gradient descent-ascent under rate constraints.

Algorithm 1 of Yaghini, Cebere et al. (ICLR 2026).  For t = 0..T-1:

1. Poisson batch: every record independently with probability q (expected size B = q n).
2. Soft histogram H[q, k] = sum_{x in hbatch, cell(x) = q} softmax(tau * logits(x))_k; release
   H_noisy = H + Laplace(scale 1/b) i.i.d. in *every* cell (L1 sensitivity 1).
3. Per-example loss CE(x) + B * R(x) with R(x) = sum_k W[cell(x), k] p_k(x) built from lambda and
   the noisy denominators of H_noisy (post-processing); its gradient is clipped *as a whole* to norm
   C (``clip_split="joint"``, the paper's step), or its two parts separately, the loss part to C/2
   and the rate part B * grad R(x) to C/2 (``"separate"``). Either way one example moves the sum by
   at most C, so the Gaussian release keeps sensitivity C and noise sigma * C: the same ledger.
   Why "separate": where lambda is large the rate part's norm dwarfs the loss part's, and clipping
   the sum to C scales the loss part away with it.
4. theta <- theta - lr * (sum of clipped gradients + N(0, sigma^2 C^2 I)) / B.
5. lambda <- Proj_[0, lambda_max](lambda + lr_dual * (Gamma(H_noisy) - gamma)) (heavy ball with
   momentum mu) or lambda <- clip(lambda * exp(lr_dual * (Gamma(H_noisy) - gamma))) (exponentiated
   gradient).  The dual step only reads the released histogram: no privacy cost.

The histogram batch ``hbatch`` is by default a second, independent Poisson batch of the same
rate (``histogram_batch="independent"``). Then the two releases are exactly the pair of separately
Poisson-subsampled mechanisms whose composition the PLD accountant computes, so the epsilon it
reports is a valid bound. The paper reads the histogram from the gradient's own batch
(``"shared"``) and still composes two separately subsampled mechanisms; for a jointly subsampled
pair that under-states the loss (for pure-DP parts eps1, eps2 the joint amplified bound is
log(1 + q(e^(eps1+eps2) - 1)), larger than the sum of the separate ones), so "shared" is offered
only to reproduce the paper.

Degenerate modes: ``constraints=None`` is exactly DP-SGD (no histogram, Gaussian only);
``sigma=0, laplace_b=inf, clip_norm=inf`` is non-private SGDA on the Lagrangian.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from .constraints import RateConstraints, soft_histogram

DUAL_UPDATES = ("heavy-ball", "exponentiated")
HISTOGRAM_BATCHES = ("independent", "shared")
CLIP_SPLITS = ("joint", "separate")
# Lower bound of lambda for exponentiated gradient (multiplicative updates cannot leave 0).
EG_FLOOR = 1e-6


@dataclass
class RacoConfig:
    steps: int
    sampling_rate: float            # Poisson rate q
    sigma: float                    # Gaussian noise multiplier (std sigma * clip_norm)
    clip_norm: float                # C; inf disables clipping
    laplace_b: float = math.inf     # inverse Laplace scale; inf: no histogram noise
    lr: float = 0.5
    lr_dual: float = 0.3
    dual_update: str = "heavy-ball"
    dual_momentum: float = 0.0
    dual_max: float = math.inf
    dual_init: float | None = None  # default 0 (heavy ball) or 1 (exponentiated)
    temperature: float = 1.0        # tau: rates use softmax(tau * logits)
    record_every: int = 0           # history every this many steps (0: never)
    histogram_batch: str = "independent"  # histogram from its own Poisson batch, or the gradient's
    per_example: str = "closed-form"      # closed-form batched gradients for Linear/ReLU stacks, or "vmap"
    dual_rates: str = "soft"        # the released histogram counts soft predictions, or "hard" (argmax)
    clip_split: str = "joint"       # clip CE + B R as a whole to C, or "separate": each part to C / 2
    tol: float = 0.0                # > 0 (noise-free runs only): stop once the mean gradient's norm and the
                                    # dual gradient's clipped move are below it ("converged")
    average_from: float = 0.0       # the averaged iterate is the mean of theta_t, lambda_t for t > floor(
                                    # average_from * steps): 0 the uniform average of all T (the paper's),
                                    # 0.5 the last half (a suffix average: post-processing, no privacy cost)

    def __post_init__(self):
        if self.histogram_batch not in HISTOGRAM_BATCHES:
            raise ValueError(f"histogram batch must be one of {HISTOGRAM_BATCHES}, "
                             f"got {self.histogram_batch!r}")
        if self.dual_rates not in ("soft", "hard"):
            raise ValueError(f"dual rates must be 'soft' or 'hard', got {self.dual_rates!r}")
        if self.clip_split not in CLIP_SPLITS:
            raise ValueError(f"clip split must be one of {CLIP_SPLITS}, got {self.clip_split!r}")
        if self.dual_update not in DUAL_UPDATES:
            raise ValueError(f"dual update must be one of {DUAL_UPDATES}, got {self.dual_update!r}")
        if self.sigma < 0 or not (self.clip_norm > 0) or not (self.laplace_b > 0):
            raise ValueError("need sigma >= 0, clip_norm > 0, laplace_b > 0")
        if not (0 < self.sampling_rate <= 1):
            raise ValueError("sampling rate must be in (0, 1]")
        if not (0 <= self.average_from < 1):
            raise ValueError(f"average_from must be in [0, 1), got {self.average_from}")
        if self.sigma > 0 and math.isinf(self.clip_norm):
            raise ValueError("Gaussian noise needs a finite clip norm (noise std is sigma * C)")


@dataclass
class TrainResult:
    params_last: dict[str, torch.Tensor]
    params_avg: dict[str, torch.Tensor]
    dual_last: torch.Tensor          # (J,)
    dual_avg: torch.Tensor           # (J,)
    batch_sizes: list[int] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    steps_run: int = 0
    stop_reason: str = "completed"   # or "converged"
    violation_tail: torch.Tensor | None = None   # (J,) mean released violation over the last quarter of steps
    violation_tail_se: torch.Tensor | None = None  # (J,) its standard error: sd over those steps / sqrt(steps)


def laplace_noise(shape, scale: float, generator: torch.Generator, dtype=torch.float64, device="cpu") -> torch.Tensor:
    """i.i.d. Laplace(0, scale) as the difference of two Exp(1) draws times ``scale``."""
    u = torch.rand((2,) + tuple(shape), generator=generator, dtype=dtype, device=device)
    e = -torch.log1p(-u)                      # Exp(1); u in [0, 1) so log1p(-u) is finite
    return scale * (e[0] - e[1])


def gaussian_noise(like: dict[str, torch.Tensor], std: float, generator: torch.Generator) -> dict[str, torch.Tensor]:
    return {k: std * torch.randn(v.shape, generator=generator, dtype=v.dtype, device=v.device)
            for k, v in like.items()}


def poisson_batch(n: int, rate: float, generator: torch.Generator, device="cpu") -> torch.Tensor:
    """(batch,) int64 indices: each of the n records independently with probability ``rate``."""
    keep = torch.rand(n, generator=generator, device=device) < rate
    return keep.nonzero().squeeze(1)


def make_per_example_loss(model: nn.Module, temperature: float, batch_scale: float, with_rates: bool,
                          part: str = "both") -> Callable:
    """loss(params, x (d,), y (), w (K,)) = CE(logits, y) + batch_scale * <w, softmax(tau * logits)>.

    ``part``: "both" (the sum), "loss" (CE only) or "rate" (the batch_scale * <w, .> term only), the
    two parts that ``clip_split="separate"`` clips on their own."""
    def loss(params, x, y, w):
        logits = functional_call(model, params, (x.unsqueeze(0),)).squeeze(0)
        ce = torch.nn.functional.cross_entropy(logits.unsqueeze(0), y.unsqueeze(0))
        if not with_rates or part == "loss":
            return ce
        rate = batch_scale * (w * torch.softmax(temperature * logits, dim=-1)).sum()
        return rate if part == "rate" else ce + rate
    return loss


def clip_parts(clip_norm: float, clip_split: str, with_rates: bool) -> list[tuple[str, float]]:
    """The parts of each example's gradient clipped on their own, with their clip norms: the whole
    gradient to C, or (``separate``, with rates) the loss part and the rate part to C / 2 each. The
    triangle inequality bounds one example's clipped sum by C in both cases (the ledger's sensitivity)."""
    if clip_split == "separate" and with_rates:
        return [("loss", clip_norm / 2), ("rate", clip_norm / 2)]
    return [("both", clip_norm)]


def clipped_gradient_sum(per_example: dict[str, torch.Tensor], clip_norm: float) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Clip each example's whole gradient (all parameters together) to ``clip_norm`` and sum.

    per_example: name -> (batch, *shape).  Returns (name -> shape sums, (batch,) norms before clipping).
    """
    flat = [g.reshape(g.shape[0], -1) for g in per_example.values()]
    norms = torch.sqrt(sum((f * f).sum(dim=1) for f in flat))
    if math.isinf(clip_norm):
        factor = torch.ones_like(norms)
    else:
        factor = (clip_norm / (norms + 1e-12)).clamp(max=1.0)
    sums = {k: torch.einsum("b,b...->...", factor, g) for k, g in per_example.items()}
    return sums, norms


def linear_stack(model: nn.Module) -> list[tuple[str, str]] | None:
    """(weight, bias) parameter names of a Sequential of Linear layers with ReLUs between them (the
    logistic and MLP models), or None for any other architecture (then vmap is used)."""
    if not isinstance(model, nn.Sequential):
        return None
    layers, expect_linear = [], True
    for name, module in model.named_children():
        if expect_linear and isinstance(module, nn.Linear) and module.bias is not None:
            layers.append((f"{name}.weight", f"{name}.bias"))
        elif not expect_linear and isinstance(module, nn.ReLU):
            pass
        else:
            return None
        expect_linear = not expect_linear
    return layers if layers and not expect_linear else None


def clipped_sum_linear(params: dict[str, torch.Tensor], layers: list[tuple[str, str]], x: torch.Tensor,
                       y: torch.Tensor, w: torch.Tensor, temperature: float, batch_scale: float,
                       with_rates: bool, clip_norm: float, clip_split: str = "joint") -> dict[str, torch.Tensor]:
    """The clipped per-example gradient sum of CE + batch_scale * <w, softmax(tau * logits)> for a
    Linear/ReLU stack, in closed form and batched (no per-example Python, no vmap).

    x (b, d), y (b,) int64, w (b, K). Per-example gradients of layer l are outer products
    g_l[i] a_{l-1}[i]^T, so each example's squared norm is sum_l |g_l[i]|^2 (|a_{l-1}[i]|^2 + 1) and the
    clipped sum of layer l is (f * g_l)^T a_{l-1} with f the per-example clip factors: the same
    numbers as clipping the vmap gradients, without materialising them. With ``clip_split="separate"``
    the loss part and the rate part (each backpropagated on its own: backpropagation is linear in the
    logit gradient) get their own factors for C / 2 each (``clip_parts``).
    """
    acts, pre = [x], []
    h = x
    for j, (wn, bn) in enumerate(layers):
        z = h @ params[wn].T + params[bn]
        pre.append(z)
        h = torch.relu(z) if j + 1 < len(layers) else z
        if j + 1 < len(layers):
            acts.append(h)
    logits = h
    g_loss = torch.softmax(logits, dim=1)
    g_loss[torch.arange(len(y)), y] -= 1.0                # d CE / d logits
    g_rate = None
    if with_rates:
        s = torch.softmax(temperature * logits, dim=1)
        g_rate = batch_scale * temperature * s * (w - (w * s).sum(1, keepdim=True))
    logit_grads = {"loss": g_loss, "rate": g_rate, "both": g_loss if g_rate is None else g_loss + g_rate}
    sums = {name: 0.0 for pair in layers for name in pair}
    for part, norm in clip_parts(clip_norm, clip_split, with_rates):
        g = logit_grads[part]
        grads = [None] * len(layers)
        sq = torch.zeros(len(y), dtype=x.dtype, device=x.device)
        for j in range(len(layers) - 1, -1, -1):
            a = acts[j]
            grads[j] = g
            sq = sq + (g * g).sum(1) * ((a * a).sum(1) + 1.0)
            if j > 0:
                g = (g @ params[layers[j][0]]) * (pre[j - 1] > 0)
        if math.isinf(norm):
            factor = torch.ones_like(sq)
        else:
            factor = (norm / (torch.sqrt(sq) + 1e-12)).clamp(max=1.0)
        for (wn, bn), a, gl in zip(layers, acts, grads):
            fg = gl * factor[:, None]
            sums[wn] = sums[wn] + fg.T @ a
            sums[bn] = sums[bn] + fg.sum(0)
    return sums


def average_start(steps: int, average_from: float) -> int:
    """0-based index of the first iterate in the average: floor(average_from * steps), at most steps - 1
    (so the window always holds the last iterate). 0: the uniform average of all iterates."""
    return min(int(math.floor(average_from * steps)), max(steps - 1, 0))


def dual_step(dual: torch.Tensor, velocity: torch.Tensor, gradient: torch.Tensor, config: RacoConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Projected dual ascent on [0, dual_max] (heavy ball) or exponentiated gradient. Shapes (J,)."""
    if config.dual_update == "heavy-ball":
        velocity = config.dual_momentum * velocity + config.lr_dual * gradient
        dual = (dual + velocity).clamp(0.0, config.dual_max)
    else:
        dual = (dual * torch.exp(config.lr_dual * gradient)).clamp(EG_FLOOR, config.dual_max)
    return dual, velocity


def train(model: nn.Module, features: torch.Tensor, labels: torch.Tensor, cells: torch.Tensor | None,
          constraints: RateConstraints | None, config: RacoConfig, generator: torch.Generator,
          progress: Callable[[Iterable], Iterable] = lambda it: it,
          evaluate: Callable[[dict[str, torch.Tensor]], dict] | None = None) -> TrainResult:
    """Run RaCO-DP (or DP-SGD when ``constraints`` is None).

    features (n, d) float, labels (n,) int64 class indices, cells (n,) int64 partition cells.
    ``model`` gives the architecture and the starting parameters; it is not modified.
    """
    n = features.shape[0]
    device = features.device
    expected_batch = config.sampling_rate * n
    use_rates = constraints is not None
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    avg = {k: torch.zeros_like(v) for k, v in params.items()}
    n_cons = constraints.n_constraints if use_rates else 0
    init = config.dual_init if config.dual_init is not None else (0.0 if config.dual_update == "heavy-ball" else 1.0)
    if config.dual_update == "exponentiated":
        init = max(init, EG_FLOOR)
    dual = torch.full((n_cons,), float(min(init, config.dual_max)), dtype=torch.float64, device=device)
    velocity = torch.zeros_like(dual)
    dual_avg = torch.zeros_like(dual)
    parts = clip_parts(config.clip_norm, config.clip_split, use_rates)
    per_example_grads = [(vmap(grad(make_per_example_loss(model, config.temperature, expected_batch, use_rates,
                                                          part)), in_dims=(None, 0, 0, 0)), norm)
                         for part, norm in parts]
    layers = linear_stack(model) if config.per_example == "closed-form" else None
    n_classes = None
    result = TrainResult(params, avg, dual, dual_avg)
    violations = []                  # the released (noisy) Gamma - gamma of every step: post-processing
    first_averaged = average_start(config.steps, config.average_from)   # 0-based t of the first averaged iterate
    if config.tol > 0 and (config.sigma > 0 or math.isfinite(config.laplace_b) or config.sampling_rate < 1):
        raise ValueError("a convergence tolerance needs the exact full-batch gradient (non-private, q = 1)")

    for t in progress(range(config.steps)):
        idx = poisson_batch(n, config.sampling_rate, generator, device)
        xb, yb = features[idx], labels[idx]
        gaussian_first = None
        if use_rates:
            cb = cells[idx]
            if config.histogram_batch == "independent":
                hidx = poisson_batch(n, config.sampling_rate, generator, device)
                hx, hc = features[hidx], cells[hidx]
            else:
                hx, hc = xb, cb
            with torch.no_grad():
                logits = functional_call(model, params, (hx,))
                n_classes = logits.shape[1]
                if config.dual_rates == "hard":
                    # the rates the model is judged by: one-hot argmax rows, still one row per record
                    # summing to 1, so the release keeps L1 sensitivity 1 (same ledger)
                    probs = torch.nn.functional.one_hot(logits.argmax(1), logits.shape[1]).to(torch.float64)
                else:
                    probs = torch.softmax(config.temperature * logits, dim=1).to(torch.float64)
                hist = soft_histogram(probs, hc, constraints.partition.n_cells)
                if math.isfinite(config.laplace_b):
                    hist = hist + laplace_noise(hist.shape, 1.0 / config.laplace_b, generator, device=device)
                weights = constraints.cell_weights(dual, hist).to(features.dtype)     # (Q, K)
                wb = weights[cb]
                dual_gradient = constraints.violations(hist)
        else:
            wb = torch.zeros(len(idx), 1, dtype=features.dtype, device=device)
        if len(idx) > 0 and layers is not None:
            sums = clipped_sum_linear(params, layers, xb, yb, wb, config.temperature, expected_batch, use_rates,
                                      config.clip_norm, config.clip_split)
        elif len(idx) > 0:
            sums = {k: torch.zeros_like(v) for k, v in params.items()}
            for per_example_grad, norm in per_example_grads:
                part_sums, _ = clipped_gradient_sum(per_example_grad(params, xb, yb, wb), norm)
                sums = {k: sums[k] + part_sums[k] for k in sums}
        else:
            sums = {k: torch.zeros_like(v) for k, v in params.items()}
        if config.sigma > 0:
            noise = gaussian_noise(sums, config.sigma * config.clip_norm, generator)
            sums = {k: sums[k] + noise[k] for k in sums}
        params = {k: params[k] - config.lr * sums[k] / expected_batch for k in params}
        dual_before = dual
        if use_rates:
            dual, velocity = dual_step(dual, velocity, dual_gradient, config)
            violations.append(dual_gradient)
        # Uniform average of the iterates theta_{s+1}..theta_T (and lambda_{s+1}..lambda_T), s = first_averaged
        # (0: all of them, the paper's output; a suffix average leaves out the early iterates).
        if t >= first_averaged:
            m = t - first_averaged + 1
            avg = {k: avg[k] + (params[k] - avg[k]) / m for k in avg}
            dual_avg = dual_avg + (dual - dual_avg) / m
        result.batch_sizes.append(int(len(idx)))
        if config.record_every and ((t + 1) % config.record_every == 0 or t + 1 == config.steps):
            # no realised batch size here: it is a non-private count of the data
            row = {"step": t + 1}
            if use_rates:
                row["dual_max"] = float(dual.max()) if n_cons else 0.0
                row["noisy_violation_max"] = float(dual_gradient.max())
            if evaluate is not None:
                row.update(evaluate(params))
            result.history.append(row)
        result.steps_run = t + 1
        if config.tol > 0:
            grad_norm = math.sqrt(sum(float((v / expected_batch).pow(2).sum()) for v in sums.values()))
            dual_move = float((dual - dual_before).abs().max()) / config.lr_dual if n_cons else 0.0
            if grad_norm < config.tol and dual_move < config.tol:
                result.stop_reason = "converged"
                break
    if violations:
        tail = violations[-max(1, len(violations) // 4):]
        stacked = torch.stack(tail)
        result.violation_tail = stacked.mean(0)
        # each step's histogram has its own Poisson batch and Laplace noise: near-independent draws
        sd = stacked.std(0, unbiased=True) if len(tail) > 1 else torch.full_like(result.violation_tail, math.inf)
        result.violation_tail_se = sd / math.sqrt(len(tail))
    if result.steps_run <= first_averaged:
        # stopped (converged) before the averaging window opened: the average is the iterate it stopped at
        avg, dual_avg = dict(params), dual.clone()
    result.params_last, result.params_avg = params, avg
    result.dual_last, result.dual_avg = dual, dual_avg
    return result
