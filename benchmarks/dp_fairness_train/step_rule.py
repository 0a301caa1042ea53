"""Which default primal step transfers? Issue 23 item 1, on VALIDATION splits only (1/5 of each training
part, the split transfer.py tunes Opacus's lr on), never on the test parts.

For each shipped dataset the planner's own (q, T, sigma) are kept (defaults, epsilon 1), and only the primal
step length s = lr x clip varies: the fixed rule s = 2 (the current default, --lr 2 / --clip) against the
noise-scaled rule s = kappa x B / sigma (B = q n, the expected batch), under which every update's Gaussian
noise has the same per-coordinate std kappa whatever n, q and sigma are (lr sigma C / B = kappa), and the
capped rule s = min(2, c x B / (sigma sqrt(T))), which keeps s = 2 unless the noise that T updates add up to
(kappa sqrt(T)) would exceed c: it only shrinks the step of small-batch runs.

    OMP_NUM_THREADS=1 python benchmarks/dp_fairness_train/step_rule.py --clips 3 \
        --rules fixed:2,noise:0.01,capT:0.3,capT:0.6 --out benchmarks/dp_fairness_train/results/step_rule.yaml
    OMP_NUM_THREADS=1 python benchmarks/dp_fairness_train/step_rule.py --datasets parkinsons,compas,german \
        --constraints none --clips 1,3 --rules fixed:2,capT:0.3,fixed:0.5 \
        --out benchmarks/dp_fairness_train/results/step_rule_clip.yaml

Each trained model is scored at both iterates (the default average and the last). Adult's planned batch is
large enough that capT keeps s = 2 there (2840 / (10 x sqrt(1000)) x 0.3 > 2), so Adult only needs the fixed
and noise rows.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

RULES = ("fixed:2", "noise:0.01", "capT:0.3", "capT:0.6")


def validation_tables(name: str, split: int = 0):
    train, _, label, sensitive = common.load(name)
    if name == "compas":   # as transfer.py: the two large race groups
        train = train[train[sensitive].isin(("African-American", "Caucasian"))]
    rng = np.random.default_rng(split)
    val = np.zeros(len(train), dtype=bool)
    val[rng.choice(len(train), len(train) // 5, replace=False)] = True
    fit, held = train[~val], train[val]
    cols = lambda df: {c: df[c].astype(str).tolist() for c in df.columns}  # noqa: E731
    return cols(fit), cols(held), label, sensitive


def step_length(rule: str, batch: float, sigma: float, steps: int) -> float:
    """fixed:s -> s; noise:k -> k B / sigma; capT:c -> min(2, c B / (sigma sqrt(T)))."""
    kind, value = rule.split(":")
    if kind == "fixed":
        return float(value)
    if kind == "noise":
        return float(value) * batch / sigma
    return min(2.0, float(value) * batch / (sigma * steps ** 0.5))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "step_rule.yaml"))
    ap.add_argument("--datasets", default="german,compas,parkinsons,adult")
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--gamma", type=float, default=0.05)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--clips", default="3", help="clip norms to try (comma list)")
    ap.add_argument("--constraints", default="none,demographic-parity")
    ap.add_argument("--splits", type=int, default=3, help="validation splits (rng seeds 0..k-1), averaged")
    args = ap.parse_args()
    torch.set_num_threads(1)
    from cortexkit.tools import dpfair

    result = {"benchmark": "issue 23: primal step rule on validation splits", "commit": common.git_commit(),
              "epsilon": 1.0, "gamma": args.gamma, "seeds": args.seeds, "datasets": {}}
    for name in args.datasets.split(","):
        rows = {}
        for split in range(args.splits):
            fit, held, label, sensitive = validation_tables(name, split)
            for constraint, clip in itertools.product(args.constraints.split(","),
                                                      [float(c) for c in args.clips.split(",")]):
                tag = {"none": "none", "demographic-parity": "dp"}[constraint] + f" clip {clip:g}"
                config = dpfair.TrainConfig(label=label, sensitive=[sensitive], constraint=constraint,
                                            gamma=args.gamma, clip=clip)
                plan = dpfair.plan(fit, config)
                led = plan.ledger
                batch = led.sampling_rate * plan.n
                for rule in args.rules.split(","):
                    step = step_length(rule, batch, led.sigma, led.steps)
                    p = dataclasses.replace(plan, lr=step / config.clip)
                    t0 = time.perf_counter()
                    fitted = [dpfair.train(fit, config, p, seed=s) for s in range(args.seeds)]
                    for iterate in ("average", "last"):
                        runs = [dpfair.evaluate(dpfair.Model.from_fitted(f, iterate), held) for f in fitted]
                        row = {"split": split, "step": step, "q": led.sampling_rate, "steps": led.steps,
                               "sigma": led.sigma, "batch": batch,
                               "accuracy": statistics.fmean(r["accuracy"] for r in runs),
                               "dp_gap": statistics.fmean(r["dp_gap"] for r in runs),
                               "seconds": time.perf_counter() - t0}
                        rows.setdefault(f"{tag} {rule} {iterate}", []).append(row)
                        print(name, split, tag, rule, iterate, {k: round(v, 4) for k, v in row.items()}, flush=True)
        result.setdefault("summary", {})[name] = {
            key: {"accuracy": statistics.fmean(r["accuracy"] for r in rs),
                  "dp_gap": statistics.fmean(r["dp_gap"] for r in rs),
                  "step": statistics.fmean(r["step"] for r in rs)} for key, rs in rows.items()}
        for key, v in result["summary"][name].items():
            print("MEAN", name, key, {k: round(x, 4) for k, x in v.items()}, flush=True)
        result["datasets"][name] = rows
        common.write_yaml(args.out, result)


if __name__ == "__main__":
    main()
