"""Issue 36: training CPU seconds per epoch, cortexkit NPE against sbi 0.27 NPE on the same data.

Both fit the same simulations for exactly --epochs epochs (patience set out of reach), with the same
hyperparameters (lr 5e-4, batch 200, 10 % validation, clip 5), one torch thread, in one process, and
alternate --repeats times so that load on a shared machine hits both alike. The figure is
time.process_time of the training call divided by the epochs it ran; the first optimiser
construction of the process (sbi's or ours) is timed separately as ``first_call_s``.

    OMP_NUM_THREADS=1 python benchmarks/simulate_npe/epoch_time_bench.py --task two_moons --n-sim 1000 --epochs 30
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe.estimator import FlowConfig  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402
from cortexkit.tools.npe.training import TrainConfig  # noqa: E402


def ours(task, theta, x, epochs, seed):
    cfg = TrainConfig(lr=5e-4, batch_size=200, validation_fraction=0.1, patience=10**6, clip=5.0, max_epochs=epochs)
    t0 = time.process_time()
    _, h = M.fit_npe(task.prior, theta, x, FlowConfig(), cfg, seed)
    return time.process_time() - t0, h.epochs


def sbi(task_name, theta, x, epochs, seed, estimator):
    from sbi.inference import NPE
    from theta_map_bench import sbi_prior
    from ou_bench import sbi_estimator

    torch.manual_seed(seed)
    prior = sbi_prior(task_name)
    inf = NPE(prior=prior, density_estimator=sbi_estimator(estimator, prior), show_progress_bars=False)
    t0 = time.process_time()
    inf.append_simulations(theta, x).train(training_batch_size=200, learning_rate=5e-4, validation_fraction=0.1,
                                           stop_after_epochs=10**6, max_num_epochs=epochs, clip_max_norm=5.0,
                                           show_train_summary=False)
    return time.process_time() - t0, inf.summary["epochs_trained"][-1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--task", default="two_moons")
    p.add_argument("--n-sim", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--sbi", nargs="*", default=["zuko_nsf", "zuko_nsf_bins8"],
                   help="sbi estimators (zuko_nsf: sbi's default, 10 bins; zuko_nsf_bins8: our 8 bins)")
    args = p.parse_args()
    torch.set_num_threads(1)
    task = get_task(args.task)
    g = torch.Generator().manual_seed(2026)
    theta = task.prior.sample(args.n_sim, g)
    x = task.simulator("hf")(theta, g)
    t0 = time.process_time()
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    first = time.process_time() - t0
    rows = {"cortexkit": []} | {f"sbi-{e}": [] for e in args.sbi}
    for _ in range(args.repeats):
        t, ep = ours(task, theta, x, args.epochs, args.seed)
        rows["cortexkit"].append(t / ep)
        for e in args.sbi:
            t, ep = sbi(args.task, theta, x, args.epochs, args.seed, e)
            rows[f"sbi-{e}"].append(t / ep)
    best = {k: min(v) for k, v in rows.items()}
    out = {"task": args.task, "n_sim": args.n_sim, "epochs": args.epochs, "first_call_s": round(first, 3),
           "s_per_epoch_min": {k: round(v, 4) for k, v in best.items()},
           "s_per_epoch_all": {k: [round(t, 4) for t in v] for k, v in rows.items()},
           "ratio_vs_sbi": {k: round(best["cortexkit"] / v, 3) for k, v in best.items() if k != "cortexkit"}}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
