"""Issue 35 item 4: does clipping the loss part and the rate part of each example's gradient separately
(``--clip-split separate``, C/2 each) keep the accuracy that clipping the sum (``joint``, C) loses?

Per data set (the 75/25 splits of pareto35.py: ``synthetic`` is pareto35's 30,000-row table), the
installed ``cortexkit dp-fairness-train train`` with defaults at epsilon 1, demographic parity at each
gamma, once per --clip-split value and seed, then ``evaluate`` on the test part (averaged iterate). The
unconstrained private run (``--constraint none``; no rate part, so the split does not apply) and,
unless --no-opacus, Opacus DP-SGD at the q and T of our unconstrained plan (lr chosen on a validation
fifth from --lrs, as pareto35.py) run beside them, same seeds.

    OMP_NUM_THREADS=1 nice python benchmarks/dp_fairness_train/clip_split.py --datasets synthetic \\
        --seeds 2 --out benchmarks/dp_fairness_train/results/clip_split_synthetic.yaml
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402
import pareto35  # noqa: E402
import transfer  # noqa: E402


def dataset(name: str, args, folder: Path) -> dict:
    train, test, tr, te, label, sensitive = pareto35.split(name, folder)
    t0 = time.perf_counter()
    out = {"rows_train": len(train), "rows_test": len(test)}

    def run(tag, seed, extra):
        r = transfer.ours(tr, te, label, sensitive, folder, f"{name}_{tag}", seed, args.epsilon, extra)
        return {k: r[k] for k in ("accuracy", "dp_gap", "epsilon", "steps", "q", "seconds")}

    unc = [run("none", s, ["--constraint", "none"]) for s in range(args.seeds)]
    out["unconstrained"] = {"runs": unc, **pareto35.summary(unc)}
    out["constrained"] = {}
    for g in [float(x) for x in args.gammas.split(",")]:
        for split in args.splits.split(","):
            rows = [run(f"{g}_{split}", s, ["--gamma", str(g), "--clip-split", split]) for s in range(args.seeds)]
            out["constrained"][f"{g} {split}"] = {"gamma": g, "clip_split": split, "runs": rows,
                                                  **pareto35.summary(rows)}
            print(name, g, split, {k: round(v, 4) for k, v in pareto35.summary(rows).items()}, flush=True)
    if not args.no_opacus:
        x, y, g_tr, xe, ye, ge, classes = transfer.encode(train, test, label, sensitive)
        k = len(classes)
        q, steps = unc[0]["q"], unc[0]["steps"]
        lrs = [float(v) for v in args.lrs.split(",")]
        sigma, best, grid, opa = transfer.opacus_tuned(x, y, g_tr, xe, ye, ge, k, q, steps, args.epsilon, lrs,
                                                       args.seeds)
        out["opacus"] = {"sigma_prv": sigma, "lr_chosen": best, "q": q, "steps": steps, "runs": opa,
                         **pareto35.summary(opa)}
        print(name, "opacus", {k_: round(v, 4) for k_, v in pareto35.summary(opa).items()}, flush=True)
    out["seconds"] = time.perf_counter() - t0
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "clip_split.yaml"))
    ap.add_argument("--datasets", default="synthetic")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--gammas", default="0.02,0.05")
    ap.add_argument("--splits", default="joint,separate")
    ap.add_argument("--lrs", default="1,4,16", help="Opacus learning-rate grid")
    ap.add_argument("--no-opacus", action="store_true")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    common.need_data()
    result = {"benchmark": "issue 35 item 4: --clip-split joint vs separate", "commit": common.git_commit(),
              "epsilon": args.epsilon, "delta": 1e-5, "gammas": args.gammas, "seeds": args.seeds,
              "load_average": os.getloadavg(), "datasets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            result["datasets"][name] = dataset(name, args, Path(tmp))
            common.write_yaml(args.out, result)


if __name__ == "__main__":
    main()
