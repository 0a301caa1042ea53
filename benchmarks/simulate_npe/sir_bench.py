"""SIR benchmark: cortexkit NPE / MF-NPE vs sbi 0.27 NPE on the same simulated training sets, RF-C2ST
against sbibm's reference posteriors (10 observations).

The paper's SIR training sets are not public offline, so LF (coarse time grid) and HF (sbibm SIR)
sets are simulated here with cortexkit's built-in vectorised simulators, once, with fixed seeds;
every method of a seed sees the same files.

    python benchmarks/simulate_npe/sir_bench.py --n-hf 50 100 1000 --n-lf 10000 --seeds 12 --out S.jsonl
    python benchmarks/simulate_npe/ou_bench.py summarize S.jsonl --task sir --yaml sir.yaml
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ou_bench import emit  # noqa: E402

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe import metrics as Q  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402

REF = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "npe" / "sbibm_reference" / "sir.safetensors"


def sbi_prior():
    return torch.distributions.Independent(
        torch.distributions.LogNormal(torch.tensor([math.log(0.4), math.log(0.125)]), torch.tensor([0.5, 0.2])), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-hf", type=int, nargs="+", default=[50, 100, 1000])
    ap.add_argument("--n-lf", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[12])
    ap.add_argument("--samples", type=int, default=1000, help="posterior and reference samples per C2ST (paper: 10000)")
    ap.add_argument("--sbi-estimator", default="zuko_nsf")
    ap.add_argument("--out", default="sir_bench.jsonl")
    args = ap.parse_args()
    torch.set_num_threads(1)
    task = get_task("sir")
    ref = load_file(str(REF))
    g = torch.Generator().manual_seed(2026)
    th_lf = task.prior.sample(args.n_lf, g)
    x_lf = task.simulator("lf")(th_lf, g)
    th_hf_all = task.prior.sample(max(args.n_hf), g)
    x_hf_all = task.simulator("hf")(th_hf_all, g)

    def c2st(sample_fn):
        vals = []
        for i in range(ref["x_o"].shape[0]):
            torch.manual_seed(1000 + i)
            s = sample_fn(ref["x_o"][i], args.samples)
            vals.append(Q.c2st(s, ref["reference_posterior_samples"][i][: args.samples], "rf"))
        return vals

    for seed in args.seeds:
        t0 = time.process_time()
        pre, h = M.fit_npe(task.prior, th_lf, x_lf, train_cfg=M.TrainConfig(lr=M.LR_PRETRAIN), seed=seed)
        emit(args.out, {"phase": "pretrain", "task": "sir", "n_lf": args.n_lf, "seed": seed, "epochs": h.epochs,
                        "cpu_s": time.process_time() - t0})
        tag = len(str(args.n_lf)) - 1
        for n_hf in args.n_hf:
            th, x = th_hf_all[:n_hf], x_hf_all[:n_hf]
            t0 = time.process_time()
            npe, h = M.fit_npe(task.prior, th, x, seed=seed)
            t_npe, e_npe = time.process_time() - t0, h.epochs
            t0 = time.process_time()
            mf, h = M.fine_tune(pre, th, x, seed=seed, refit_x_stats=True)
            t_mf, e_mf = time.process_time() - t0, h.epochs
            for method, model, t, ep in (("npe", npe, t_npe, e_npe), (f"mf-npe{tag}", mf, t_mf, e_mf)):
                emit(args.out, {"phase": "amortized", "task": "sir", "method": method, "tool": "cortexkit", "n_hf": n_hf,
                                "seed": seed, "train_cpu_s": t, "epochs": ep,
                                "rf_c2st": c2st(lambda xo, n, m=model: m.sample(n, xo))})
            from sbi.inference import NPE

            torch.manual_seed(seed)
            inf = NPE(prior=sbi_prior(), density_estimator=args.sbi_estimator, show_progress_bars=False)
            t0 = time.process_time()
            de = inf.append_simulations(th, x).train(training_batch_size=200, learning_rate=5e-4, validation_fraction=0.1,
                                                     stop_after_epochs=20, clip_max_norm=5.0, show_train_summary=False)
            t = time.process_time() - t0
            post = inf.build_posterior(de)
            emit(args.out, {"phase": "amortized", "task": "sir", "method": "npe", "tool": f"sbi-{args.sbi_estimator}",
                            "n_hf": n_hf, "seed": seed, "train_cpu_s": t, "epochs": inf.summary["epochs_trained"][-1],
                            "rf_c2st": c2st(lambda xo, n: post.sample((n,), x=xo, show_progress_bars=False))})


if __name__ == "__main__":
    main()
