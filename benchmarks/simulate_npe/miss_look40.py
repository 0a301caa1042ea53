"""Stop 40: one focused look at the cells where cortexkit scored above sbi in the grid (theta_map_bench).

On the grid's own training sets (generator seed 2026, pool and LF drawn as theta_map_bench draws them),
ours refitted with one thing changed at a time, RF-C2ST on the same observations:
  npe      default (reproduces the grid row), --patience 200 (early stop?), 10 spline bins (sbi's)
  mf-npe   default, x-standardiser kept from LF (sbi keeps it; ours refits it on the HF set)

    OMP_NUM_THREADS=1 python benchmarks/simulate_npe/miss_look40.py --task gaussian_linear --observations 5 \
        --out benchmarks/simulate_npe/results/miss_look40.jsonl
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ou_bench import emit  # noqa: E402
from theta_map_bench import c2st, reference  # noqa: E402

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe.estimator import FlowConfig  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402
from cortexkit.tools.npe.training import TrainConfig  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True)
    ap.add_argument("--pool", type=int, default=1000, help="the grid run's largest budget")
    ap.add_argument("--n-npe", type=int, default=1000)
    ap.add_argument("--n-mf", type=int, default=50)
    ap.add_argument("--n-lf", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[12, 13])
    ap.add_argument("--observations", type=int, default=5)
    ap.add_argument("--skip-mf", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    task, ref = get_task(args.task), reference(args.task)
    g = torch.Generator().manual_seed(2026)
    theta_all = task.prior.sample(args.pool, g)
    x_all = task.simulator("hf")(theta_all, g)
    theta_lf = task.prior.sample(args.n_lf, g)
    lf = (theta_lf, task.simulator("lf")(theta_lf, g))
    base = TrainConfig(lr=5e-4, batch_size=200, validation_fraction=0.1, patience=60)
    long = TrainConfig(lr=5e-4, batch_size=200, validation_fraction=0.1, patience=200)
    for seed in args.seeds:
        th, x = theta_all[:args.n_npe], x_all[:args.n_npe]
        # stop 40 ran with 8 bins, then the default (it became 10 at stop 41)
        log_map = dict(lognormal_map="log")  # stop 40 ran before the log-normal z-score (stop 42)
        for variant, fcfg, tcfg in (("default", FlowConfig(bins=8, **log_map), base),
                                    ("patience200", FlowConfig(bins=8, **log_map), long),
                                    ("bins10", FlowConfig(bins=10, **log_map), base)):
            t0 = time.process_time()
            post, h = M.fit_npe(task.prior, th, x, fcfg, tcfg, seed)
            t = time.process_time() - t0
            emit(args.out, {"task": args.task, "method": "npe", "n_sim": args.n_npe, "seed": seed, "variant": variant,
                            "train_cpu_s": t, "epochs": h.epochs,
                            **c2st(lambda xo, k, m=post: m.sample(k, xo), ref, 1000, ["rf"], args.observations)})
        if args.skip_mf:
            continue
        pre, _ = M.fit_npe(task.prior, *lf, FlowConfig(bins=8, lognormal_map="log"), M.pretrain_config(base, 1e-4, 20), seed)
        th, x = theta_all[:args.n_mf], x_all[:args.n_mf]
        for variant, refit in (("default", True), ("lf_x_stats", False)):
            t0 = time.process_time()
            ft, h = M.fine_tune(pre, th, x, base, seed, refit_x_stats=refit)
            emit(args.out, {"task": args.task, "method": "mf-npe", "n_sim": args.n_mf, "seed": seed, "variant": variant,
                            "train_cpu_s": time.process_time() - t0, "epochs": h.epochs,
                            **c2st(lambda xo, k, m=ft: m.sample(k, xo), ref, 1000, ["rf"], args.observations)})
        emit(args.out, {"task": args.task, "method": "lf-only", "seed": seed, "variant": "pretrained, no HF",
                        **c2st(lambda xo, k, m=pre: m.sample(k, xo), ref, 1000, ["rf"], args.observations)})


if __name__ == "__main__":
    main()
