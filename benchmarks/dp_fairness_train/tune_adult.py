"""Pick RaCO-DP hyper-parameters for Adult at epsilon 1 on a VALIDATION split (1/8 of train), as the
paper does (its tuning is not privacy-accounted either; disclosed in RESULTS.md).

    python benchmarks/dp_fairness_train/tune_adult.py --out benchmarks/dp_fairness_train/results/tune_adult.yaml
"""
import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "tune_adult.yaml"))
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    d = common.encode("adult")
    n = len(d["y_train"])
    rng = np.random.default_rng(0)
    val = np.zeros(n, dtype=bool)
    val[rng.permutation(n)[: n // 8]] = True
    tr = {k: (v[~val] if hasattr(v, "__len__") and len(v) == n and not isinstance(v, dict) else v) for k, v in d.items()}
    tr["train_cols"] = {c: [x for x, m in zip(col, val) if not m] for c, col in d["train_cols"].items()}
    vt = torch.as_tensor(val)
    grid = {
        "noise": [(10.0, 0.03), (8.0, 0.05)],
        "temperature": [2.0, 8.0],
        "lr": [0.5, 2.0],
        "lr_dual": [0.3, 1.0],
        "gamma": [0.02, 0.05, 0.1],
    }
    rows = []
    for noise, tau, lr, lrd, gamma in itertools.product(*grid.values()):
        sigma, b = noise
        r = common.raco_run(tr, gamma=gamma, epsilon=args.epsilon, sigma=sigma, laplace_b=b, lr=lr, lr_dual=lrd,
                            temperature=tau, x_eval=d["x_train"][vt], y_eval=d["y_train"][vt],
                            g_eval=d["g_train"][val])
        row = {"sigma": sigma, "laplace_b": b, "temperature": tau, "lr": lr, "lr_dual": lrd, "gamma": gamma,
               "steps": r["steps"], "last": r["last"], "average": r["average"]}
        rows.append(row)
        print(row, flush=True)
        common.write_yaml(args.out, {"epsilon": args.epsilon, "split": "validation = 1/8 of the 75% train split",
                                     "rows": rows})


if __name__ == "__main__":
    main()
