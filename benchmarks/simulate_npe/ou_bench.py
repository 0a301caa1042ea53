"""OU benchmark: cortexkit simulate-npe (NPE, MF-NPE, MF-TSNPE, A-MF-TSNPE) vs sbi 0.27 (NPE, TSNPE),
on the paper's own OU training sets and observations, same seeds, same RF-C2ST code, one thread each.

    python benchmarks/simulate_npe/ou_bench.py amortized --n-hf 50 100 1000 --seeds 12 13 --out A.jsonl
    python benchmarks/simulate_npe/ou_bench.py sequential --n-hf 50 100 --seeds 12 --observations 0 1 2 --out B.jsonl
    python benchmarks/simulate_npe/ou_bench.py summarize A.jsonl B.jsonl --yaml results.yaml

Each finished (method, N_HF, seed) appends one JSON line (so a partial run still counts).
The anchor is imported here only; cortexkit never imports sbi.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

from cortexkit.tools.npe import methods as M
from cortexkit.tools.npe import metrics as Q
from cortexkit.tools.npe.tasks import get_task, ou_hf

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "npe" / "ou_process"
PAPER_SIR = {  # read off the paper's README benchmark figure (+-0.01)
    ("npe", 50): 0.96, ("npe", 100): 0.92, ("npe", 1000): 0.82, ("npe", 10000): 0.64,
    ("mf-npe4", 50): 0.82, ("mf-npe4", 100): 0.80, ("mf-npe4", 1000): 0.73, ("mf-npe4", 10000): 0.66,
    ("mf-npe5", 50): 0.78, ("mf-npe5", 100): 0.72, ("mf-npe5", 1000): 0.65, ("mf-npe5", 10000): 0.63,
}
OFFICIAL = {  # RF-C2ST means of the paper's evaluation files (official_eval_summary.csv)
    ("npe", 50): 0.795, ("npe", 100): 0.783, ("npe", 1000): 0.629, ("npe", 10000): 0.543, ("npe", 100000): 0.519,
    ("mf-npe3", 50): 0.748, ("mf-npe3", 100): 0.723, ("mf-npe3", 1000): 0.617, ("mf-npe3", 10000): 0.542,
    ("mf-npe4", 50): 0.740, ("mf-npe4", 100): 0.719, ("mf-npe4", 1000): 0.604, ("mf-npe4", 10000): 0.542, ("mf-npe4", 100000): 0.518,
    ("mf-npe5", 50): 0.731, ("mf-npe5", 100): 0.694, ("mf-npe5", 1000): 0.590, ("mf-npe5", 10000): 0.540,
    ("tsnpe", 50): 0.843, ("tsnpe", 100): 0.773, ("tsnpe", 1000): 0.674,
    ("mf-tsnpe4", 50): 0.805, ("mf-tsnpe4", 100): 0.781, ("mf-tsnpe4", 1000): 0.654,
    ("a-mf-tsnpe4", 50): 0.788, ("a-mf-tsnpe4", 100): 0.752, ("a-mf-tsnpe4", 1000): 0.636,
}
OFFICIAL_30 = {  # the rows of the evaluation files on the 30 observations (true_obs_30)
    ("mf-npe5", 50): 0.731, ("mf-npe5", 100): 0.694, ("mf-npe5", 1000): 0.590, ("mf-npe5", 10000): 0.540,
    ("mf-npe5", 100000): 0.520,
    ("mf-tsnpe4", 50): 0.758, ("mf-tsnpe4", 100): 0.709, ("mf-tsnpe4", 1000): 0.611,
    ("a-mf-tsnpe4", 50): 0.715, ("a-mf-tsnpe4", 100): 0.678, ("a-mf-tsnpe4", 1000): 0.604,
}


def observations(args):
    """The chosen observation set and the rows of it to run (--observations, default all)."""
    obs = load(f"true_obs_{args.obs_set}")
    return obs, args.observations or range(len(obs["x_o"]))


def load(name):
    d = load_file(str(DATA / f"{name}.safetensors"))
    return d


def simulated(fidelity, n, seed):
    """n (theta, x) pairs from the built-in OU simulator of that fidelity, from a fixed seed."""
    task = get_task("ou")
    g = torch.Generator().manual_seed(seed)
    theta = task.prior.sample(n, g)
    return {"theta": theta, "x": task.simulator(fidelity)(theta, g)}


def load_lf(n_lf):
    """The paper's LF set when shipped (10^3, 10^4); larger ones (10^5) are simulated here with the
    built-in OU LF simulator (10 i.i.d. N(mu, sigma) draws, the paper's LF) from a fixed seed."""
    if (DATA / f"lf_train_{n_lf}.safetensors").exists():
        return load(f"lf_train_{n_lf}")
    return simulated("lf", n_lf, 7_000_000 + n_lf)


PAPER_HF_MAX = 10_000  # the largest HF set the paper ships


def load_hf(n_hf):
    """The paper's HF set of that size when shipped (50, 100, 10^3, 10^4); an intermediate budget
    (for a finer HF-efficiency curve) is the first n_hf rows of one fixed permutation of the paper's
    10^4 set, so budgets are nested subsets of the same simulations; a larger one (10^5) is simulated
    here with the built-in OU HF simulator from a fixed seed, as load_lf does for 10^5 LF."""
    if (DATA / f"hf_train_{n_hf}.safetensors").exists():
        return load(f"hf_train_{n_hf}")
    if n_hf > PAPER_HF_MAX:
        return simulated("hf", n_hf, 8_000_000 + n_hf)
    full = load(f"hf_train_{PAPER_HF_MAX}")
    idx = torch.randperm(PAPER_HF_MAX, generator=torch.Generator().manual_seed(10_000))[:n_hf]
    return {"theta": full["theta"][idx], "x": full["x"][idx]}


def emit(out, row):
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def report(out, path=None):
    """Print a summary as YAML, and write it to path when given."""
    import yaml

    text = yaml.safe_dump(out, sort_keys=False)
    if path:
        Path(path).write_text(text)
    print(text)


def c2st_by(sample_fn, obs, idx, n=1000, classifiers=("rf",)):
    """{classifier: [C2ST per observation]}: n posterior draws (seeded 1000 + i) against the
    observation's reference samples."""
    vals = {c: [] for c in classifiers}
    for i in idx:
        torch.manual_seed(1000 + i)
        s = sample_fn(obs["x_o"][i], n)
        for c in classifiers:
            vals[c].append(Q.c2st(s, obs["reference_posterior_samples"][i][:n], c))
    return vals


def c2st_all(sample_fn, obs, idx, n=1000):
    return c2st_by(sample_fn, obs, idx, n)["rf"]


def sbi_prior():
    from sbi.utils import BoxUniform

    return BoxUniform(low=torch.tensor([0.1, 0.1]), high=torch.tensor([3.0, 0.6]))


def sbi_estimator(name, prior=None):
    """sbi's own estimators by name, plus ``zuko_nsf_paper``: sbi's zuko NSF configured as the MF-NPE
    flow (8 bins, theta through the prior's bijection to R^d instead of z-scored), so that the two
    implementations can be compared at equal architecture."""
    from sbi.neural_nets import posterior_nn

    if name == "zuko_nsf_bins8":  # sbi's default (z-scored theta) with the paper's 8 bins instead of 10
        return posterior_nn("zuko_nsf", num_bins=8)
    if name != "zuko_nsf_paper":
        return name

    return posterior_nn("zuko_nsf", z_score_theta="transform_to_unconstrained", num_bins=8, x_dist=prior or sbi_prior())


def sbi_npe(theta, x, seed, estimator, prior=None):
    """sbi NPE with the paper's hyperparameters -> (sample_fn(x_o, n), train CPU s, epochs); prior: OU's by default."""
    from sbi.inference import NPE

    prior = prior or sbi_prior()
    torch.manual_seed(seed)
    inf = NPE(prior=prior, density_estimator=sbi_estimator(estimator, prior), show_progress_bars=False)
    t0 = time.process_time()
    de = inf.append_simulations(theta, x).train(training_batch_size=200, learning_rate=5e-4, validation_fraction=0.1,
                                                stop_after_epochs=20, clip_max_norm=5.0, show_train_summary=False)
    t = time.process_time() - t0
    post = inf.build_posterior(de)
    return (lambda xo, n: post.sample((n,), x=xo, show_progress_bars=False)), t, inf.summary["epochs_trained"][-1]


def amortized(args):
    obs, idx = observations(args)
    prior = get_task("ou").prior
    for seed in args.seeds or [12, 13]:
        pre = {}
        for n_lf in args.n_lf:
            lf = load_lf(n_lf)
            t0 = time.process_time()
            pre[n_lf], h = M.fit_npe(prior, lf["theta"], lf["x"], train_cfg=M.TrainConfig(lr=M.LR_PRETRAIN), seed=seed)
            emit(args.out, {"phase": "pretrain", "n_lf": n_lf, "seed": seed, "epochs": h.epochs,
                            "cpu_s": time.process_time() - t0})
        for n_hf in args.n_hf:
            hf = load_hf(n_hf)
            runs = []
            if not args.no_npe:
                t0 = time.process_time()
                model, h = M.fit_npe(prior, hf["theta"], hf["x"], seed=seed)
                runs.append(("npe", "cortexkit", model, time.process_time() - t0, h.epochs))
            for n_lf in args.n_lf:
                t0 = time.process_time()
                model, h = M.fine_tune(pre[n_lf], hf["theta"], hf["x"], seed=seed, refit_x_stats=True)
                runs.append((f"mf-npe{len(str(n_lf)) - 1}", "cortexkit", model, time.process_time() - t0, h.epochs))
            for method, tool, model, t, ep in runs:
                vals = c2st_all(lambda xo, n, m=model: m.sample(n, xo), obs, idx)
                emit(args.out, {"phase": "amortized", "method": method, "tool": tool, "n_hf": n_hf, "seed": seed,
                                "obs_set": args.obs_set, "train_cpu_s": t, "epochs": ep, "rf_c2st": vals})
            for est in args.sbi_estimators:
                sample_fn, t, ep = sbi_npe(hf["theta"], hf["x"], seed, est)
                vals = c2st_all(sample_fn, obs, idx)
                emit(args.out, {"phase": "amortized", "method": "npe", "tool": f"sbi-{est}", "n_hf": n_hf, "seed": seed,
                                "obs_set": args.obs_set, "train_cpu_s": t, "epochs": ep, "rf_c2st": vals})


def sbi_tsnpe(x_o, n_hf, seed, estimator, truncation_samples, rounds=5):
    from sbi.inference import NPE
    from sbi.utils import RestrictedPrior, get_density_thresholder

    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    prior = sbi_prior()
    inf = NPE(prior=prior, density_estimator=sbi_estimator(estimator, prior), show_progress_bars=False)
    proposal = prior
    t0 = time.process_time()
    for r in range(rounds):
        theta = proposal.sample((n_hf // rounds,))
        x = ou_hf(theta, g)
        de = inf.append_simulations(theta, x, proposal=proposal).train(
            force_first_round_loss=True, training_batch_size=200, learning_rate=5e-4, validation_fraction=0.1,
            stop_after_epochs=20, clip_max_norm=5.0, show_train_summary=False)
        post = inf.build_posterior(de).set_default_x(x_o)
        if r < rounds - 1:
            accept = get_density_thresholder(post, quantile=1e-6, num_samples_to_estimate_support=truncation_samples)
            proposal = RestrictedPrior(prior, accept, sample_with="rejection")
    t = time.process_time() - t0
    return post.sample((1000,), show_progress_bars=False), t


def sequential(args):
    obs, idx = observations(args)
    prior = get_task("ou").prior
    for seed in args.seeds or [12, 13]:
        lf = load_lf(args.n_lf[0])
        t0 = time.process_time()
        pre, h = M.fit_npe(prior, lf["theta"], lf["x"], train_cfg=M.TrainConfig(lr=M.LR_PRETRAIN), seed=seed)
        emit(args.out, {"phase": "pretrain", "n_lf": args.n_lf[0], "seed": seed, "epochs": h.epochs,
                        "cpu_s": time.process_time() - t0})
        tag = len(str(args.n_lf[0])) - 1
        for n_hf in args.n_hf:
            for i in idx:
                x_o = obs["x_o"][i]
                ref = obs["reference_posterior_samples"][i]
                for method, kw in (("mf-tsnpe", {}), ("a-mf-tsnpe", {"ensemble_size": 5, "active_fraction": 0.2})):
                    g = torch.Generator().manual_seed(seed * 7919 + i)
                    t0 = time.process_time()
                    post, recs = M.run_sequential(prior, lambda th: ou_hf(th, g), x_o, n_hf, pretrained=pre, seed=seed,
                                                  truncation_samples=args.truncation_samples, **kw)
                    t = time.process_time() - t0
                    torch.manual_seed(1000 + i)
                    s = post.sample(1000, x_o)
                    emit(args.out, {"phase": "sequential", "method": f"{method}{tag}", "tool": "cortexkit", "n_hf": n_hf,
                                    "seed": seed, "obs_set": args.obs_set, "observation": i, "train_cpu_s": t,
                                    "rf_c2st": [Q.c2st(s, ref[:1000], "rf")],
                                    "acceptance": [r.acceptance for r in recs]})
                for est in args.sbi_estimators:
                    s, t = sbi_tsnpe(x_o, n_hf, seed * 7919 + i, est, args.truncation_samples)
                    emit(args.out, {"phase": "sequential", "method": "tsnpe", "tool": f"sbi-{est}", "n_hf": n_hf,
                                    "seed": seed, "obs_set": args.obs_set, "observation": i, "train_cpu_s": t,
                                    "rf_c2st": [Q.c2st(s, ref[:1000], "rf")]})


def n_to_reach(curve, c):
    """Smallest budget at which a (budget, C2ST) curve first reaches C2ST <= c, log-linearly interpolated
    between neighbouring budgets; a string when the first budget is already there, None if never."""
    if curve and curve[0][1] <= c:
        return f"<= {curve[0][0]}"
    for (n0, c0), (n1, c1) in zip(curve, curve[1:]):
        if c0 > c >= c1:
            frac = (c0 - c) / (c0 - c1)
            return round(10 ** (math.log10(n0) + frac * (math.log10(n1) - math.log10(n0))), 1)
    return None


def summarize(args):
    rows = []
    for p in args.files:
        rows += [json.loads(line) for line in open(p) if line.strip()]
    if args.seeds:
        rows = [r for r in rows if r["seed"] in args.seeds]
    obs_sets = {r.get("obs_set", 10) for r in rows if r.get("phase") != "pretrain"}
    if len(obs_sets) > 1:
        raise SystemExit(f"summarize: rows from observation sets {sorted(obs_sets)}; summarize each set on its own")
    paper = PAPER_SIR if args.task == "sir" else OFFICIAL_30 if obs_sets == {30} else OFFICIAL
    groups = {}
    for r in rows:
        if r.get("phase") == "pretrain":
            continue
        key = (r["method"], r["tool"], r["n_hf"])
        g = groups.setdefault(key, {"c2st": [], "cpu": [], "epochs": [], "seeds": set(), "obs": set()})
        g["c2st"] += r["rf_c2st"]
        g["cpu"].append(r["train_cpu_s"])
        if "epochs" in r:
            g["epochs"].append(r["epochs"])
        g["seeds"].add(r["seed"])
        if "observation" in r:
            g["obs"].add(r["observation"])
    table = []
    for (method, tool, n_hf), g in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        s = Q.mean_ci95(g["c2st"])
        ref = paper.get((method, n_hf))
        table.append({"method": method, "tool": tool, "n_hf": n_hf, "rf_c2st_mean": round(s["mean"], 4),
                      "ci95": round(s["ci95"], 4), "n": s["n"], "seeds": sorted(g["seeds"]),
                      "paper_mean": ref, "mean_train_cpu_s": round(sum(g["cpu"]) / len(g["cpu"]), 2),
                      "cpu_s_per_epoch": round(sum(g["cpu"]) / sum(g["epochs"]), 4) if g["epochs"] else None})
    # ratios: ours vs sbi on the same budgets
    ratios = []
    for n_hf in sorted({t["n_hf"] for t in table}):
        at = {(t["method"], t["tool"]): t for t in table if t["n_hf"] == n_hf}
        for sbi_key in [k for k in at if k[1].startswith("sbi")]:
            for ours_key in [k for k in at if k[1] == "cortexkit"]:
                if (sbi_key[0] == "npe") != ((at[ours_key]["method"] == "npe" or at[ours_key]["method"].startswith("mf-npe"))):
                    continue
                ratios.append({"n_hf": n_hf, "ours": ours_key[0], "anchor": f"{sbi_key[0]} ({sbi_key[1]})",
                               "c2st_ours_minus_anchor": round(at[ours_key]["rf_c2st_mean"] - at[sbi_key]["rf_c2st_mean"], 4),
                               "train_time_ratio_ours_over_anchor": round(at[ours_key]["mean_train_cpu_s"] / max(at[sbi_key]["mean_train_cpu_s"], 1e-9), 3),
                               "per_epoch_time_ratio": round(at[ours_key]["cpu_s_per_epoch"] / at[sbi_key]["cpu_s_per_epoch"], 3)
                               if at[ours_key]["cpu_s_per_epoch"] and at[sbi_key]["cpu_s_per_epoch"] else None})
    # HF-efficiency: smallest N_HF whose mean C2ST reaches the threshold (log-linear interpolation)
    threshold = 0.70 if args.task == "sir" else 0.65
    curves = {key: sorted((t["n_hf"], t["rf_c2st_mean"]) for t in table if (t["method"], t["tool"]) == key)
              for key in sorted({(t["method"], t["tool"]) for t in table})}
    def reach(curve):
        n = n_to_reach(curve, threshold)
        return n if n is not None else f"> {curve[-1][0]}"

    efficiency = [{"method": key[0], "tool": key[1], "threshold": threshold, "n_hf_to_reach": reach(curve)}
                  for key, curve in curves.items()]
    # the same figure from the paper's own rows, so the target can be read against what the method reached there
    efficiency_paper = [{"method": method, "threshold": threshold,
                         "n_hf_to_reach": reach(sorted((n, c) for (m, n), c in paper.items() if m == method))}
                        for method in sorted({t["method"] for t in table if (t["method"], t["n_hf"]) in paper})]
    # HF savings: at each budget of a multifidelity method, the anchor NPE budget that reaches the same C2ST
    savings = []
    for anchor in [k for k in curves if k[0] == "npe"]:
        for key in [k for k in curves if k[0] != "npe" and k[1] == "cortexkit"]:
            for n, c in curves[key]:
                m = n_to_reach(curves[anchor], c)
                savings.append({"method": key[0], "n_hf": n, "rf_c2st": c, "anchor": f"npe ({anchor[1]})",
                                "anchor_n_hf_for_same_c2st": m if m is not None else f"> {curves[anchor][-1][0]}",
                                "saving": round(m / n, 2) if isinstance(m, float) else None})
    out = {"benchmark": f"simulate-npe {args.task}", "metric": "RF-C2ST, 1000 vs 1000 samples, 5-fold, seed 1",
           "train_time": "CPU seconds of the training call (time.process_time), one torch thread",
           "threads": 1, "rows": table, "ratios": ratios, "hf_efficiency": efficiency,
           "hf_efficiency_paper": efficiency_paper,
           "hf_savings": savings}
    report(out, args.yaml)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["amortized", "sequential", "summarize"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--n-hf", type=int, nargs="+", default=[50, 100, 1000])
    ap.add_argument("--n-lf", type=int, nargs="*", default=[1000, 10000], help="LF sizes for MF rows; none: no MF rows")
    ap.add_argument("--seeds", type=int, nargs="+", help="seeds to run (default 12 13); summarize: keep only these")
    ap.add_argument("--observations", type=int, nargs="+", help="rows of the observation set (default: all)")
    ap.add_argument("--obs-set", type=int, default=10, choices=[10, 30],
                    help="the paper's 10 observations (true_obs_10) or its 30 (true_obs_30, the MF-NPE5 row's)")
    ap.add_argument("--sbi-estimators", nargs="*", default=["zuko_nsf"])
    ap.add_argument("--no-npe", action="store_true", help="amortized: skip our NPE rows (add MF rows to a run)")
    ap.add_argument("--truncation-samples", type=int, default=100_000)
    ap.add_argument("--out", default="ou_bench.jsonl")
    ap.add_argument("--yaml")
    ap.add_argument("--task", default="ou", choices=["ou", "sir"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    {"amortized": amortized, "sequential": sequential, "summarize": summarize}[args.phase](args)


if __name__ == "__main__":
    main()
