"""Issue 36, stop 44: the stopping rule at 10^4 simulations, replayed on one default fit.

A fit's trajectory does not depend on its patience: only the epoch it stops at and the best epoch
within the epochs it ran do. So a fit with a shorter patience P is, bit for bit, the first epochs
of the default fit (patience 60), and its result is the best-validation weights of that prefix.
This script trains the tool's default NPE once per (task, seed) on the stop-43 training set
(generator seed 2026, the first --n-sim rows, theta_map_bench.py's data), records the CPU
(time.process_time) at the end of every epoch and the weights at every new best, and for each
candidate patience P in --patiences reads off: the epochs it would run, its train CPU (the
cumulative CPU at its stop epoch, measured in this run) and the RF C2ST of its best weights (the
same observations and sampling seeds as theta_map_bench.py). sbi 0.27 NPE (zuko_nsf) runs in the
same process with the stop-43 settings (patience 60); its validation curve is recorded too, so
the epochs it would run at its own default patience 20 can be read off (its CPU there is an
estimate: its CPU per epoch times those epochs).

    OMP_NUM_THREADS=1 python benchmarks/simulate_npe/stop_rule_bench.py --tasks two_moons --seeds 12 \
        --n-sim 10000 --observations 5 --patiences 20 30 40 --out benchmarks/simulate_npe/results/stop44_two_moons_s12.jsonl
    python benchmarks/simulate_npe/stop_rule_bench.py --summarize benchmarks/simulate_npe/results/stop44_*.jsonl \
        --sbi-from benchmarks/simulate_npe/results/grid1e4_*.jsonl     # where sbi was not rerun (--no-sbi)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ou_bench import emit  # noqa: E402
from theta_map_bench import c2st, reference, sbi_prior, sbi_train  # noqa: E402

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe.estimator import FlowConfig  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402
from cortexkit.tools.npe.training import TrainConfig  # noqa: E402


def replay(val, patience):
    """(epochs run, best epoch) of a fit with ``patience`` on the validation curve ``val`` (0-based
    best epoch; the same rule as training.train: an epoch improves when its loss is below the best)."""
    best, best_ep, since = math.inf, -1, 0
    for e, v in enumerate(val):
        if e == 0 or v < best:
            best, best_ep, since = v, e, 0
        else:
            since += 1
        if since >= patience:
            return e + 1, best_ep
    return len(val), best_ep


def run(args):
    torch.set_num_threads(1)
    # epochs only: the candidates are read off this fit (patience_steps would cut it short)
    cfg = TrainConfig(patience=args.default_patience, patience_steps=0)
    for name in args.tasks:
        task = get_task(name)
        ref = reference(name)
        g = torch.Generator().manual_seed(2026)
        theta_all = task.prior.sample(args.n_sim, g)
        x_all = task.simulator("hf")(theta_all, g)
        th, x = theta_all[:args.n_sim], x_all[:args.n_sim]
        for seed in args.seeds:
            cpu, snaps = [], {}
            holder = {}

            def on_epoch(rec, holder=holder, cpu=cpu, snaps=snaps):
                cpu.append(time.process_time() - holder["t0"])
                if rec.best_epoch == rec.epoch:
                    snaps[rec.epoch] = {k: v.detach().clone() for k, v in holder["model"].state_dict().items()}

            # fit_npe builds the model inside; wrap the constructor's product through a hook on train
            import cortexkit.tools.npe.methods as methods_mod
            real_train = methods_mod.train

            def train_hook(model, *a, **k):
                holder["model"] = model
                return real_train(model, *a, **k)

            methods_mod.train = train_hook
            try:
                holder["t0"] = time.process_time()
                model, h = M.fit_npe(task.prior, th, x, FlowConfig(), cfg, seed, on_epoch=on_epoch)
                total = time.process_time() - holder["t0"]
            finally:
                methods_mod.train = real_train
            row = {"task": name, "seed": seed, "n_sim": args.n_sim, "tool": "cortexkit", "patience": cfg.patience,
                   "epochs": h.epochs, "best_epoch": h.best_epoch, "train_cpu_s": total,
                   "val_loss": h.val_loss, "cpu_at_epoch": cpu, "candidates": {}}
            scores = {}
            for p in sorted(set(args.patiences) | {cfg.patience}):
                ep, best = replay(h.val_loss, p)
                if best not in scores:
                    model.load_state_dict(snaps[best])
                    scores[best] = c2st(lambda xo, k: model.sample(k, xo), ref, args.samples, ["rf"],
                                        args.observations)["c2st_rf"]
                row["candidates"][str(p)] = {"epochs": ep, "best_epoch": best, "train_cpu_s": cpu[ep - 1] if p != cfg.patience else total,
                                             "c2st_rf": scores[best]}
            assert row["candidates"][str(cfg.patience)]["epochs"] == h.epochs
            emit(args.out, row)
            if args.no_sbi:
                continue
            from sbi.inference import NPE

            from ou_bench import sbi_estimator
            torch.manual_seed(seed)
            inf = NPE(prior=sbi_prior(name), density_estimator=sbi_estimator("zuko_nsf", sbi_prior(name)),
                      show_progress_bars=False)
            de, t, ep = sbi_train(inf, th, x, cfg)
            val = [float(v) for v in inf.summary["validation_loss"]]
            post = inf.build_posterior(de)
            sc = c2st(lambda xo, k: post.sample((k,), x=xo, show_progress_bars=False), ref, args.samples, ["rf"],
                      args.observations)["c2st_rf"]
            ep20, _ = replay(val, 20)
            emit(args.out, {"task": name, "seed": seed, "n_sim": args.n_sim, "tool": "sbi-zuko_nsf", "patience": cfg.patience,
                            "epochs": ep, "train_cpu_s": t, "c2st_rf": sc, "val_loss": val,
                            "patience20_epochs": ep20, "patience20_cpu_s_est": t * ep20 / ep})


def summarize(paths, sbi_from=()):
    """Per task: the candidates' epochs, train CPU and paired RF C2ST difference to the default.
    Against sbi: its rows here, or (``sbi_from``: stop 43's theta_map_bench.py rows of the same
    seeds) the candidate/default CPU ratio of this run times stop 43's default/sbi ratio."""
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    old = [json.loads(line) for p in sbi_from for line in open(p) if line.strip()]
    out = {}
    for task in sorted({r["task"] for r in rows}):
        ours = {r["seed"]: r for r in rows if r["task"] == task and r["tool"] == "cortexkit"}
        sbi = {r["seed"]: r for r in rows if r["task"] == task and r["tool"] == "sbi-zuko_nsf"}
        seeds = sorted(ours)
        t = {"seeds": seeds, "default_patience": ours[seeds[0]]["patience"]}
        sbi_cpu = [sbi[s]["train_cpu_s"] for s in seeds if s in sbi]
        if sbi_cpu:
            t["sbi"] = {"train_cpu_s_mean": round(sum(sbi_cpu) / len(sbi_cpu), 1),
                        "epochs": [sbi[s]["epochs"] for s in seeds if s in sbi],
                        "c2st_rf_mean": round(sum(sum(sbi[s]["c2st_rf"]) for s in seeds if s in sbi)
                                              / sum(len(sbi[s]["c2st_rf"]) for s in seeds if s in sbi), 4),
                        "patience20_epochs": [sbi[s]["patience20_epochs"] for s in seeds if s in sbi],
                        "patience20_cpu_s_est_mean": round(sum(sbi[s]["patience20_cpu_s_est"] for s in seeds if s in sbi)
                                                           / len(sbi_cpu), 1)}
        default = str(t["default_patience"])
        o43 = {r["seed"]: r for r in old if r["task"] == task and r.get("tool") == "cortexkit-zscore" and r["seed"] in seeds}
        s43 = {r["seed"]: r for r in old if r["task"] == task and r.get("tool") == "sbi-zuko_nsf" and r["seed"] in seeds}
        ratio43 = None
        if not sbi_cpu and len(o43) == len(s43) == len(seeds):
            ratio43 = sum(o43[s]["train_cpu_s"] for s in seeds) / sum(s43[s]["train_cpu_s"] for s in seeds)
            t["stop43"] = {"ours_over_sbi_cpu": round(ratio43, 3), "ours_epochs": [o43[s]["epochs"] for s in seeds],
                           "sbi_epochs": [s43[s]["epochs"] for s in seeds],
                           "same_trajectory": all(o43[s]["epochs"] == ours[s]["epochs"] for s in seeds),
                           "ours_c2st_rf": [o43[s]["c2st_rf"][:len(ours[s]["candidates"][default]["c2st_rf"])] for s in seeds],
                           "sbi_c2st_rf_mean": round(sum(sum(s43[s]["c2st_rf"][:len(ours[s]["candidates"][default]["c2st_rf"])])
                                                         for s in seeds) / sum(len(ours[s]["candidates"][default]["c2st_rf"]) for s in seeds), 4)}
        default_cpu = sum(ours[s]["candidates"][default]["train_cpu_s"] for s in seeds) / len(seeds)
        cands = {}
        for p in ours[seeds[0]]["candidates"]:
            cpu = [ours[s]["candidates"][p]["train_cpu_s"] for s in seeds]
            diffs = [a - b for s in seeds for a, b in zip(ours[s]["candidates"][p]["c2st_rf"],
                                                          ours[s]["candidates"][default]["c2st_rf"])]
            n = len(diffs)
            mean = sum(diffs) / n
            sd = (sum((d - mean) ** 2 for d in diffs) / (n - 1)) ** 0.5 if n > 1 else 0.0
            c = {"epochs": [ours[s]["candidates"][p]["epochs"] for s in seeds],
                 "best_epoch": [ours[s]["candidates"][p]["best_epoch"] for s in seeds],
                 "train_cpu_s_mean": round(sum(cpu) / len(cpu), 1),
                 "c2st_rf_mean": round(sum(sum(ours[s]["candidates"][p]["c2st_rf"]) for s in seeds)
                                       / sum(len(ours[s]["candidates"][p]["c2st_rf"]) for s in seeds), 4),
                 "diff_vs_default": round(mean, 4), "hw": round(1.96 * sd / n ** 0.5, 4), "cells": n}
            if sbi_cpu and len(sbi_cpu) == len(seeds):
                c["cpu_ratio_vs_sbi"] = round(c["train_cpu_s_mean"] / t["sbi"]["train_cpu_s_mean"], 3)
                c["c2st_vs_sbi"] = round(c["c2st_rf_mean"] - t["sbi"]["c2st_rf_mean"], 4)
            elif ratio43 is not None:
                c["cpu_vs_default"] = round(c["train_cpu_s_mean"] / default_cpu, 3)
                c["cpu_ratio_vs_sbi_composed"] = round(c["train_cpu_s_mean"] / default_cpu * ratio43, 3)
                c["c2st_vs_sbi_stop43"] = round(c["c2st_rf_mean"] - t["stop43"]["sbi_c2st_rf_mean"], 4)
            cands[p] = c
        t["candidates"] = cands
        out[task] = t
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", nargs="+", default=["two_moons"])
    p.add_argument("--seeds", nargs="+", type=int, default=[12])
    p.add_argument("--n-sim", type=int, default=10000)
    p.add_argument("--observations", type=int, default=5)
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--default-patience", type=int, default=60)
    p.add_argument("--patiences", nargs="+", type=int, default=[20, 30, 40])
    p.add_argument("--no-sbi", action="store_true")
    p.add_argument("--out", default="stop44.jsonl")
    p.add_argument("--summarize", nargs="+")
    p.add_argument("--yaml")
    p.add_argument("--sbi-from", nargs="*", default=[], help="stop 43's rows (theta_map_bench.py jsonl) for sbi's CPU")
    args = p.parse_args()
    if args.summarize:
        import yaml

        text = yaml.safe_dump(summarize(args.summarize, args.sbi_from), sort_keys=False)
        if args.yaml:
            Path(args.yaml).write_text(text)
        print(text)
        return
    run(args)


if __name__ == "__main__":
    main()
