"""Stop 42: one-at-a-time ablations of our NPE towards sbi 0.27's, for the SIR and OU misses.

Used by ``theta_map_bench.py --ablations NAME ...`` (one tool "cortexkit-abl-NAME" per name, fitted
beside ours and sbi on the same training rows). Each variant moves ONE difference of the list in
RESULTS.md ("Study: SIR and OU misses (stop 42)") to sbi's and keeps everything else of
``methods.fit_npe``: the init weights (``torch.manual_seed(seed)`` before the build), the split and
the batch order (a generator seeded ``seed``, split first), the training loop and the rejection
sampler. ``none`` moves nothing and must reproduce ``fit_npe`` exactly (the check of the harness).

    none         nothing moved (from the log map of log-normal parameters, the default before stop 42)
    theta-train  #2: after the map, theta standardised with the training rows' mean and sd
    x-train      #3: the x standardiser fitted on the training rows only
    theta-raw    #1: log-normal parameters z-scored on theta itself (the prior's log-normal mean
                 and sd), samples rejected to theta > 0 (box and normal parameters unchanged)
    theta-sbi    #1 + #2: sbi's theta handling (raw theta, training rows' statistics)
    net-sbi      sbi's own estimator (posterior_nn("zuko_nsf") built on the training rows) in our
                 training loop, sampled by rejection to the prior's support
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from cortexkit.tools.npe import methods as M
from cortexkit.tools.npe.estimator import FlowConfig, PosteriorEstimator
from cortexkit.tools.npe.training import TrainConfig, split_indices, train

ABLATIONS = ("none", "theta-train", "x-train", "theta-raw", "theta-sbi", "net-sbi")


class MappedPrior:
    """The prior seen through a changed theta map: log-normal columns optionally z-scored on theta
    itself, then an optional affine standardisation of the mapped u with given statistics. Offers
    what PosteriorEstimator uses of a Prior (dim, has_box, in_support and the two maps)."""

    def __init__(self, prior, raw_lognormal: bool = False):
        self.prior = prior
        self.dim = prior.dim
        self.logn = torch.tensor([f.kind == "lognormal" for f in prior.factors]) & raw_lognormal
        loc = torch.tensor([f.a for f in prior.factors])
        scale = torch.tensor([f.b for f in prior.factors])
        self.ln_mean = torch.exp(loc + scale**2 / 2)
        self.ln_sd = self.ln_mean * torch.sqrt(torch.expm1(scale**2))
        self.u_mean = torch.zeros(self.dim)
        self.u_std = torch.ones(self.dim)
        # leaks: mass can fall outside the support and is rejected at sampling
        self.has_box = prior.has_box or bool(self.logn.any())

    def in_support(self, theta):
        return self.prior.in_support(theta)

    def _raw(self, theta, box):
        u, ld = self.prior.to_unconstrained(theta, box, "log")
        if self.logn.any():
            m, sd = self.ln_mean.to(theta.dtype), self.ln_sd.to(theta.dtype)
            u = torch.where(self.logn, (theta - m) / sd, u)
            # replace the log map's log-det of these columns (-log theta - log scale) by the affine one
            scale = torch.tensor([f.b for f in self.prior.factors], dtype=theta.dtype)
            ld_log = -torch.log(theta.clamp_min(torch.finfo(theta.dtype).tiny)) - torch.log(scale)
            zero = torch.zeros((), dtype=theta.dtype)
            ld = ld - torch.where(self.logn, ld_log, zero).sum(-1) - torch.where(self.logn, torch.log(sd), zero).sum()
        return u, ld

    def fit_stats(self, theta, box="zscore"):
        u, _ = self._raw(theta, box)
        self.u_mean, self.u_std = u.mean(0), u.std(0).clamp_min(1e-14)

    def to_unconstrained(self, theta, box="zscore", lognormal="log"):  # the log-normal map is set above
        u, ld = self._raw(theta, box)
        m, sd = self.u_mean.to(u.dtype), self.u_std.to(u.dtype)
        return (u - m) / sd, ld - torch.log(sd).sum()

    def from_unconstrained(self, u, box="zscore", lognormal="log"):
        u = u * self.u_std.to(u.dtype) + self.u_mean.to(u.dtype)
        theta = self.prior.from_unconstrained(u, box, "log")
        return torch.where(self.logn, self.ln_mean.to(u.dtype) + self.ln_sd.to(u.dtype) * u, theta)


class SbiNet(nn.Module):
    """sbi's estimator behind our interface: log_prob(theta (n, d), x (n, x_dim)) -> (n,), and
    sample(n, x_o) by rejection to the prior's support."""

    def __init__(self, net, prior):
        super().__init__()
        self.net = net
        self.prior = prior

    def log_prob(self, theta, x):
        return -self.net.loss(theta, x)

    @torch.no_grad()
    def sample(self, n, x_o):
        kept, have = [], 0
        while have < n:
            th = self.net.sample((2 * n,), condition=x_o[None])[:, 0]
            th = th[self.prior.in_support(th)]
            kept.append(th)
            have += th.shape[0]
        return torch.cat(kept)[:n]


def fit_ablation(name: str, prior, theta, x, flow_cfg: FlowConfig, train_cfg: TrainConfig, seed: int):
    """One NPE fit with difference ``name`` moved to sbi's -> (model with .sample(n, x_o), history)."""
    if name not in ABLATIONS:
        raise ValueError(f"unknown ablation {name!r}; use one of {', '.join(ABLATIONS)}")
    g = M._generator(seed)
    tr, va = split_indices(theta.shape[0], train_cfg.validation_fraction, g)  # fit_npe's first use of g
    torch.manual_seed(seed)
    if name == "net-sbi":
        from sbi.neural_nets import posterior_nn

        model = SbiNet(posterior_nn("zuko_nsf")(theta[tr], x[tr]), prior)
    else:
        mapped = MappedPrior(prior, raw_lognormal=name in ("theta-raw", "theta-sbi"))
        if name in ("theta-train", "theta-sbi"):
            mapped.fit_stats(theta[tr], flow_cfg.theta_map)
        # the map is MappedPrior's: the estimator's own log-normal switch stays at the log map
        model = PosteriorEstimator(mapped, x.shape[1], dataclasses.replace(flow_cfg, lognormal_map="log"))
        model.standardizer.fit(x[tr] if name == "x-train" else x)
    hist = train(model, theta, x, train_cfg, g, None, (tr, va))
    return model, hist


def check_log_det(prior, theta, name="theta-raw", eps=1e-3):
    """Numerical check of MappedPrior's log-det (used once by hand): returns max |analytic - numeric|."""
    mp = MappedPrior(prior, raw_lognormal=name in ("theta-raw", "theta-sbi"))
    mp.u_mean, mp.u_std = torch.randn(prior.dim) * 0.1, torch.rand(prior.dim) + 0.5
    th = theta.double()
    _, ld = mp.to_unconstrained(th)
    num = torch.zeros(th.shape[0], dtype=torch.float64)
    for j in range(prior.dim):  # the maps are elementwise: the Jacobian is diagonal
        d = torch.zeros_like(th)
        d[:, j] = eps * th[:, j].abs().clamp_min(1e-3)
        up, _ = mp.to_unconstrained(th + d)
        dn, _ = mp.to_unconstrained(th - d)
        num += torch.log(((up - dn)[:, j] / (2 * d[:, j])).abs())
    return float((ld - num).abs().max())


def summarize(files, anchor="sbi-zuko_nsf", base="cortexkit-zscore", classifier="rf"):
    """Per task: each tool's mean C2ST, its paired difference to ``anchor`` (over (seed, observation)
    cells, +- 95 % half-width), the per-seed differences with their SE (sd / sqrt(seeds)), the share
    of ``base``'s gap it closes, epochs and train CPU. Markdown on stdout."""
    import json
    import statistics as st

    from cortexkit.tools.npe import metrics as Q

    rows = [json.loads(line) for p in files for line in open(p) if line.strip()]
    fits = {(r["task"], r["tool"], r["seed"]): r for r in rows if r.get("phase") == "fit" and r["method"] == "npe"}
    print(f"| task | tool | {classifier.upper()}-C2ST | − sbi (± hw, cells) | per seed − sbi | SE over seeds | share of the gap closed | epochs | train CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for task in sorted({k[0] for k in fits}):
        seeds = sorted({k[2] for k in fits if k[0] == task and k[1] == anchor})
        tools = sorted({k[1] for k in fits if k[0] == task}, key=lambda t: (t != base, t == anchor, t))
        gap = None
        for tool in tools:
            ss = [s for s in seeds if (task, tool, s) in fits]
            va, vb, per = [], [], []
            for s in ss:
                a, b = fits[(task, tool, s)][f"c2st_{classifier}"], fits[(task, anchor, s)][f"c2st_{classifier}"]
                m = min(len(a), len(b))
                va += a[:m]
                vb += b[:m]
                per.append(sum(a[:m]) / m - sum(b[:m]) / m)
            d = Q.mean_ci95([p - q for p, q in zip(va, vb)])
            se = st.stdev(per) / len(per) ** 0.5 if len(per) > 1 else float("nan")
            if tool == base:
                gap = d["mean"]
            share = "—" if tool in (base, anchor) or not gap else f"{1 - d['mean'] / gap:.2f}"
            ep = " / ".join(str(fits[(task, tool, s)]["epochs"]) for s in ss)
            cpu = sum(fits[(task, tool, s)]["train_cpu_s"] for s in ss) / len(ss)
            print(f"| {task} | {tool} | {sum(va) / len(va):.3f} | {d['mean']:+.3f} ± {d['ci95']:.3f} ({d['n']}) "
                  f"| {', '.join(f'{p:+.3f}' for p in per)} | {se:.3f} | {share} | {ep} | {cpu:.1f} |")


if __name__ == "__main__":
    import sys

    summarize(sys.argv[1:])
