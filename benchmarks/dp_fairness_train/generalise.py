"""Issue 35 item 1: why a constraint met on the training rows is not met on the test rows.

One run per (data set, gamma, seed) at the tool's defaults (epsilon 1) through the tools API; for the
last and the averaged iterate: the exact hard DP gap on the training rows and on the test rows, the soft
(softmax(tau * logits)) gap on the training rows, and the bootstrap sd of the test gap (the test set's own
sampling noise, the floor below which no method can promise a test gap). Writes YAML.

    python benchmarks/dp_fairness_train/generalise.py adult --gammas 0.01,0.02 --seeds 2 -o out.yaml
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from cortexkit.tools import dpfair  # noqa: E402
from cortexkit.tools.dpfair import metrics  # noqa: E402


def gap(pred, groups):
    return metrics.fairness_gaps(pred, np.zeros_like(pred), groups, 2)["dp_gap"]


def soft_gap(probs, groups):
    rates = [probs[groups == g, 1].mean() for g in np.unique(groups)]
    return float(max(rates) - min(rates))


def bootstrap_sd(pred, groups, rounds=200, seed=0):
    rng = np.random.default_rng(seed)
    n = len(pred)
    vals = []
    for _ in range(rounds):
        i = rng.integers(0, n, n)
        vals.append(gap(pred[i], groups[i]))
    return float(np.std(vals))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--gammas", default="0.01,0.02")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--dual-rates", default="hard", choices=["hard", "soft"])
    ap.add_argument("--average-from", type=float, default=0.0,
                    help="the averaged iterate's window (train --average-from; 0: the uniform average)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unconstrained run")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    train, test, label, sensitive = common.load(args.dataset)
    tr = {c: train[c].tolist() for c in train.columns}
    te = {c: test[c].tolist() for c in test.columns}
    rows = []
    for gamma in [float(g) for g in args.gammas.split(",")] + ([] if args.no_baseline else [None]):
        for seed in range(args.seeds):
            cfg = dpfair.TrainConfig(label=label, sensitive=[sensitive], gamma=gamma or 0.05, epsilon=args.epsilon,
                                     constraint="none" if gamma is None else "demographic-parity", validation=0,
                                     dual_rates=args.dual_rates, average_from=args.average_from)
            t0 = time.perf_counter()
            plan = dpfair.plan(tr, cfg, seed=seed)
            fitted = dpfair.train(tr, cfg, plan, seed=seed)
            row = {"gamma": gamma, "seed": seed, "steps": plan.ledger.steps, "q": plan.ledger.sampling_rate,
                   "lr_dual": plan.lr_dual, "seconds": round(time.perf_counter() - t0, 1),
                   "train_violation_released": fitted.stop.get("train_violation")}
            for it in ("last", "average"):
                model = dpfair.Model.from_fitted(fitted, it)
                out = {}
                for name, cols in (("train", tr), ("test", te)):
                    logits = model.logits(cols)
                    pred = logits.argmax(1).numpy()
                    g = np.array(cols[sensitive])
                    y = np.array([plan.classes.index(v) for v in cols[label]])
                    out[f"{name}_accuracy"] = round(float((pred == y).mean()), 4)
                    out[f"{name}_gap"] = round(gap(pred, g), 4)
                    out[f"{name}_soft_gap"] = round(soft_gap(torch.softmax(cfg.temperature * logits, 1).numpy(), g), 4)
                    if name == "test":
                        out["test_gap_sd"] = round(bootstrap_sd(pred, g), 4)
                row[it] = out
            rows.append(row)
            print(yaml.safe_dump([row], sort_keys=False), flush=True)
    Path(args.output).write_text(yaml.safe_dump({"dataset": args.dataset, "epsilon": args.epsilon,
                                                 "dual_rates": args.dual_rates,
                                                 "average_from": args.average_from, "rows": rows},
                                                sort_keys=False))


if __name__ == "__main__":
    main()
