"""SIR benchmark: cortexkit NPE / MF-NPE vs sbi 0.27 NPE on the same simulated training sets, RF-C2ST
against sbibm's reference posteriors (10 observations).

The paper's SIR training sets are not public offline, so LF (coarse time grid) and HF (sbibm SIR)
sets are simulated here with cortexkit's built-in vectorised simulators, once, with fixed seeds
(HF and LF from separate generators, so the HF sets do not depend on the LF options); every method
of a seed sees the same files. HF budgets are the first N_HF rows of one set of --hf-pool (10^4)
simulations, so any budget list gives the same nested sets; LF sets of several sizes are likewise
prefixes of one simulated set.

    python benchmarks/simulate_npe/sir_bench.py --n-hf 50 100 1000 --n-lf 10000 100000 --seeds 12 --out S.jsonl
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
from ou_bench import c2st_all, emit, sbi_npe  # noqa: E402

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe import tasks as T  # noqa: E402
from cortexkit.tools.npe.estimator import FlowConfig  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402

REF = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "npe" / "sbibm_reference" / "sir.safetensors"


def sbi_prior():
    return torch.distributions.Independent(
        torch.distributions.LogNormal(torch.tensor([math.log(0.4), math.log(0.125)]), torch.tensor([0.5, 0.2])), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-hf", type=int, nargs="+", default=[50, 100, 1000])
    ap.add_argument("--n-lf", type=int, nargs="+", default=[10_000])
    ap.add_argument("--lf-saveat", type=float, default=None,
                    help="days between the coarse solver's outputs (default: the built-in LF's, 4; the official config's is 32)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[12])
    ap.add_argument("--samples", type=int, default=1000, help="posterior and reference samples per C2ST (paper: 10000)")
    ap.add_argument("--sbi-estimators", nargs="*", default=["zuko_nsf"],
                    help="sbi rows (no value: none); zuko_nsf_paper = sbi's NSF with the authors' theta map (log)")
    ap.add_argument("--hf-pool", type=int, default=10_000,
                    help="size of the one simulated HF set; every budget is its first N_HF rows")
    ap.add_argument("--no-npe", action="store_true", help="skip our NPE rows (MF and sbi rows only)")
    ap.add_argument("--out", default="sir_bench.jsonl")
    args = ap.parse_args()
    torch.set_num_threads(1)
    task = get_task("sir")
    ref = load_file(str(REF))
    g = torch.Generator().manual_seed(2026)
    if max(args.n_hf) > args.hf_pool:
        ap.error(f"--n-hf {max(args.n_hf)} is larger than --hf-pool {args.hf_pool}")
    th_hf_all = task.prior.sample(args.hf_pool, g)
    x_hf_all = task.simulator("hf")(th_hf_all, g)
    g_lf = torch.Generator().manual_seed(2027)
    th_lf_all = task.prior.sample(max(args.n_lf), g_lf)
    saveat = T.SIR_LF_SAVEAT if args.lf_saveat is None else args.lf_saveat
    x_lf_all = T.sir_lf(th_lf_all, g_lf, saveat=saveat)

    def c2st(sample_fn):
        return c2st_all(sample_fn, ref, range(ref["x_o"].shape[0]), args.samples)

    flow_cfg = FlowConfig()
    for seed in args.seeds:
        pre = {}
        for n_lf in args.n_lf:
            t0 = time.process_time()
            pre[n_lf], h = M.fit_npe(task.prior, th_lf_all[:n_lf], x_lf_all[:n_lf], flow_cfg,
                                     train_cfg=M.TrainConfig(lr=M.LR_PRETRAIN), seed=seed)
            emit(args.out, {"phase": "pretrain", "task": "sir", "n_lf": n_lf, "lf_saveat": saveat, "seed": seed,
                            "epochs": h.epochs, "cpu_s": time.process_time() - t0})
        for n_hf in args.n_hf:
            th, x = th_hf_all[:n_hf], x_hf_all[:n_hf]
            runs = []
            if not args.no_npe:
                t0 = time.process_time()
                npe, h = M.fit_npe(task.prior, th, x, flow_cfg, seed=seed)
                runs.append(("npe", npe, time.process_time() - t0, h.epochs))
            for n_lf in args.n_lf:
                t0 = time.process_time()
                mf, h = M.fine_tune(pre[n_lf], th, x, seed=seed, refit_x_stats=True)
                runs.append((f"mf-npe{len(str(n_lf)) - 1}", mf, time.process_time() - t0, h.epochs))
            for method, model, t, ep in runs:
                emit(args.out, {"phase": "amortized", "task": "sir", "method": method, "tool": "cortexkit", "n_hf": n_hf,
                                "seed": seed, "train_cpu_s": t, "epochs": ep, "lf_saveat": saveat,
                                "rf_c2st": c2st(lambda xo, n, m=model: m.sample(n, xo))})
            for est in args.sbi_estimators:
                sample_fn, t, epochs = sbi_npe(th, x, seed, est, sbi_prior())
                emit(args.out, {"phase": "amortized", "task": "sir", "method": "npe", "tool": f"sbi-{est}",
                                "n_hf": n_hf, "seed": seed, "train_cpu_s": t, "epochs": epochs, "rf_c2st": c2st(sample_fn)})


if __name__ == "__main__":
    main()
