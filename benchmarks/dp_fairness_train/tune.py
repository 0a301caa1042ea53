"""Pick RaCO-DP hyper-parameters at epsilon 1 on a VALIDATION split (1/8 of the training split), as
the paper does (its tuning is not privacy-accounted either; disclosed in RESULTS.md).

    python benchmarks/dp_fairness_train/tune.py --dataset adult --out benchmarks/dp_fairness_train/results/tune_adult.yaml
    python benchmarks/dp_fairness_train/tune.py --dataset parkinsons --out benchmarks/dp_fairness_train/results/tune_parkinsons.yaml
    python benchmarks/dp_fairness_train/tune.py --dataset parkinsons --split raco --grid parkinsons-raco --seeds 2 --out benchmarks/dp_fairness_train/results/tune_parkinsons_raco.yaml
    python benchmarks/dp_fairness_train/tune.py --dataset parkinsons --split raco --grid parkinsons-raco-2 --seeds 2 --out benchmarks/dp_fairness_train/results/tune_parkinsons_raco_2.yaml
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
    # RaCO-DP's own split and validation fold (--split raco): a wider grid, picked by validation hypervolume
    "parkinsons-raco": {"batch": [512, 1024], "noise": [(6.0, 0.1), (10.0, 0.2)], "temperature": [8.0],
                        "lr": [0.5, 2.0], "lr_dual": [0.3, 1.0], "gamma": [0.01, 0.03]},
    # second round on RaCO-DP's fold around the first round's pick: clip norm, smaller batches, primal step
    "parkinsons-raco-2": {"clip": [1.0, 3.0], "batch": [256, 512], "noise": [(10.0, 0.2), (8.0, 0.15)],
                          "temperature": [8.0], "lr": [0.5, 2.0], "lr_dual": [1.0], "gamma": [0.01, 0.03]},
    "compas": {"batch": [1024], "noise": [(8.0, 0.1)], "temperature": [8.0], "lr": [0.5, 2.0], "lr_dual": [0.3],
               "gamma": [0.02, 0.05]},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="adult", choices=sorted(common.DATASETS))
    ap.add_argument("--out", default=None)
    ap.add_argument("--grid", default=None, choices=sorted(GRIDS), help="grid name (default: the dataset's)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=1, help="training seeds per setting (metrics averaged)")
    ap.add_argument("--split", default="100", help="75/25 split: an integer pandas seed or one of "
                    f"{', '.join(common.SPLITS)}; with 'raco' the validation set is RaCO-DP's own fold "
                    "(common.paper_folds) instead of a random 1/8")
    args = ap.parse_args()
    torch.set_num_threads(1)
    split = args.split if args.split in common.SPLITS else int(args.split)
    d = common.encode(args.dataset, split)
    out = args.out or str(Path(__file__).parent / "results" / f"tune_{args.dataset}.yaml")
    n = len(d["y_train"])
    if split == "raco":
        val = common.paper_folds(d)
    else:
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
        runs = [common.raco_run(tr, gamma=gamma, epsilon=args.epsilon, sigma=sigma, laplace_b=b, lr=lr, lr_dual=lrd,
                                temperature=tau, batch=batch, clip=clip, x_eval=d["x_train"][vt],
                                y_eval=d["y_train"][vt], g_eval=d["g_train"][val], seed=seed)
                for seed in range(args.seeds)]
        r = {"steps": runs[0]["steps"], **{it: {k: float(np.mean([x[it][k] for x in runs])) for k in runs[0][it]}
                                            for it in ("last", "average")}}
        row = {"clip": clip, "batch": batch, "sigma": sigma, "laplace_b": b, "temperature": tau, "lr": lr,
               "lr_dual": lrd, "gamma": gamma, "steps": r["steps"], "last": r["last"], "average": r["average"]}
        rows.append(row)
        print(row, flush=True)
        # the pick: the setting (all but gamma) whose validation (gap, error) points have the largest hypervolume
        by_setting = {}
        for rw in rows:
            key = tuple((k, v) for k, v in rw.items() if k not in ("gamma", "steps", "last", "average"))
            by_setting.setdefault(key, []).append((rw["average"]["dp_gap"], rw["average"]["error"]))
        scored = sorted(((common.hypervolume(pts), dict(key)) for key, pts in by_setting.items()),
                        key=lambda t: -t[0])
        common.write_yaml(out, {"dataset": args.dataset, "epsilon": args.epsilon, "seeds": args.seeds, "commit": common.git_commit(),
                                "pick_by_validation_hypervolume": {"hypervolume": scored[0][0], **scored[0][1]},
                                "split": f"75/25 split {args.split}; validation = "
                                + ("RaCO-DP's StratifiedKFold fold 0 (1/8)" if split == "raco" else "random 1/8 of the train split"), "grid": grid, "rows": rows})


if __name__ == "__main__":
    main()
