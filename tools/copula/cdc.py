"""The classification-diffusion copula (CDC): a time-classifier whose log-ratios give the copula
density in one forward pass and, through their gradients, the score for DDPM sampling.

On the Gaussian scale z = Phi^-1(u) the forward Ornstein-Uhlenbeck process
dz = -z dt + sqrt(2) dB keeps every marginal N(0, 1), so every time slice is a copula. K classes
t_0 = 0 < ... < t_{K-1} = T with noise variance sigma_k^2 = 1 - exp(-2 t_k) linear in k; z_k =
a_k z_0 + sigma_k eps with a_k = exp(-t_k). A classifier P(k | z) over the K classes gives

* log c(u) = log P(t_0 | z) - log P(t_{K-1} | z)                          (uniform class prior)
* score_k(z) = grad_z [log P(t_k | z) - log P(t_{K-1} | z)] - z,  eps_hat_k = -sigma_k score_k

and is trained with alpha * CE(k) + MSE(eps_hat_k(z_k), eps), k uniform, by double backprop.
With ``guide = "gaussian"`` the OU noise is N(0, Sigma) (Sigma the training correlation plus a
ridge), the terminal law N(0, Sigma) is a Gaussian copula, the score term is -Sigma^-1 z, the
denoiser predicts the correlated noise (eps_hat = -sigma Sigma score) and log c adds
log N(z; 0, Sigma) - log N(z; 0, I).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn


@dataclass
class CDCConfig:
    """Hyper-parameters; the defaults are the paper's."""

    classes: int = 10
    t_max: float = 3.0
    hidden: int = 512
    depth: int = 6
    alpha: float = 0.2
    lr: float = 5e-5
    batch_size: int = 1024
    clip: float = 1.0
    ema: float = 0.999
    steps: int = 20000
    time_limit: float = 0.0          # seconds; 0 = no limit (stop after ``steps``)
    guide: str = "none"              # none | gaussian
    ridge: float = 1e-5


def schedule(classes: int, t_max: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(t, a, sigma), each (K,): sigma_k^2 = (k / (K-1)) (1 - e^{-2T}), a_k = sqrt(1 - sigma_k^2)."""
    var = torch.linspace(0, 1, classes, dtype=torch.float64) * (1 - math.exp(-2 * t_max))
    a = torch.sqrt(1 - var)
    t = -torch.log(a)
    return t.float(), a.float(), torch.sqrt(var).float()


class ResidualBlock(nn.Module):
    """h <- SiLU(h + Linear(ReLU(Linear(h))))."""

    def __init__(self, width: int):
        super().__init__()
        self.inner = nn.Linear(width, width)
        self.outer = nn.Linear(width, width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return nn.functional.silu(h + self.outer(torch.relu(self.inner(h))))


class TimeClassifier(nn.Module):
    """(batch, d) z -> (batch, K) logits: Linear(d, H), ``depth`` residual blocks, Linear(H, K)."""

    def __init__(self, dim: int, classes: int, hidden: int, depth: int):
        super().__init__()
        self.stem = nn.Linear(dim, hidden)
        self.blocks = nn.Sequential(*[ResidualBlock(hidden) for _ in range(depth)])
        self.head = nn.Linear(hidden, classes)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(z)))


class CDC:
    """A fitted CDC: the (EMA) classifier, its schedule and the guide's correlation."""

    def __init__(self, dim: int, config: CDCConfig, corr: np.ndarray | None = None,
                 device: str | torch.device = "cpu"):
        self.dim, self.config = dim, config
        self.device = torch.device(device)
        self.net = TimeClassifier(dim, config.classes, config.hidden, config.depth).to(self.device)
        self.t, self.a, self.sigma = (x.to(self.device) for x in schedule(config.classes, config.t_max))
        self.set_guide(corr)

    def set_guide(self, corr: np.ndarray | None) -> None:
        if self.config.guide == "gaussian":
            if corr is None:
                raise ValueError("guide gaussian needs the training correlation")
            sigma = guide_correlation(corr, self.config.ridge)
        else:
            sigma = np.eye(self.dim)
        self.guide = torch.tensor(sigma, dtype=torch.float32, device=self.device)
        self.guide_chol = torch.linalg.cholesky(self.guide)
        self.guide_inv = torch.cholesky_inverse(self.guide_chol)
        self.guide_logdet = float(2 * torch.log(torch.diagonal(self.guide_chol)).sum())

    @property
    def guided(self) -> bool:
        return self.config.guide == "gaussian"

    # ---------------------------------------------------------------- network quantities
    def score(self, net: nn.Module, z: torch.Tensor, k: torch.Tensor, create_graph: bool) -> torch.Tensor:
        """(batch, d) score grad_z log p_{t_k}(z) at the classes ``k`` (batch,)."""
        with torch.enable_grad():
            if not z.requires_grad:
                z = z.detach().requires_grad_(True)
            logits = net(z)
            ratio = logits.gather(1, k[:, None]).squeeze(1) - logits[:, -1]
            grad, = torch.autograd.grad(ratio.sum(), z, create_graph=create_graph)
        return grad - z @ self.guide_inv

    def denoiser(self, net: nn.Module, z: torch.Tensor, k: torch.Tensor, create_graph: bool) -> torch.Tensor:
        """(batch, d) eps_hat_k(z) = -sigma_k score (times Sigma with the Gaussian guide)."""
        s = self.score(net, z, k, create_graph)
        if self.guided:
            s = s @ self.guide
        return -self.sigma[k][:, None] * s

    def loss(self, net: nn.Module, z0: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, dict]:
        """alpha * CE + MSE on a (batch, d) batch of clean z."""
        n = z0.shape[0]
        k = torch.randint(0, self.config.classes, (n,), generator=generator).to(self.device)
        eps = torch.randn(z0.shape, generator=generator).to(self.device)
        if self.guided:
            eps = eps @ self.guide_chol.T
        zk = (self.a[k][:, None] * z0 + self.sigma[k][:, None] * eps).requires_grad_(True)
        logits = net(zk)
        ce = nn.functional.cross_entropy(logits, k)
        ratio = logits.gather(1, k[:, None]).squeeze(1) - logits[:, -1]
        grad, = torch.autograd.grad(ratio.sum(), zk, create_graph=True)
        s = grad - zk @ self.guide_inv
        if self.guided:
            s = s @ self.guide
        eps_hat = -self.sigma[k][:, None] * s
        mse = ((eps_hat - eps) ** 2).mean()
        return self.config.alpha * ce + mse, {"ce": float(ce.detach()), "mse": float(mse.detach())}

    @torch.no_grad()
    def log_density_z(self, z: np.ndarray | torch.Tensor, batch: int = 8192) -> np.ndarray:
        """(rows, d) z -> (rows,) unnormalised log c at u = Phi(z), one forward pass per row."""
        z = torch.as_tensor(np.asarray(z), dtype=torch.float32)
        out = []
        for start in range(0, len(z), batch):
            zb = z[start:start + batch].to(self.device)
            logp = torch.log_softmax(self.net(zb), dim=1)
            val = logp[:, 0] - logp[:, -1]
            if self.guided:
                quad = ((zb @ self.guide_inv) * zb).sum(1) - (zb * zb).sum(1)
                val = val - 0.5 * quad - 0.5 * self.guide_logdet
            out.append(val.double().cpu())
        return torch.cat(out).numpy() if out else np.zeros(0)

    def sample_z(self, n: int, generator: torch.Generator, batch: int = 8192) -> np.ndarray:
        """(n, d) ancestral DDPM samples on the Gaussian scale over the K-1 steps, clamped to [-6, 6]."""
        out = []
        K = self.config.classes
        for start in range(0, n, batch):
            m = min(batch, n - start)
            x = (torch.randn((m, self.dim), generator=generator).to(self.device) @ self.guide_chol.T)
            for k in range(K - 1, 0, -1):
                alpha = math.exp(-2 * float(self.t[k] - self.t[k - 1]))
                kk = torch.full((m,), k, dtype=torch.long, device=self.device)
                eps_hat = self.denoiser(self.net, x, kk, create_graph=False)
                x = (x - (1 - alpha) / float(self.sigma[k]) * eps_hat) / math.sqrt(alpha)
                x = x.detach().clamp(-6, 6)
                if k > 1:
                    xi = torch.randn((m, self.dim), generator=generator).to(self.device) @ self.guide_chol.T
                    x = x + math.sqrt(1 - alpha) * xi
            out.append(x.double().cpu())
        return torch.cat(out).numpy()

    # ---------------------------------------------------------------- (de)serialisation
    def state(self) -> dict[str, torch.Tensor]:
        return {f"cdc.{k}": v.detach().cpu().float() for k, v in self.net.state_dict().items()}

    def load_state(self, tensors: dict[str, torch.Tensor]) -> None:
        own = {k[len("cdc."):]: v for k, v in tensors.items() if k.startswith("cdc.")}
        self.net.load_state_dict(own)
        self.net.eval()

    def describe(self) -> dict:
        return asdict(self.config)


def keep_faster_threads(work: Callable[[], object]) -> int:
    """Time ``work()`` on torch's current thread count and on one thread and leave torch on the
    faster (a small network on busy cores loses more to threads waiting for each other than it
    gains from sharing); returns the thread count kept."""
    threads = torch.get_num_threads()
    if threads <= 1:
        return threads
    t0 = time.perf_counter()
    work()
    many = time.perf_counter() - t0
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    work()
    if time.perf_counter() - t0 < many:
        return 1
    torch.set_num_threads(threads)
    return threads


def guide_correlation(corr: np.ndarray, ridge: float) -> np.ndarray:
    """Sigma = corr + ridge I, renormalised to a unit diagonal (so the OU marginals stay N(0, 1))."""
    s = np.asarray(corr, dtype=np.float64) + ridge * np.eye(len(corr))
    dg = np.sqrt(np.diag(s))
    return s / np.outer(dg, dg)


@dataclass
class FitRecord:
    """How one CDC fit ended: steps run of planned, why, and its best validation checkpoint."""

    steps_done: int
    steps_planned: int
    reason: str                      # completed | time-limit
    seconds: float
    best_step: int | None = None     # the step whose EMA weights were kept (None: no validation)
    best_val_loss: float | None = None

    def figures(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def validation_loss(model: "CDC", net: nn.Module, z_val: torch.Tensor, k: torch.Tensor,
                    eps: torch.Tensor) -> float:
    """alpha * CE + MSE of ``net`` on fixed (rows,) classes ``k`` and (rows, d) noise ``eps`` of the
    (rows, d) validation rows ``z_val``: the training loss with its randomness frozen, so two
    checkpoints are compared on the same draws (first-order gradient; no graph is kept)."""
    if model.guided:
        eps = eps @ model.guide_chol.T
    zk = model.a[k][:, None] * z_val + model.sigma[k][:, None] * eps
    with torch.enable_grad():
        zk = zk.detach().requires_grad_(True)
        logits = net(zk)
        ce = nn.functional.cross_entropy(logits, k)
        ratio = logits.gather(1, k[:, None]).squeeze(1) - logits[:, -1]
        grad, = torch.autograd.grad(ratio.sum(), zk)
    s = grad - zk.detach() @ model.guide_inv
    if model.guided:
        s = s @ model.guide
    mse = ((-model.sigma[k][:, None] * s - eps) ** 2).mean()
    return float(model.config.alpha * ce.detach() + mse)


def fit_cdc(z: np.ndarray, config: CDCConfig, *, generator: torch.Generator, corr: np.ndarray | None = None,
            device: str | torch.device = "cpu", progress: Callable | None = None,
            log: Callable[[str], None] | None = None, z_val: np.ndarray | None = None,
            evaluations: int = 20, desc: str = "fit cdc") -> CDC:
    """Train a CDC on (n, d) training data on the Gaussian scale; returns the model with EMA weights.

    With (m, d) validation rows ``z_val`` the EMA weights are scored ``evaluations`` times (and at
    the end) by the validation loss on frozen draws, and the best checkpoint is the one returned.
    ``model.record`` says how many steps ran of ``config.steps`` and why the loop ended."""
    data = torch.as_tensor(z, dtype=torch.float32).to(device)
    n, d = data.shape
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
    model = CDC(d, config, corr, device)
    net = model.net
    ema = copy.deepcopy(net)
    for p in ema.parameters():
        p.requires_grad_(False)
    val = None
    if z_val is not None and len(z_val):
        zv = torch.as_tensor(z_val, dtype=torch.float32).to(device)
        zv = zv.repeat(max(1, -(-1024 // len(zv))), 1)[: max(len(zv), 1024)]   # >= 1024 frozen draws
        kv = torch.randint(0, config.classes, (len(zv),), generator=generator).to(device)
        ev = torch.randn(zv.shape, generator=generator).to(device)
        val = (zv, kv, ev)
    every = max(1, config.steps // max(1, evaluations))
    best = (math.inf, None, None)    # (loss, step, state)
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    steps = range(config.steps)
    bar = progress(steps, total=config.steps, desc=desc) if progress else steps
    start = time.perf_counter()
    perm, pos = torch.randperm(n, generator=generator), 0
    batch = min(config.batch_size, n)
    step, reason = -1, "completed"

    def checkpoint(done: int) -> None:
        nonlocal best
        loss = validation_loss(model, ema, *val)
        if loss < best[0]:
            best = (loss, done, copy.deepcopy(ema.state_dict()))
        if log:
            log(f"{desc} step {done}: validation loss {loss:.4f} (best {best[0]:.4f} at {best[1]})")

    for step in bar:
        if pos + batch > n:
            perm, pos = torch.randperm(n, generator=generator), 0
        idx = perm[pos:pos + batch].to(data.device)
        pos += batch
        loss, parts = model.loss(net, data[idx], generator)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), config.clip)
        opt.step()
        with torch.no_grad():
            decay = min(config.ema, (1 + step) / (10 + step))
            for pe, pn in zip(ema.parameters(), net.parameters()):
                pe.mul_(decay).add_(pn, alpha=1 - decay)
        if log and step % 500 == 0:
            log(f"step {step}: loss {float(loss.detach()):.4f} ce {parts['ce']:.4f} mse {parts['mse']:.4f}")
        if val is not None and (step + 1) % every == 0 and step + 1 < config.steps:
            checkpoint(step + 1)
        if config.time_limit and time.perf_counter() - start > config.time_limit:
            reason = "time-limit" if step + 1 < config.steps else "completed"
            break
    if hasattr(bar, "close"):
        bar.close()
    done = step + 1
    record = FitRecord(done, config.steps, reason, time.perf_counter() - start)
    if val is not None:
        checkpoint(done)
        ema.load_state_dict(best[2])
        record.best_step, record.best_val_loss = best[1], round(best[0], 6)
    model.net = ema.eval()
    model.steps_done = done
    model.record = record
    return model


# ---------------------------------------------------------------------- sizing by a time budget

@dataclass
class Plan:
    """A CDC configuration sized to ``budget`` seconds of training on this machine."""

    hidden: int
    depth: int
    batch_size: int
    lr: float
    steps: int
    seconds_per_step: float
    budget: float
    threads: int = 1

    def describe(self) -> dict:
        return {"hidden": self.hidden, "depth": self.depth, "batch_size": self.batch_size, "lr": self.lr,
                "steps": self.steps, "seconds_per_step": round(self.seconds_per_step, 4),
                "budget_seconds": self.budget, "threads": self.threads}


def default_size(n: int, d: int, device: str = "cpu") -> tuple[int, int, int, float]:
    """(hidden, depth, batch, lr) for n training rows of d columns on a CPU: the reduced network
    that beat the TLL vine on MAGIC in 90 s (256 x 4, batch 512, Adam 5e-4) from 4000 rows up; a
    smaller one below, where a wide net only memorises (batch at most the rows). On a GPU from
    4000 rows: the paper's 512 x 6, batch 1024, Adam 5e-5 (the budget then buys its steps)."""
    if device == "cuda" and n >= 4000:
        return 512, 6, min(1024, n), 5e-5
    if n >= 4000:
        hidden, depth = 256, 4
    elif n >= 1000:
        hidden, depth = 128, 3
    else:
        hidden, depth = 64, 2
    return hidden, depth, min(512, n), (5e-4 if n >= 4000 else 1e-3)


def round_steps(steps: float) -> int:
    """Round a planned step count down to two significant figures, so small timing jitter between
    two runs of one command on one machine gives the same plan (and the same bytes)."""
    steps = int(steps)
    if steps < 100:
        return max(steps, 1)
    scale = 10 ** (len(str(steps)) - 2)
    return steps // scale * scale


def plan_cdc(n: int, d: int, budget: float, config: CDCConfig, *, given: dict,
             device: str | torch.device = "cpu", max_steps: int = 20000, min_steps: int = 200,
             max_epochs: int = 1000, choose_threads: bool = False) -> Plan:
    """Size a CDC fit of (n, d) rows to ``budget`` seconds: the network from :func:`default_size`
    unless ``given`` (hidden / depth / batch_size / lr), and the steps from a timing probe of that
    network on this machine (3 warm-up and 5 timed steps; with ``choose_threads`` also on one
    thread, keeping the faster: torch's thread count is left set), at most ``max_steps`` and
    ``max_epochs`` passes over the rows (a small table's best validation checkpoint comes within a
    few hundred epochs, so it does not spend the whole budget)."""
    hidden, depth, batch, lr = default_size(n, d, torch.device(device).type)
    hidden, depth = given.get("hidden") or hidden, given.get("depth") or depth
    batch, lr = min(given.get("batch_size") or batch, n), given.get("lr") or lr
    probe_cfg = CDCConfig(**{**asdict(config), "hidden": hidden, "depth": depth, "batch_size": batch,
                             "lr": lr, "guide": "none"})
    probe = CDC(d, probe_cfg, None, device)
    opt = torch.optim.Adam(probe.net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(0)
    z = torch.randn((batch, d), generator=gen).to(probe.device)

    def seconds_a_step() -> float:
        times = []
        for i in range(8):
            t0 = time.perf_counter()
            loss, _ = probe.loss(probe.net, z, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if i >= 3:
                times.append(time.perf_counter() - t0)
        return float(np.median(times))

    threads = torch.get_num_threads()
    per_step = seconds_a_step()
    if choose_threads and threads > 1 and probe.device.type == "cpu":
        # a small network on busy cores runs faster on one thread than on several that wait
        # for each other: measure, keep the faster
        torch.set_num_threads(1)
        one = seconds_a_step()
        if one < per_step:
            threads, per_step = 1, one
        else:
            torch.set_num_threads(threads)
    per_step *= 1.1    # + EMA update and validation checkpoints
    cap = min(max_steps, max(min_steps, math.ceil(max_epochs * n / batch)))
    steps = round_steps(min(cap, max(min_steps, budget / per_step)))
    return Plan(hidden, depth, batch, lr, steps, per_step, budget, threads)
