"""Issue 35: the unconstrained default clip. Ours without constraints (DP-SGD, ``--constraint none``) at
``--clip 1`` and ``--clip 3`` (``--lr`` left at its default 2 / clip), same seeds, epsilon 1, through the
installed command on the 75/25 splits of pareto35.py (``synthetic`` is its 30,000-row table); test accuracy
and DP gap of the averaged iterate.

    OMP_NUM_THREADS=1 python benchmarks/dp_fairness_train/clip_default.py --datasets german,synthetic \\
        --seeds 3 --out benchmarks/dp_fairness_train/results/clip_default_heldout.yaml
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402
import pareto35  # noqa: E402
import transfer  # noqa: E402


def dataset(name: str, args, folder: Path) -> dict:
    train, test, tr, te, label, sensitive = pareto35.split(name, folder)
    out = {"rows_train": len(train), "rows_test": len(test)}
    for clip in [float(c) for c in args.clips.split(",")]:
        rows = [transfer.ours(tr, te, label, sensitive, folder, f"{name}_c{clip}", s, args.epsilon,
                              ["--constraint", "none", "--clip", str(clip)]) for s in range(args.seeds)]
        out[f"clip {clip:g}"] = {"runs": rows, **pareto35.summary(rows)}
        print(name, clip, {k: round(v, 4) for k, v in pareto35.summary(rows).items()}, flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "clip_default.yaml"))
    ap.add_argument("--datasets", default="german,synthetic")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--clips", default="1,3")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    common.need_data()
    result = {"benchmark": "issue 35: unconstrained default clip", "commit": common.git_commit(),
              "epsilon": args.epsilon, "delta": 1e-5, "seeds": args.seeds, "load_average": os.getloadavg(),
              "datasets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            result["datasets"][name] = dataset(name, args, Path(tmp))
            common.write_yaml(args.out, result)


if __name__ == "__main__":
    main()
