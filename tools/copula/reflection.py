"""The reflection copula: a billiard in the unit cube forgets dependence, a velocity field remembers it.

Forward: u_t = R(u_0 + t v_0) coordinate-wise with v_0 ~ N(0, I), where R folds the real line onto
[0, 1] (R(x) = x - floor(x) for even floor(x), 1 - (x - floor(x)) for odd); every marginal stays
U(0, 1) and u_t tends to independence (at T = 1.5 the first Fourier mode is ~1.5e-5). The velocity
target is v_t = +v_0 on even folds and -v_0 on odd ones. A network v(u, t) is fitted by
E ||v(u_t, t) - v_t||^2 with t = T U^4, and samples start from U(0, 1)^d at T and take Euler
steps back to 0, reflecting after every step. Sampling only: this model has no density.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn


@dataclass
class ReflectionConfig:
    hidden: int = 512
    layers: int = 5
    lr: float = 1e-4
    batch_size: int = 512
    clip: float = 1.0
    ema: float = 0.999
    steps: int = 20000
    time_limit: float = 0.0
    t_max: float = 1.5
    sample_steps: int = 49


PRECISIONS = ("fp32", "bf16")


def reflect(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., d) real positions -> (folded positions in [0, 1], +1/-1 sign of the velocity)."""
    floor = torch.floor(x)
    frac = x - floor
    odd = torch.remainder(floor, 2) == 1
    return torch.where(odd, 1 - frac, frac), torch.where(odd, -1.0, 1.0).to(x.dtype)


class VelocityNet(nn.Module):
    """(batch, d) u and (batch, 1) t -> (batch, d): Linear(d+1, H), layers x [Linear(H, H), SiLU], Linear(H, d)."""

    def __init__(self, dim: int, hidden: int, layers: int):
        super().__init__()
        mods: list[nn.Module] = [nn.Linear(dim + 1, hidden)]
        for _ in range(layers):
            mods += [nn.Linear(hidden, hidden), nn.SiLU()]
        mods.append(nn.Linear(hidden, dim))
        self.net = nn.Sequential(*mods)

    def forward(self, u: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([u, t], dim=1))


class Reflection:
    def __init__(self, dim: int, config: ReflectionConfig, device: str | torch.device = "cpu"):
        self.dim, self.config = dim, config
        self.device = torch.device(device)
        self.net = VelocityNet(dim, config.hidden, config.layers).to(self.device)

    def loss(self, net: nn.Module, u0: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        n = u0.shape[0]
        t = self.config.t_max * torch.rand((n, 1), generator=generator).to(self.device) ** 4
        v0 = torch.randn(u0.shape, generator=generator).to(self.device)
        ut, sign = reflect(u0 + t * v0)
        return ((net(ut, t) - sign * v0) ** 2).sum(1).mean()

    def _step_function(self, precision: str) -> Callable[[torch.Tensor, float], torch.Tensor]:
        """The sampler's velocity v(u, t) as (m, d) float32 u, float t -> (m, d) float32, with the time
        input folded into the first layer's bias (no concatenation per step); ``bf16`` runs every
        matrix product in bfloat16 (AMX/tensor cores) on a bfloat16 copy of the weights."""
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r} ({' or '.join(PRECISIONS)})")
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        mods = list(self.net.net)
        first = mods[0]
        w_u = first.weight[:, :self.dim].T.contiguous().to(dtype)
        w_t, b0 = first.weight[:, self.dim].float(), first.bias.float()
        rest = [copy.deepcopy(m).to(dtype) for m in mods[1:]]

        def velocity(u: torch.Tensor, t: float) -> torch.Tensor:
            h = u.to(dtype) @ w_u + (t * w_t + b0).to(dtype)
            for m in rest:
                h = m(h)
            return h.float()

        return velocity

    @torch.inference_mode()
    def sample(self, n: int, generator: torch.Generator, batch: int = 16384,
               precision: str = "fp32") -> np.ndarray:
        """(n, d) samples on the cube: Euler steps from T to 0 with a fold after every step; the
        positions stay float32 whatever ``precision`` the network runs in."""
        grid = torch.linspace(self.config.t_max, 0, self.config.sample_steps + 1, dtype=torch.float64).tolist()
        velocity = self._step_function(precision)
        out = []
        for start in range(0, n, batch):
            m = min(batch, n - start)
            u = torch.rand((m, self.dim), generator=generator).to(self.device)
            for i in range(self.config.sample_steps):
                u, _ = reflect(u + (grid[i + 1] - grid[i]) * velocity(u, grid[i]))
            out.append(u.double().cpu())
        return torch.cat(out).numpy()

    def state(self) -> dict[str, torch.Tensor]:
        return {f"reflection.{k}": v.detach().cpu().float() for k, v in self.net.state_dict().items()}

    def load_state(self, tensors: dict[str, torch.Tensor]) -> None:
        own = {k[len("reflection."):]: v for k, v in tensors.items() if k.startswith("reflection.")}
        self.net.load_state_dict(own)
        self.net.eval()

    def describe(self) -> dict:
        return asdict(self.config)


def fit_reflection(u: np.ndarray, config: ReflectionConfig, *, generator: torch.Generator,
                   device: str | torch.device = "cpu", progress: Callable | None = None,
                   log: Callable[[str], None] | None = None) -> Reflection:
    """Train the velocity field on (n, d) pseudo-observations; returns the model with EMA weights."""
    data = torch.as_tensor(u, dtype=torch.float32).to(device)
    n, d = data.shape
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
    model = Reflection(d, config, device)
    net = model.net
    ema = copy.deepcopy(net)
    for p in ema.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    steps = range(config.steps)
    bar = progress(steps, total=config.steps, desc="fit reflection") if progress else steps
    start = time.perf_counter()
    batch = min(config.batch_size, n)
    step = -1
    for step in bar:
        idx = torch.randint(0, n, (batch,), generator=generator).to(data.device)
        loss = model.loss(net, data[idx], generator)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), config.clip)
        opt.step()
        with torch.no_grad():
            decay = min(config.ema, (1 + step) / (10 + step))
            for pe, pn in zip(ema.parameters(), net.parameters()):
                pe.mul_(decay).add_(pn, alpha=1 - decay)
        if log and step % 500 == 0:
            log(f"step {step}: loss {float(loss.detach()):.4f}")
        if config.time_limit and time.perf_counter() - start > config.time_limit:
            if log:
                log(f"time limit reached after {step + 1} steps")
            break
    model.net = ema.eval()
    model.steps_done = step + 1
    return model
