"""Issue 36, stop 44: where an NPE epoch's CPU goes, at 10^4 simulations (one torch thread).

The training loop of tools/npe/training.py written out step by step (the same calls in the same
order: shuffle, index, zero_grad, the flow's forward (log q), backward, gradient clip, Adam, then
the validation pass and the best-weights copy), each phase timed with time.process_time over
--epochs epochs of the tool's default flow on the task's 10^4-row stop-43 training set.
Prints YAML: CPU s per epoch and each phase's share.

    OMP_NUM_THREADS=1 python benchmarks/simulate_npe/epoch_profile.py --tasks two_moons sir --epochs 4
"""
from __future__ import annotations

import argparse
import time

import torch
import yaml

from cortexkit.tools.npe.estimator import FlowConfig, PosteriorEstimator
from cortexkit.tools.npe.tasks import get_task
from cortexkit.tools.npe.training import Adam, TrainConfig, split_indices

PHASES = ("shuffle+index", "zero_grad", "forward", "backward", "clip", "adam", "validation", "best-copy")


def profile(name: str, n: int, epochs: int, seed: int = 12) -> dict:
    task = get_task(name)
    g = torch.Generator().manual_seed(2026)
    theta = task.prior.sample(n, g)
    x = task.simulator("hf")(theta, g)
    cfg = TrainConfig()
    torch.manual_seed(seed)
    model = PosteriorEstimator(task.prior, x.shape[1], FlowConfig())
    model.standardizer.fit(x)
    tr, va = split_indices(n, cfg.validation_fraction, torch.Generator().manual_seed(seed))
    ttr, xtr, tva, xva = theta[tr], x[tr], theta[va], x[va]
    opt = Adam(model.parameters(), cfg.lr)
    live = list(model.state_dict(keep_vars=True).values())
    best = [t.detach().clone() for t in live]
    batch, steps = cfg.batch_size, len(tr) // cfg.batch_size
    t = dict.fromkeys(PHASES, 0.0)
    clock = time.process_time
    for _ in range(epochs):
        a = clock()
        order = torch.randperm(len(tr), generator=g)
        t["shuffle+index"] += clock() - a
        for b in range(steps):
            a = clock()
            idx = order[b * batch:(b + 1) * batch]
            th, xx = ttr[idx], xtr[idx]
            b1 = clock()
            opt.zero_grad()
            b2 = clock()
            loss = -model.flow_log_prob(th, xx).mean()
            b3 = clock()
            loss.backward()
            b4 = clock()
            torch.nn.utils.clip_grad_norm_(opt.params, cfg.clip, foreach=True)
            b5 = clock()
            opt.step()
            b6 = clock()
            for k, (u, v) in zip(PHASES[:6], ((a, b1), (b1, b2), (b2, b3), (b3, b4), (b4, b5), (b5, b6))):
                t[k] += v - u
        a = clock()
        with torch.no_grad():
            -model.flow_log_prob(tva, xva).mean().item()
        b = clock()
        with torch.no_grad():
            torch._foreach_copy_(best, [q.detach() for q in live])
        t["validation"] += b - a
        t["best-copy"] += clock() - b
    total = sum(t.values())
    return {"task": name, "n_sim": n, "epochs": epochs, "steps_per_epoch": steps,
            "cpu_s_per_epoch": round(total / epochs, 4),
            "share": {k: round(v / total, 4) for k, v in t.items()}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", nargs="+", default=["two_moons", "sir"])
    p.add_argument("--n-sim", type=int, default=10000)
    p.add_argument("--epochs", type=int, default=4)
    args = p.parse_args()
    torch.set_num_threads(1)
    print(yaml.safe_dump([profile(t, args.n_sim, args.epochs) for t in args.tasks], sort_keys=False))


if __name__ == "__main__":
    main()
