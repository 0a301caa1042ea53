"""Issue 36: the theta map and training defaults, side by side with sbi 0.27 on the same training sets.

For each task, budget and seed, on one simulated training set (generator seed 2026, every budget a
prefix of it), in one run:
  - cortexkit NPE with --theta-map zscore (box priors: affine z-score, rejection to the support,
    leakage renormalised) and with --theta-map logit (the paper's map),
  - sbi 0.27 NPE (its default zuko_nsf: z-scored theta, 10 bins) with the same hyperparameters,
  - with --mf (tasks with an LF simulator): MF-NPE (pretrain on n_lf LF simulations at lr 1e-4,
    fine-tune on the HF set) for both maps, and sbi's fine-tuning (NPE trained on LF, then
    .append_simulations(HF).train() continued on the same network, sbi's own recipe).
C2ST (RF and MLP) of 1,000 posterior draws against 1,000 reference draws per observation: sbibm's
10 observations (two_moons, gaussian_linear, slcp, sir) or the paper's 10 for OU.

    python benchmarks/simulate_npe/theta_map_bench.py --tasks two_moons slcp --n-sim 1000 --seeds 12 --out R.jsonl
    python benchmarks/simulate_npe/theta_map_bench.py --summarize R.jsonl --yaml R.yaml
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ou_bench import emit, report  # noqa: E402

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe import metrics as Q  # noqa: E402
from cortexkit.tools.npe.estimator import FlowConfig  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402
from cortexkit.tools.npe.training import TrainConfig  # noqa: E402

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "npe"


def reference(task):
    if task == "ou":  # the paper's 10 OU observations
        from ou_bench import load

        d = load("true_obs_10")
        return {"x_o": d["x_o"].float(), "reference_posterior_samples": d["reference_posterior_samples"].float()}
    return load_file(str(DATA / "sbibm_reference" / f"{task}.safetensors"))


def sbi_prior(task):
    from sbi.utils import BoxUniform

    prior = get_task(task).prior
    if all(f.kind == "uniform" for f in prior.factors):
        return BoxUniform(torch.tensor([f.a for f in prior.factors]), torch.tensor([f.b for f in prior.factors]))
    if task == "gaussian_linear":
        return torch.distributions.MultivariateNormal(torch.zeros(10), 0.1 * torch.eye(10))
    if task == "sir":
        from sbi.utils import MultipleIndependent
        return MultipleIndependent([torch.distributions.LogNormal(torch.tensor([f.a]), torch.tensor([f.b]))
                                    for f in prior.factors])
    raise ValueError(task)


def c2st(sample_fn, ref, n, classifiers, observations=None, mlp_observations=None):
    """C2ST per observation: classifier -> list over the first ``observations`` (all by default);
    the MLP only on the first ``mlp_observations`` of them (it costs ~20 s per observation in 10-d)."""
    n_obs = min(ref["x_o"].shape[0], observations or ref["x_o"].shape[0])
    vals = {c: [] for c in classifiers}
    for i in range(n_obs):
        torch.manual_seed(1000 + i)
        s = sample_fn(ref["x_o"][i], n)
        for c in classifiers:
            if c == "mlp" and mlp_observations is not None and i >= mlp_observations:
                continue
            vals[c].append(Q.c2st(s, ref["reference_posterior_samples"][i][:n].float(), c))
    return {f"c2st_{c}": v for c, v in vals.items()}


def sbi_train(inf, theta, x, cfg: TrainConfig, resume=False):
    t0 = time.process_time()
    de = inf.append_simulations(theta, x).train(
        training_batch_size=cfg.batch_size, learning_rate=cfg.lr, validation_fraction=cfg.validation_fraction,
        stop_after_epochs=cfg.patience, clip_max_norm=cfg.clip, show_train_summary=False,
        **({"retrain_from_scratch": False, "force_first_round_loss": True} if resume else {}))
    return de, time.process_time() - t0, inf.summary["epochs_trained"][-1]


def our_variants(maps, bins=None, ablations=(), lognormal_maps=None):
    """(tool name, FlowConfig, NPE fit function) of our fits: one per theta map, or per (map, bins)
    with ``--bins`` (tool "cortexkit-MAP-bB"; without ``--bins`` the flow's default bins and the name
    "cortexkit-MAP"); then one per ``--ablations`` name (tool "cortexkit-abl-NAME", the first map and
    the default bins; miss_study42.py, NPE rows only). ``--lognormal-maps``: each of ours once per
    log-normal map (tool "...-ln-MAP"; without it the flow's default map)."""
    if not bins:
        out = [(f"cortexkit-{m}", FlowConfig(theta_map=m), M.fit_npe) for m in maps]
    else:
        out = [(f"cortexkit-{m}-b{b}", FlowConfig(theta_map=m, bins=b), M.fit_npe) for m in maps for b in bins]
    if lognormal_maps:  # one fit per log-normal map too, tool "...-ln-MAP"
        out = [(f"{t}-ln-{lm}", dataclasses.replace(f, lognormal_map=lm), fit) for t, f, fit in out for lm in lognormal_maps]
    if ablations:
        from miss_study42 import fit_ablation

        for a in ablations:
            fit = (lambda prior, th, x, fcfg, cfg, seed, a=a: fit_ablation(a, prior, th, x, fcfg, cfg, seed))
            out.append((f"cortexkit-abl-{a}", FlowConfig(theta_map=maps[0]), fit))
    return out


def run(args):
    torch.set_num_threads(1)
    base = TrainConfig(lr=args.lr, batch_size=args.batch_size, validation_fraction=args.validation_fraction,
                       patience=args.patience,
                       **({} if args.patience_steps is None else {"patience_steps": args.patience_steps}))
    pre_cfg = M.pretrain_config(base, 1e-4, args.patience_pretrain or args.patience)
    variants = our_variants(args.maps, args.bins, args.ablations or (), args.lognormal_maps)
    for name in args.tasks:
        task = get_task(name)
        ref = reference(name)
        g = torch.Generator().manual_seed(2026)
        n_mf = (args.n_sim_mf or args.n_sim) if args.mf else []
        pool = max(args.n_sim + n_mf)
        theta_all = task.prior.sample(pool, g)
        x_all = task.simulator("hf")(theta_all, g)
        lf = None
        if args.mf:
            theta_lf = task.prior.sample(args.n_lf, g)
            lf = (theta_lf, task.simulator("lf")(theta_lf, g))
        for seed in args.seeds:
            pre = {}
            if lf is not None:
                for tool, fcfg, fit in variants:
                    if fit is not M.fit_npe:
                        continue
                    t0 = time.process_time()
                    pre[tool], h = M.fit_npe(task.prior, *lf, fcfg.resolve("mf-npe"), pre_cfg, seed)  # as the tool
                    emit(args.out, {"task": name, "phase": "pretrain", "tool": tool, "seed": seed,
                                    "n_lf": args.n_lf, "cpu_s": time.process_time() - t0, "epochs": h.epochs})
                from sbi.inference import NPE

                from ou_bench import sbi_estimator
                torch.manual_seed(seed)
                sbi_lf = NPE(prior=sbi_prior(name), density_estimator=sbi_estimator("zuko_nsf", sbi_prior(name)),
                             show_progress_bars=False)
                _, t, ep = sbi_train(sbi_lf, *lf, pre_cfg)
                emit(args.out, {"task": name, "phase": "pretrain", "tool": "sbi-zuko_nsf", "seed": seed,
                                "n_lf": args.n_lf, "cpu_s": t, "epochs": ep})
            for n in sorted(set(args.n_sim + n_mf)):
                th, x = theta_all[:n], x_all[:n]
                do_npe, do_mf = n in args.n_sim, n in n_mf
                rows = []
                for tool, fcfg, fit in variants:
                    if do_npe:
                        t0 = time.process_time()
                        post, h = fit(task.prior, th, x, fcfg, base, seed)
                        rows.append(("npe", tool, lambda xo, k, m=post: m.sample(k, xo), time.process_time() - t0, h.epochs))
                    if tool in pre and do_mf:
                        t0 = time.process_time()
                        ft, h = M.fine_tune(pre[tool], th, x, base, seed, refit_x_stats=True)
                        rows.append(("mf-npe", tool, lambda xo, k, m=ft: m.sample(k, xo), time.process_time() - t0, h.epochs))
                if not args.no_sbi:
                    from sbi.inference import NPE

                    from ou_bench import sbi_estimator
                    torch.manual_seed(seed)
                    inf = NPE(prior=sbi_prior(name), density_estimator=sbi_estimator("zuko_nsf", sbi_prior(name)),
                              show_progress_bars=False)
                    if do_npe:
                        de, t, ep = sbi_train(inf, th, x, base)
                        post = inf.build_posterior(de)
                        rows.append(("npe", "sbi-zuko_nsf", lambda xo, k, p=post: p.sample((k,), x=xo, show_progress_bars=False), t, ep))
                    if lf is not None and do_mf:
                        # sbi's fine-tuning: a fresh NPE holding only the HF set continues training the
                        # LF-trained network (its x z-scoring stays LF's, as sbi keeps it; fresh optimiser)
                        torch.manual_seed(seed)
                        ft = NPE(prior=sbi_prior(name), density_estimator=sbi_estimator("zuko_nsf", sbi_prior(name)),
                                 show_progress_bars=False)
                        ft._neural_net = copy.deepcopy(sbi_lf._neural_net)
                        de, t, ep = sbi_train(ft, th, x, base, resume=True)
                        post = ft.build_posterior(de)
                        rows.append(("mf-npe", "sbi-zuko_nsf", lambda xo, k, p=post: p.sample((k,), x=xo, show_progress_bars=False), t, ep))
                for method, tool, fn, t, ep in rows:
                    t0 = time.process_time()
                    scores = c2st(fn, ref, args.samples, args.classifiers, args.observations, args.mlp_observations)
                    emit(args.out, {"task": name, "phase": "fit", "method": method, "tool": tool, "n_sim": n, "seed": seed,
                                    "n_lf": args.n_lf if method == "mf-npe" else None, "samples": args.samples,
                                    "train_cpu_s": t, "epochs": ep, **scores, "c2st_cpu_s": time.process_time() - t0})


def summarize(args):
    rows = [json.loads(line) for p in args.files for line in open(p) if line.strip()]
    groups = {}
    for r in rows:
        if r.get("phase") != "fit":
            continue
        g = groups.setdefault((r["task"], r["method"], r["n_sim"], r["tool"]),
                              {"cpu": [], "epochs": [], "seeds": set(), "c2st": {}})
        g["cpu"].append(r["train_cpu_s"])
        g["epochs"].append(r["epochs"])
        g["seeds"].add(r["seed"])
        for k, v in r.items():
            if k.startswith("c2st_") and k != "c2st_cpu_s":
                g["c2st"].setdefault(k[5:], []).extend(v)
    table = []
    for (task, method, n, tool), g in sorted(groups.items()):
        row = {"task": task, "method": method, "n_sim": n, "tool": tool, "seeds": sorted(g["seeds"]),
               "mean_train_cpu_s": round(sum(g["cpu"]) / len(g["cpu"]), 2), "mean_epochs": sum(g["epochs"]) / len(g["epochs"])}
        for c, v in sorted(g["c2st"].items()):
            s = Q.mean_ci95(v)
            row[f"c2st_{c}"] = {"mean": round(s["mean"], 4), "ci95": round(s["ci95"], 4), "n": s["n"]}
        table.append(row)
    pairs = compare(rows, ours=args.ours or f"cortexkit-{args.ours_map}", anchor=args.anchor)
    report({"benchmark": "simulate-npe theta map and defaults vs sbi 0.27 (issue 36)",
            "metric": "C2ST, 1000 vs 1000 samples, 5-fold, seed 1, per reference observation",
            "train_time": "CPU seconds of the training call (time.process_time), one torch thread",
            "rows": table, "ours_vs_sbi": pairs}, args.yaml)
    if args.markdown:
        print(markdown(pairs))


def compare(rows, ours="cortexkit-zscore", anchor="sbi-zuko_nsf"):
    """Ours against the anchor per (task, method, n_sim) over the cells both have: the same seed and
    observation index. Per classifier: the two means, their difference and the 95 % half-width of
    the paired differences (1.96 sd / sqrt(cells)); train CPU and epochs per seed."""
    fits = {}
    for r in rows:
        if r.get("phase") == "fit" and r["tool"] in (ours, anchor):
            fits[(r["task"], r["method"], r["n_sim"], r["seed"], r["tool"])] = r
    out = []
    for task, method, n in sorted({k[:3] for k in fits}):
        seeds = sorted(k[3] for k in fits if k[:3] == (task, method, n) and k[4] == ours
                       and (task, method, n, k[3], anchor) in fits)
        if not seeds:
            continue
        a = [fits[(task, method, n, sd, ours)] for sd in seeds]
        b = [fits[(task, method, n, sd, anchor)] for sd in seeds]
        row = {"task": task, "method": method, "n_sim": n, "seeds": seeds,
               "epochs": [[x["epochs"], y["epochs"]] for x, y in zip(a, b)],
               "train_cpu_s": [round(sum(x["train_cpu_s"] for x in a) / len(a), 2),
                               round(sum(y["train_cpu_s"] for y in b) / len(b), 2)]}
        row["cpu_ratio"] = round(row["train_cpu_s"][0] / row["train_cpu_s"][1], 2)
        # the classifiers every paired row has (files run with --classifiers rf beside rf mlp ones)
        scored = [{k[5:] for k in r if k.startswith("c2st_") and k != "c2st_cpu_s"} for r in a + b]
        for c in sorted(set.intersection(*scored)):
            va, vb = [], []
            per_seed = []
            for x, y in zip(a, b):
                m = min(len(x[f"c2st_{c}"]), len(y[f"c2st_{c}"]))
                va += x[f"c2st_{c}"][:m]
                vb += y[f"c2st_{c}"][:m]
                per_seed.append([round(sum(x[f"c2st_{c}"][:m]) / m, 3), round(sum(y[f"c2st_{c}"][:m]) / m, 3)])
            d = Q.mean_ci95([p - q for p, q in zip(va, vb)])
            row[c] = {"ours": round(sum(va) / len(va), 4), "sbi": round(sum(vb) / len(vb), 4),
                      "diff": round(d["mean"], 4), "diff_ci95": round(d["ci95"], 4), "cells": d["n"],
                      "per_seed": per_seed}
        out.append(row)
    return out


def markdown(pairs):
    """One line per (task, method, budget): mean C2ST ours / sbi (difference +- 95 % half-width)."""
    lines = ["| task | method | N | RF ours / sbi (diff ± hw) | MLP ours / sbi (diff ± hw) | epochs ours / sbi per seed "
             "| train CPU s ours / sbi (ratio) |", "|---|---|---|---|---|---|---|"]
    for r in pairs:
        cells = []
        for c in ("rf", "mlp"):
            v = r.get(c)
            cells.append(f"{v['ours']:.3f} / {v['sbi']:.3f} ({v['diff']:+.3f} ± {v['diff_ci95']:.3f}, n={v['cells']})"
                         if v else "—")
        ep = ", ".join(f"{x} / {y}" for x, y in r["epochs"])
        lines.append(f"| {r['task']} | {r['method']} | {r['n_sim']} | {cells[0]} | {cells[1]} | {ep} "
                     f"| {r['train_cpu_s'][0]} / {r['train_cpu_s'][1]} ({r['cpu_ratio']}x) |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--summarize", nargs="+", dest="files")
    ap.add_argument("--tasks", nargs="+", default=["two_moons", "slcp"])
    ap.add_argument("--n-sim", type=int, nargs="+", default=[1000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[12])
    ap.add_argument("--maps", nargs="+", default=["zscore", "logit"])
    ap.add_argument("--bins", type=int, nargs="+", default=None,
                    help="fit ours once per spline-bin count (tools cortexkit-MAP-bB); default: the flow's default, once")
    ap.add_argument("--ablations", nargs="+", default=None,
                    help="also NPE fits with one difference to sbi moved (miss_study42.py: none theta-train x-train "
                         "theta-raw theta-sbi net-sbi), tools cortexkit-abl-NAME")
    ap.add_argument("--lognormal-maps", nargs="+", default=None, choices=["zscore", "log"],
                    help="fit ours once per log-normal map (tools cortexkit-MAP-ln-LM); default: the flow's default, once")
    ap.add_argument("--mf", action="store_true", help="also MF-NPE and sbi fine-tuning (tasks with an LF simulator)")
    ap.add_argument("--n-sim-mf", type=int, nargs="+", default=None,
                    help="HF budgets of the MF rows (default: --n-sim); NPE runs at --n-sim only")
    ap.add_argument("--n-lf", type=int, default=10_000)
    ap.add_argument("--no-sbi", action="store_true")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--validation-fraction", type=float, default=0.1)
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--patience-steps", type=int, default=None,
                    help="our HF fits' patience in gradient steps (default: the tool's; 0 = epochs only, as before stop 44)")
    ap.add_argument("--patience-pretrain", type=int, default=None, help="LF pretraining's [--patience]")
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--classifiers", nargs="+", default=["rf", "mlp"])
    ap.add_argument("--observations", type=int, default=None, help="score the first K reference observations (all)")
    ap.add_argument("--mlp-observations", type=int, default=None, help="MLP C2ST on the first K of them only (all)")
    ap.add_argument("--out", default="theta_map_bench.jsonl")
    ap.add_argument("--yaml")
    ap.add_argument("--markdown", action="store_true", help="with --summarize: also a markdown table, ours vs sbi")
    ap.add_argument("--ours-map", default="zscore", help="with --summarize: which of our maps faces sbi")
    ap.add_argument("--ours", default=None, help="with --summarize: the tool name that faces the anchor (cortexkit-MAP)")
    ap.add_argument("--anchor", default="sbi-zuko_nsf", help="with --summarize: the tool ours is compared with")
    args = ap.parse_args()
    if args.files:
        summarize(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
