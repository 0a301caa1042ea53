"""Built-in simulators (vectorised over the batch), with their priors and LF/HF pairs.

Every simulator maps theta (n, d) float32 and a torch.Generator to x (n, x_dim) float32.

ou        theta = (mu, sigma) ~ U[0.1, 3] x U[0.1, 0.6]
  hf      Euler-Maruyama OU  x_{t+1} = x_t + gamma (mu - x_t) dt + sigma sqrt(dt) eps,  gamma 0.5, dt 0.1,
          x_0 ~ N(mu + 3, 1), 101 steps, x = values at steps 0, 10, ..., 90
  lf      10 i.i.d. N(mu, sigma) draws
slcp      theta ~ U[-3, 3]^5; 4 draws of N(m, S), m = theta[:2], s1 = theta3^2, s2 = theta4^2,
          rho = tanh(theta5), S = [[s1^2 + 1e-6, rho s1 s2], [rho s1 s2, s2^2 + 1e-6]]  -> x (8,)
  lf      the same with the mean fixed to (0, 0)
sir       (beta, gamma) ~ LogNormal(log 0.4, 0.5) x LogNormal(log 1/8, 0.2); SIR ODE, N = 1e6, I0 = 1,
          160 days; x = Binomial(1000, I(t)/N) at
  hf      t = 0, 17, ..., 153 (sbibm)
  lf      solver output every 4 days, 10 of its days evenly spaced: t = 0, 16, 36, ..., 144, 160
          (coarse time resolution; sir_lf(..., saveat=32) gives the coarser t = 0, 32, ..., 160, 160, ...)
two_moons        sbibm two moons, theta ~ U[-1, 1]^2, x (2,): x = p + (-|z0|, z1), z = R(-pi/4) theta,
  hf      p = (r cos a + 0.25, r sin a), a ~ U(-pi/2, pi/2), r ~ N(0.1, 0.01^2)
  lf      a biased crescent: r ~ N(0.12, 0.02^2), offset 0.3 instead of 0.25 (wider, noisier, shifted)
gaussian_linear  sbibm, theta ~ N(0, 0.1 I_10),
  hf      x ~ N(theta, 0.1 I_10)
  lf      a biased gain and twice the noise: x ~ N(0.9 theta, 0.2 I_10)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from .priors import Factor, Prior


@dataclass(frozen=True)
class Task:
    name: str
    prior: Prior
    x_dim: int
    simulators: dict  # fidelity -> callable(theta, generator) -> x

    def simulator(self, fidelity: str = "hf") -> Callable:
        if fidelity not in self.simulators:
            raise ValueError(f"task {self.name!r} has no {fidelity!r} simulator; it has {', '.join(self.simulators)}")
        return self.simulators[fidelity]


# --------------------------------------------------------------------------------------------- OU
OU_GAMMA, OU_DT, OU_STEPS, OU_OFFSET = 0.5, 0.1, 101, 3.0
OU_KEEP = list(range(0, 100, 10))


def ou_hf(theta: torch.Tensor, g: torch.Generator | None = None) -> torch.Tensor:
    mu, sigma = theta[:, 0:1].double(), theta[:, 1:2].double()
    n = theta.shape[0]
    x = mu + OU_OFFSET + torch.randn(n, 1, generator=g, dtype=torch.float64)
    noise = torch.randn(n, OU_STEPS - 1, generator=g, dtype=torch.float64) * math.sqrt(OU_DT)
    trace = [x]
    for t in range(OU_STEPS - 1):
        x = x + OU_GAMMA * (mu - x) * OU_DT + sigma * noise[:, t:t + 1]
        trace.append(x)
    return torch.cat(trace, 1)[:, OU_KEEP].float()


def ou_lf(theta: torch.Tensor, g: torch.Generator | None = None) -> torch.Tensor:
    mu, sigma = theta[:, 0:1], theta[:, 1:2]
    return (mu + sigma * torch.randn(theta.shape[0], 10, generator=g)).float()


def ou_log_likelihood(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Exact log p_HF(x | theta) of the subsampled OU trace: theta (n, 2), x (10,) -> (n,).
    Transition over k steps of the exact OU: mean mu + (x - mu) e^{-gamma k dt},
    variance sigma^2 (1 - e^{-2 gamma k dt}) / (2 gamma) (the Euler-Maruyama scheme is close to it)."""
    mu, sigma = theta[:, 0].double(), theta[:, 1].double()
    x = x.double()
    lp = -0.5 * (x[0] - mu - OU_OFFSET) ** 2 - 0.5 * math.log(2 * math.pi)
    lag = (OU_KEEP[1] - OU_KEEP[0]) * OU_DT
    a = math.exp(-OU_GAMMA * lag)
    var = sigma**2 * (1 - a * a) / (2 * OU_GAMMA)
    for j in range(1, x.shape[0]):
        m = mu + (x[j - 1] - mu) * a
        lp = lp - 0.5 * (x[j] - m) ** 2 / var - 0.5 * torch.log(2 * math.pi * var)
    return lp


# --------------------------------------------------------------------------------------------- SLCP
def _slcp(theta: torch.Tensor, g, fixed_mean: bool) -> torch.Tensor:
    t = theta.double()
    n = t.shape[0]
    m = torch.zeros(n, 2, dtype=torch.float64) if fixed_mean else t[:, :2]
    s1, s2, rho = t[:, 2] ** 2, t[:, 3] ** 2, torch.tanh(t[:, 4])
    eps = 1e-6
    # Cholesky of [[s1^2+eps, rho s1 s2], [rho s1 s2, s2^2+eps]]
    l11 = torch.sqrt(s1**2 + eps)
    l21 = rho * s1 * s2 / l11
    l22 = torch.sqrt((s2**2 + eps - l21**2).clamp_min(0))
    z = torch.randn(n, 4, 2, generator=g, dtype=torch.float64)
    x1 = m[:, None, 0] + l11[:, None] * z[..., 0]
    x2 = m[:, None, 1] + l21[:, None] * z[..., 0] + l22[:, None] * z[..., 1]
    return torch.stack([x1, x2], -1).reshape(n, 8).float()


def slcp_hf(theta, g=None):
    return _slcp(theta, g, fixed_mean=False)


def slcp_lf(theta, g=None):
    return _slcp(theta, g, fixed_mean=True)


# --------------------------------------------------------------------------------------------- SIR
SIR_N, SIR_DAYS, SIR_COUNT = 1e6, 160.0, 1000
SIR_DT = 0.05  # RK4 step in days; differences to an adaptive solver are far below the binomial noise


def sir_infected(theta: torch.Tensor, times: list[float], dt: float = SIR_DT) -> torch.Tensor:
    """I(t) of the SIR ODE (S' = -b S I / N, I' = b S I / N - g I) at the given integer days -> (n, len(times));
    times may repeat."""
    b, gm = theta[:, 0].double(), theta[:, 1].double()
    n = theta.shape[0]
    y = torch.stack([torch.full((n,), SIR_N - 1.0, dtype=torch.float64), torch.ones(n, dtype=torch.float64)], 1)

    def f(y):
        s, i = y[:, 0], y[:, 1]
        inf = b * s * i / SIR_N
        return torch.stack([-inf, inf - gm * i], 1)

    steps_per_day = round(1 / dt)
    want = {}
    for k, t in enumerate(times):
        want.setdefault(round(t * steps_per_day), []).append(k)
    out = torch.empty(n, len(times), dtype=torch.float64)
    last = max(want)
    for step in range(last + 1):
        for k in want.get(step, ()):
            out[:, k] = y[:, 1]
        if step == last:
            break
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return out


def _sir(theta, g, times):
    i = sir_infected(theta, times)
    p = (i / SIR_N).clamp(0, 1)
    p = torch.where(torch.isfinite(p), p, torch.zeros_like(p))
    return torch.binomial(torch.full_like(p, SIR_COUNT), p, generator=g).float()


def sir_lf_times(saveat: float) -> list[float]:
    """The 10 observation days of the coarse-resolution SIR: the solver keeps days 0, saveat, ..., <= 160;
    10 of them are taken evenly spaced (rounded indices); with fewer than 10 the last one repeats
    (each repeat an independent binomial draw)."""
    steps = int(math.floor(SIR_DAYS / saveat + 1e-9)) + 1
    if steps < 10:
        idx = list(range(steps)) + [steps - 1] * (10 - steps)
    else:
        idx = [round(k * (steps - 1) / 9) for k in range(10)]
    return [float(i * saveat) for i in idx]


SIR_HF_TIMES = [float(t) for t in range(0, 161, 17)]
SIR_LF_SAVEAT = 4.0
SIR_LF_TIMES = sir_lf_times(SIR_LF_SAVEAT)  # 0, 16, 36, 52, 72, 88, 108, 124, 144, 160


def sir_hf(theta, g=None):
    return _sir(theta, g, SIR_HF_TIMES)


def sir_lf(theta, g=None, saveat: float = SIR_LF_SAVEAT):
    return _sir(theta, g, sir_lf_times(saveat))


# --------------------------------------------------------------------------------------------- sbibm
def _two_moons(theta, g, radius: float, radius_sd: float, offset: float):
    t = theta.double()
    n = t.shape[0]
    a = (torch.rand(n, generator=g, dtype=torch.float64) - 0.5) * math.pi
    r = radius + radius_sd * torch.randn(n, generator=g, dtype=torch.float64)
    p = torch.stack([r * torch.cos(a) + offset, r * torch.sin(a)], 1)
    c = s = math.sqrt(0.5)  # rotation by -pi/4
    z0 = c * t[:, 0] + s * t[:, 1]
    z1 = -s * t[:, 0] + c * t[:, 1]
    return (p + torch.stack([-z0.abs(), z1], 1)).float()


def two_moons(theta, g=None):
    return _two_moons(theta, g, 0.1, 0.01, 0.25)


def two_moons_lf(theta, g=None):
    """A cheap model with the wrong crescent: radius 0.12 +- 0.02 around an offset of 0.3 (HF: 0.1 +- 0.01, 0.25)."""
    return _two_moons(theta, g, 0.12, 0.02, 0.3)


def _gaussian_linear(theta, g, gain: float, variance: float):
    t = theta.double()
    return (gain * t + math.sqrt(variance) * torch.randn(t.shape, generator=g, dtype=torch.float64)).float()


def gaussian_linear(theta, g=None):
    return _gaussian_linear(theta, g, 1.0, 0.1)


def gaussian_linear_lf(theta, g=None):
    """A cheap model with a biased gain and twice the noise: x ~ N(0.9 theta, 0.2 I) (HF: N(theta, 0.1 I))."""
    return _gaussian_linear(theta, g, 0.9, 0.2)


def _box(names, low, high):
    return Prior(tuple(Factor(n, "uniform", low, high) for n in names))


TASKS = {
    "ou": Task("ou", Prior((Factor("mu", "uniform", 0.1, 3.0), Factor("sigma", "uniform", 0.1, 0.6))), 10,
               {"hf": ou_hf, "lf": ou_lf}),
    "slcp": Task("slcp", _box([f"theta_{i + 1}" for i in range(5)], -3.0, 3.0), 8, {"hf": slcp_hf, "lf": slcp_lf}),
    "sir": Task("sir", Prior((Factor("beta", "lognormal", math.log(0.4), 0.5),
                              Factor("gamma", "lognormal", math.log(0.125), 0.2))), 10, {"hf": sir_hf, "lf": sir_lf}),
    "two_moons": Task("two_moons", _box(["theta_1", "theta_2"], -1.0, 1.0), 2, {"hf": two_moons, "lf": two_moons_lf}),
    "gaussian_linear": Task("gaussian_linear",
                            Prior(tuple(Factor(f"theta_{i + 1}", "normal", 0.0, math.sqrt(0.1)) for i in range(10))), 10,
                            {"hf": gaussian_linear, "lf": gaussian_linear_lf}),
}


def get_task(name: str) -> Task:
    key = name.lower().replace("-", "_")
    if key not in TASKS:
        raise ValueError(f"unknown task {name!r}; built-in tasks: {', '.join(TASKS)}")
    return TASKS[key]
