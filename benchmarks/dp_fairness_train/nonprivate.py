"""Issue 35 item 2: ``--non-private --constraint none`` against scikit-learn LogisticRegression (defaults),
same features (cortexkit's encoding of the training part), same 75/25 split, side by side in one run;
also the old non-private mode (q 0.1 Poisson batches, lr 2, 1000 steps) for the record.

    OMP_NUM_THREADS=1 python benchmarks/dp_fairness_train/nonprivate.py \
        --out benchmarks/dp_fairness_train/results/nonprivate.yaml
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402
import pareto35  # noqa: E402
import transfer  # noqa: E402

from cortexkit.tools import dpfair  # noqa: E402
from cortexkit.tools.dpfair import models, raco  # noqa: E402


def run(name: str, folder: Path) -> dict:
    from sklearn.linear_model import LogisticRegression

    train, test, _, _, label, sensitive = pareto35.split(name, folder)
    tr = {c: train[c].astype(str).tolist() for c in train.columns}
    te = {c: test[c].astype(str).tolist() for c in test.columns}
    x, y, _, xe, ye, _, classes = transfer.encode(train, test, label, sensitive)
    t0 = time.perf_counter()
    sk = LogisticRegression(max_iter=5000).fit(x.numpy(), y.numpy())
    sk_acc = float((sk.predict(xe.numpy()) == ye.numpy()).mean())
    t_sk = time.perf_counter() - t0
    cfg = dpfair.TrainConfig(label=label, sensitive=[sensitive], constraint="none", non_private=True, validation=0)
    t0 = time.perf_counter()
    plan = dpfair.plan(tr, cfg)
    fitted = dpfair.train(tr, cfg, plan)
    t_ours = time.perf_counter() - t0
    out = {"sklearn": sk_acc, "rows_train": len(y), "features": int(x.shape[1]), "lr": plan.lr, "stop": fitted.stop}
    for it in ("last", "average"):
        pred = dpfair.predict(dpfair.Model.from_fitted(fitted, it), te)[0].numpy()
        out[f"ours_{it}"] = float((pred == ye.numpy()).mean())
    # the previous non-private mode: Poisson q 0.1, lr 2, 1000 steps, averaged iterate
    net = models.init_zero_(models.build_model("logistic", x.shape[1], len(classes)))
    old = raco.train(net, x, y, None, None, raco.RacoConfig(steps=1000, sampling_rate=0.1, sigma=0.0,
                                                             clip_norm=math.inf, lr=2.0), torch.Generator().manual_seed(0))
    for it, params in (("last", old.params_last), ("average", old.params_avg)):
        with torch.no_grad():
            pred = torch.func.functional_call(net, params, (xe,)).argmax(1).numpy()
        out[f"old_{it}"] = float((pred == ye.numpy()).mean())
    out["ours_minus_sklearn_points"] = 100 * (out["ours_average"] - sk_acc)
    out["met"] = abs(out["ours_average"] - sk_acc) <= 0.005
    out["seconds_ours_over_sklearn"] = t_ours / max(t_sk, 1e-9)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "nonprivate.yaml"))
    ap.add_argument("--datasets", default="german,compas,parkinsons,synthetic,adult")
    args = ap.parse_args()
    torch.set_num_threads(1)
    common.need_data()
    result = {"benchmark": "issue 35 item 2: --non-private vs scikit-learn", "commit": common.git_commit(),
              "datasets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            result["datasets"][name] = run(name, Path(tmp))
            print(name, {k: v for k, v in result["datasets"][name].items()}, flush=True)
            common.write_yaml(args.out, result)


if __name__ == "__main__":
    main()
