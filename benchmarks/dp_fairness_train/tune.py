"""Pick RaCO-DP hyper-parameters at epsilon 1 on a VALIDATION split (1/8 of the training split), as
the paper does (its tuning is not privacy-accounted either; disclosed in RESULTS.md).

    python benchmarks/dp_fairness_train/tune.py --dataset adult --out benchmarks/dp_fairness_train/results/tune_adult.yaml
    python benchmarks/dp_fairness_train/tune.py --dataset parkinsons --out benchmarks/dp_fairness_train/results/tune_parkinsons.yaml
"""
import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402


GRIDS = {
    "adult": {"batch": [4096], "noise": [(10.0, 0.03), (8.0, 0.05)], "temperature": [2.0, 8.0], "lr": [0.5, 2.0],
              "lr_dual": [0.3, 1.0], "gamma": [0.02, 0.05, 0.1]},
    # second round on Adult around the first round's pick: clip norm and primal step
    "adult-clip": {"clip": [1.0, 3.0], "batch": [4096], "noise": [(10.0, 0.03)], "temperature": [8.0],
                   "lr": [0.5, 1.0], "lr_dual": [0.3], "gamma": [0.05]},
    "parkinsons": {"batch": [512, 1024], "noise": [(6.0, 0.1), (10.0, 0.2)], "temperature": [8.0], "lr": [0.5, 2.0],
                   "lr_dual": [0.3], "gamma": [0.02, 0.05]},
    "compas": {"batch": [1024], "noise": [(8.0, 0.1)], "temperature": [8.0], "lr": [0.5, 2.0], "lr_dual": [0.3],
               "gamma": [0.02, 0.05]},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="adult", choices=sorted(common.DATASETS))
    ap.add_argument("--out", default=None)
    ap.add_argument("--grid", default=None, choices=sorted(GRIDS), help="grid name (default: the dataset's)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    d = common.encode(args.dataset)
    out = args.out or str(Path(__file__).parent / "results" / f"tune_{args.dataset}.yaml")
    n = len(d["y_train"])
    rng = np.random.default_rng(0)
    val = np.zeros(n, dtype=bool)
    val[rng.permutation(n)[: n // 8]] = True
    tr = {k: (v[~val] if hasattr(v, "__len__") and len(v) == n and not isinstance(v, dict) else v) for k, v in d.items()}
    tr["train_cols"] = {c: [x for x, m in zip(col, val) if not m] for c, col in d["train_cols"].items()}
    vt = torch.as_tensor(val)
    grid = GRIDS[args.grid or args.dataset]
    rows = []
    grid = {"clip": [3.0], **grid} if "clip" not in grid else grid
    for clip, batch, noise, tau, lr, lrd, gamma in itertools.product(*grid.values()):
        sigma, b = noise
        r = common.raco_run(tr, gamma=gamma, epsilon=args.epsilon, sigma=sigma, laplace_b=b, lr=lr, lr_dual=lrd,
                            temperature=tau, batch=batch, clip=clip, x_eval=d["x_train"][vt],
                            y_eval=d["y_train"][vt], g_eval=d["g_train"][val])
        row = {"clip": clip, "batch": batch, "sigma": sigma, "laplace_b": b, "temperature": tau, "lr": lr,
               "lr_dual": lrd, "gamma": gamma, "steps": r["steps"], "last": r["last"], "average": r["average"]}
        rows.append(row)
        print(row, flush=True)
        common.write_yaml(out, {"dataset": args.dataset, "epsilon": args.epsilon, "commit": common.git_commit(),
                                "split": "validation = 1/8 of the 75% train split", "grid": grid, "rows": rows})


if __name__ == "__main__":
    main()
