"""Standard SBI tasks: cortexkit NPE vs sbi 0.27 NPE on the same simulated training sets, and both
against the NPE row sbibm published (Lueckmann et al. 2021, `main_paper.csv`), with sbibm's own
metric: MLP-C2ST on 10,000 posterior vs 10,000 reference samples for each of its 10 observations.

The training sets come from cortexkit's built-in simulators (two_moons, gaussian_linear, slcp), one
set per task with a fixed seed, and every budget is a prefix of it; the observations and reference
posteriors are sbibm's. So the check is twofold: our simulators are sbibm's (else C2ST against its
references would sit near 1), and our NPE trains as well as sbi's on them.

    python benchmarks/simulate_npe/sbibm_bench.py run --tasks two_moons slcp --n-sim 1000 10000 --seeds 12 --out B.jsonl
    python benchmarks/simulate_npe/sbibm_bench.py summarize B.jsonl --yaml B.yaml
"""
from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ou_bench import c2st_by, emit, report, sbi_npe  # noqa: E402

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe import metrics as Q  # noqa: E402
from cortexkit.tools.npe.estimator import FlowConfig  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "npe"
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def sbi_prior(task):
    from sbi.utils import BoxUniform

    if task == "two_moons":
        return BoxUniform(-torch.ones(2), torch.ones(2))
    if task == "slcp":
        return BoxUniform(-3 * torch.ones(5), 3 * torch.ones(5))
    if task == "gaussian_linear":
        return torch.distributions.MultivariateNormal(torch.zeros(10), 0.1 * torch.eye(10))
    raise ValueError(task)


@functools.cache
def _published_rows():
    return list(csv.DictReader(open(DATA / "sbibm_results" / "main_paper.csv")))


def sbibm_published(task, n_sim, algorithm="NPE"):
    """sbibm's published per-observation MLP-C2ST for (task, budget), in observation order."""
    rows = [r for r in _published_rows()  # budgets read "10³"
            if r["task"] == task and r["algorithm"] == algorithm
            and 10 ** int(r["num_simulations"][2:].translate(SUPERSCRIPT)) == n_sim]
    return [float(r["C2ST"]) for r in sorted(rows, key=lambda r: int(r["num_observation"]))]


def run(args):
    torch.set_num_threads(1)
    ours = "cortexkit" if args.bins == FlowConfig().bins else f"cortexkit-bins{args.bins}"
    pool = args.pool or max(args.n_sim)
    if max(args.n_sim) > pool:
        raise SystemExit(f"--n-sim {max(args.n_sim)} is larger than --pool {pool}")
    for name in args.tasks:
        task = get_task(name)
        ref = load_file(str(DATA / "sbibm_reference" / f"{name}.safetensors"))
        g = torch.Generator().manual_seed(2026)
        theta_all = task.prior.sample(pool, g)
        x_all = task.simulator("hf")(theta_all, g)
        def metrics(sample_fn):
            vals = c2st_by(sample_fn, ref, range(ref["x_o"].shape[0]), args.samples, args.classifiers)
            return {f"c2st_{c}": v for c, v in vals.items()}

        for seed in args.seeds:
            for n in args.n_sim:
                th, x = theta_all[:n], x_all[:n]
                t0 = time.process_time()
                post, h = M.fit_npe(task.prior, th, x, FlowConfig(bins=args.bins), seed=seed)
                t = time.process_time() - t0
                emit(args.out, {"task": name, "method": "npe", "tool": ours, "n_sim": n, "seed": seed,
                                "train_cpu_s": t, "epochs": h.epochs, "samples": args.samples,
                                **metrics(lambda xo, k, m=post: m.sample(k, xo))})
                for est in args.sbi_estimators:
                    sample_fn, t, epochs = sbi_npe(th, x, seed, est, sbi_prior(name))
                    emit(args.out, {"task": name, "method": "npe", "tool": f"sbi-{est}", "n_sim": n, "seed": seed,
                                    "train_cpu_s": t, "epochs": epochs, "samples": args.samples, **metrics(sample_fn)})


def summarize(args):
    rows = [json.loads(line) for p in args.files for line in open(p) if line.strip()]
    groups = {}
    for r in rows:
        g = groups.setdefault((r["task"], r["n_sim"], r["tool"]), {"cpu": [], "epochs": [], "seeds": set(), "c2st": {}})
        g["cpu"].append(r["train_cpu_s"])
        g["epochs"].append(r["epochs"])
        g["seeds"].add(r["seed"])
        for k, v in r.items():
            if k.startswith("c2st_"):
                g["c2st"].setdefault(k[5:], []).extend(v)
    table = []
    for (task, n, tool), g in sorted(groups.items()):
        row = {"task": task, "n_sim": n, "tool": tool, "seeds": sorted(g["seeds"]),
               "mean_train_cpu_s": round(sum(g["cpu"]) / len(g["cpu"]), 2),
               "cpu_s_per_epoch": round(sum(g["cpu"]) / sum(g["epochs"]), 4)}
        for c, v in sorted(g["c2st"].items()):
            s = Q.mean_ci95(v)
            row[f"c2st_{c}"] = {"mean": round(s["mean"], 4), "ci95": round(s["ci95"], 4), "n": s["n"]}
        pub = sbibm_published(task, n)
        if pub:
            s = Q.mean_ci95(pub)
            row["sbibm_published_npe_c2st_mlp"] = {"mean": round(s["mean"], 4), "ci95": round(s["ci95"], 4), "n": s["n"]}
        table.append(row)
    ratios = []
    for task, n in sorted({(t["task"], t["n_sim"]) for t in table}):
        at = {t["tool"]: t for t in table if (t["task"], t["n_sim"]) == (task, n)}
        ours = at.get("cortexkit")
        for tool, anchor in at.items():
            if tool.startswith("cortexkit") or ours is None:
                continue
            entry = {"task": task, "n_sim": n, "anchor": tool,
                     "train_time_ratio_ours_over_anchor": round(ours["mean_train_cpu_s"] / anchor["mean_train_cpu_s"], 3),
                     "per_epoch_time_ratio": round(ours["cpu_s_per_epoch"] / anchor["cpu_s_per_epoch"], 3)}
            for c in ("mlp", "rf"):
                if f"c2st_{c}" in ours and f"c2st_{c}" in anchor:
                    entry[f"c2st_{c}_ours_minus_anchor"] = round(ours[f"c2st_{c}"]["mean"] - anchor[f"c2st_{c}"]["mean"], 4)
            ratios.append(entry)
    out = {"benchmark": "simulate-npe on sbibm tasks (NPE)",
           "metric": "C2ST (sbibm MLP; RF where listed), 5-fold, seed 1, per sbibm observation",
           "train_time": "CPU seconds of the training call (time.process_time), one torch thread",
           "rows": table, "ratios": ratios}
    report(out, args.yaml)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["run", "summarize"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--tasks", nargs="+", default=["two_moons", "gaussian_linear", "slcp"])
    ap.add_argument("--n-sim", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[12])
    ap.add_argument("--pool", type=int, default=0,
                    help="size of the one simulated set per task, every budget a prefix of it (default: the largest budget)")
    ap.add_argument("--samples", type=int, default=10_000, help="posterior and reference samples per C2ST (sbibm: 10000)")
    ap.add_argument("--classifiers", nargs="+", default=["mlp"], choices=["mlp", "rf"])
    ap.add_argument("--bins", type=int, default=FlowConfig().bins, help="spline bins of our flow (the paper's: 8)")
    ap.add_argument("--sbi-estimators", nargs="*", default=["zuko_nsf"],
                    help="sbi rows (no value: none): zuko_nsf (its default), zuko_nsf_paper, zuko_nsf_bins8")
    ap.add_argument("--out", default="sbibm_bench.jsonl")
    ap.add_argument("--yaml")
    args = ap.parse_args()
    {"run": run, "summarize": summarize}[args.phase](args)


if __name__ == "__main__":
    main()
