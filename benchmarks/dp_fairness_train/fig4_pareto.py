"""Figure 4: Pareto fronts (test misclassification vs test demographic-parity gap) at epsilon 1
(delta 1e-5), 5 seeds per gamma, against the published DP-FERMI / Tran et al. points
(shared/data/dpfair/baselines_dpfermi/published_pareto_points.csv) and, measured in the same run,
non-private fairlearn ExponentiatedGradient(LogisticRegression, DemographicParity) and our own
unconstrained DP-SGD mode. A hypervolume (box gap <= 0.25, error <= 0.25) per method.

    python benchmarks/dp_fairness_train/fig4_pareto.py --dataset adult --out benchmarks/dp_fairness_train/results/fig4_pareto_adult.yaml
    python benchmarks/dp_fairness_train/fig4_pareto.py --dataset parkinsons --out benchmarks/dp_fairness_train/results/fig4_pareto_parkinsons.yaml
    python benchmarks/dp_fairness_train/fig4_pareto.py --dataset parkinsons --split raco --paper-protocol --out benchmarks/dp_fairness_train/results/fig4_pareto_parkinsons_raco.yaml
    python benchmarks/dp_fairness_train/fig4_pareto.py --dataset parkinsons --split dpfermi --paper-protocol --out benchmarks/dp_fairness_train/results/fig4_pareto_parkinsons_dpfermi.yaml
    python benchmarks/dp_fairness_train/fig4_pareto.py --dataset parkinsons --resplit --seeds 10 --paper-protocol --out benchmarks/dp_fairness_train/results/fig4_pareto_parkinsons_resplit10.yaml
    python benchmarks/dp_fairness_train/fig4_pareto.py --dataset compas --out benchmarks/dp_fairness_train/results/fig4_pareto_compas.yaml
    python benchmarks/dp_fairness_train/fig4_pareto.py --dataset adult --constraint equalized-odds --out benchmarks/dp_fairness_train/results/fig4_pareto_adult_eo.yaml
"""
import argparse
import csv
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

# Hyper-parameters chosen on a validation split (tune.py); gamma grids.
SETTINGS = {
    "adult": {"params": {}, "gammas": [0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.055, 0.06, 0.08, 0.1, 0.15],
              "fairlearn_bounds": [0.01, 0.02, 0.035]},
    "parkinsons": {"params": {"batch": 512, "sigma": 6.0, "laplace_b": 0.1},
                   "gammas": [0.01, 0.02, 0.03, 0.05, 0.07], "fairlearn_bounds": [0.005, 0.01, 0.02, 0.04]},
    "compas": {"params": {"batch": 1024, "sigma": 8.0, "laplace_b": 0.1},
               "gammas": [0.02, 0.05, 0.1, 0.2], "fairlearn_bounds": [0.02, 0.05]},
}
# --paper-protocol on Parkinsons: settings picked on RaCO-DP's validation fold by
# `tune.py --dataset parkinsons --split raco --grid parkinsons-raco` (+ `--grid parkinsons-raco-2`; the
# largest validation hypervolume, the same pick in both rounds). On the DP-FERMI split (seed 100) that
# fold overlaps the test set, so there the seed-100 pick of SETTINGS is kept (only the gamma grid is shared).
PAPER_SETTINGS = {
    "parkinsons": {"params": {"batch": 512, "sigma": 10.0, "laplace_b": 0.2, "lr_dual": 1.0},
                   "gammas": [0.005, 0.01, 0.02, 0.03, 0.05, 0.07], "fairlearn_bounds": [0.005, 0.01, 0.02, 0.04]},
}
PUBLISHED_NAME = {"adult": "adult", "parkinsons": "parkinsons"}
# --constraint equalized-odds: the gap on the x axis, the published curves and fairlearn's constraint follow
GAP = "dp_gap"
EO_SETTINGS = {"adult": {"params": {}, "gammas": [0.01, 0.02, 0.05, 0.1], "fairlearn_bounds": [0.01, 0.02, 0.05]}}


def published(dataset, epsilon):
    path = common.DATA / "baselines_dpfermi" / "published_pareto_points.csv"
    out = {}
    name = PUBLISHED_NAME.get(dataset)
    if name is None:
        return out
    for r in csv.DictReader(open(path)):
        kind = "demographic_parity" if GAP == "dp_gap" else "equalized_odds"
        if r["constraint"] == kind and r["dataset"] == name and float(r["epsilon"].rstrip(".")) == epsilon:  # the CSV has "0.5." once
            out.setdefault(r["method"], []).append(
                {"error": float(r["test_misclassification"]), GAP: float(r["test_violation_mean"])})
    return out


def fairlearn_points(d, bounds):
    from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    from cortexkit.tools.dpfair import metrics

    pts = []
    x, y, xt = d["x_train"].numpy(), d["y_train"].numpy(), d["x_test"].numpy()
    for bound in bounds:
        t0 = time.perf_counter()
        moment = DemographicParity if GAP == "dp_gap" else EqualizedOdds
        eg = ExponentiatedGradient(LogisticRegression(max_iter=1000), moment(difference_bound=bound),
                                   eps=0.01, max_iter=50)
        eg.fit(x, y, sensitive_features=d["g_train"])
        pred = eg.predict(xt, random_state=0)
        gaps = metrics.fairness_gaps(pred, d["y_test"].numpy(), d["g_test"], 2)
        pts.append({"bound": bound, "error": float((pred != d["y_test"].numpy()).mean()), "dp_gap": gaps["dp_gap"],
                    "ovr_gap": gaps["ovr_gap"], "eo_gap": gaps["eo_gap"], "seconds": time.perf_counter() - t0})
        print("fairlearn", pts[-1], flush=True)
    return pts


def front(points):
    """Non-dominated subset of (gap, error) points, sorted by gap."""
    pts = sorted(points, key=lambda p: (p[GAP], p["error"]))
    out, best = [], float("inf")
    for p in pts:
        if p["error"] < best:
            out.append(p)
            best = p["error"]
    return out


def _interpolate(front_pts, gap):
    """Error of the piecewise-linear front (sorted by gap) at ``gap``; None outside its gap range."""
    for a, b in zip(front_pts, front_pts[1:]):
        if a[GAP] <= gap <= b[GAP]:
            w = (gap - a[GAP]) / (b[GAP] - a[GAP]) if b[GAP] > a[GAP] else 0.0
            return a["error"] + w * (b["error"] - a["error"])
    return None


def matched_gap(mine, published_pts):
    """For each published point (error e, gap g), ours at a matched gap, three ways:
    ``best``: lowest mean test error of our points whose mean test gap is <= g (Pareto reading);
    ``interpolated``: our test front, piecewise linear, evaluated at g;
    ``validation``: the gamma chosen WITHOUT test data -- among our points whose mean validation gap is
    <= g, the lowest mean validation error (if none, the smallest validation gap) -- and its test error/gap.
    ``delta_*`` = published error - ours (positive: ours is lower)."""
    rows = []
    fr = front(mine)
    for p in published_pts:
        row = {"published_error": p["error"], "published_gap": p[GAP]}
        ok = [o for o in mine if o[GAP] <= p[GAP]]
        if ok:
            b = min(ok, key=lambda o: o["error"])
            row.update(best_error=b["error"], best_gap=b[GAP], best_gamma=b.get("gamma", "none (DP-SGD)"),
                       delta_best=p["error"] - b["error"])
        e = _interpolate(fr, p[GAP])
        if e is not None:
            row.update(interpolated_error=e, delta_interpolated=p["error"] - e)
        val = [o for o in mine if "val" in o]
        if val:
            okv = [o for o in val if o["val"][GAP] <= p[GAP]]
            v = min(okv, key=lambda o: o["val"]["error"]) if okv else min(val, key=lambda o: o["val"][GAP])
            row.update(validation_gamma=v.get("gamma", "none (DP-SGD)"), validation_pick_val_gap=v["val"][GAP],
                       validation_test_error=v["error"], validation_test_gap=v[GAP],
                       delta_validation=p["error"] - v["error"],
                       validation_gap_met=bool(v[GAP] <= p[GAP]))
        rows.append(row)
    summary = {}
    for key in ("delta_best", "delta_interpolated", "delta_validation"):
        # a validation pick whose test gap exceeds the published gap is not a matched-gap comparison
        vals = [r[key] for r in rows if key in r and (key != "delta_validation" or r["validation_gap_met"])]
        if vals:
            summary[key] = {"mean": statistics.fmean(vals), "min": min(vals), "max": max(vals), "points": len(vals)}
    summary["published_points"] = len(rows)
    return {"points": rows, "summary": summary}


def main():
    global GAP
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="adult", choices=sorted(SETTINGS))
    ap.add_argument("--out", default=None)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--no-fairlearn", action="store_true", help="skip the (slow) fairlearn anchor")
    ap.add_argument("--constraint", default="demographic-parity", choices=["demographic-parity", "equalized-odds"])
    ap.add_argument("--gammas", default=None, help="override the gamma grid, e.g. 0.12,0.13")
    ap.add_argument("--resplit", action="store_true",
                    help="seed s also draws the 75/25 split (split seed s) instead of the fixed split")
    ap.add_argument("--split", default="100",
                    help="the fixed 75/25 split: an integer pandas seed, 'dpfermi' (= 100, the DP-FERMI code's) or "
                         "'raco' (RaCO-DP's: random_state=np.random.default_rng(0))")
    ap.add_argument("--paper-protocol", action="store_true",
                    help="RaCO-DP's protocol: train on 7/8 of the train split, keep its StratifiedKFold fold 0 as "
                         "validation (common.paper_folds); gammas are then also chosen on validation (matched_gap)")
    ap.add_argument("--rescore", action="store_true",
                    help="recompute only the matched-gap table of an existing --out YAML (no training)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.rescore:
        import yaml

        res = yaml.safe_load(open(args.out))
        GAP = res.get("gap", "dp_gap")  # YAMLs older than the --constraint option are DP
        mine = res["raco_dp"] + [res["our_dpsgd_unconstrained"]]
        res["matched_gap"] = {m: matched_gap(mine, pts) for m, pts in res["published"].items()}
        common.write_yaml(args.out, res)
        return
    torch.set_num_threads(1)
    out_path = args.out or str(Path(__file__).parent / "results" / f"fig4_pareto_{args.dataset}.yaml")
    GAP = "dp_gap" if args.constraint == "demographic-parity" else "eo_gap"
    fixed = args.split if args.split in common.SPLITS else int(args.split)
    table = PAPER_SETTINGS if args.paper_protocol and args.dataset in PAPER_SETTINGS else SETTINGS
    cfg = dict((table if GAP == "dp_gap" else EO_SETTINGS)[args.dataset])
    if table is PAPER_SETTINGS and not args.resplit and fixed in ("dpfermi", 100):
        cfg["params"] = SETTINGS[args.dataset]["params"]
    if args.gammas:
        cfg["gammas"] = [float(g) for g in args.gammas.split(",")]
    full = [common.encode(args.dataset, s if args.resplit else fixed) for s in range(args.seeds if args.resplit else 1)]
    if args.paper_protocol:
        masks = [common.paper_folds(sp) for sp in full]
        splits = [common.subset(sp, ~m) for sp, m in zip(full, masks)]
        vals = [(sp["x_train"][torch.as_tensor(m)], sp["y_train"][torch.as_tensor(m)], sp["g_train"][m])
                for sp, m in zip(full, masks)]
    else:
        splits, vals = full, [None] * len(full)
    d = splits[0]

    def data(seed):
        return splits[seed] if args.resplit else d

    def extra(seed):
        v = vals[seed] if args.resplit else vals[0]
        return {"val": v} if v is not None else None

    result = {"figure": "4 Pareto", "dataset": args.dataset, "constraint": args.constraint, "gap": GAP, "commit": common.git_commit(), "epsilon": args.epsilon,
              "delta": 1e-5, "seeds": args.seeds, "iterate": "average",
              "split": "split seed = run seed (0..seeds-1)" if args.resplit else f"fixed split {args.split}",
              "protocol": ("RaCO-DP: train on 7/8 of the train split, validation = StratifiedKFold fold 0"
                           if args.paper_protocol else "train on the whole train split"), "settings": cfg,
              "n_train": int(len(d["y_train"])), "groups": sorted(set(d["g_train"].tolist())),
              "majority_error": float(min(d["y_test"].float().mean(), 1 - d["y_test"].float().mean())),
              # label base rate per group: a test gap a classifier fair on train cannot undo
              "label_base_rate_gap": {
                  part: statistics.fmean(
                      float(max(v) - min(v)) for v in
                      ([float(sp[f"y_{part}"].numpy()[sp[f"g_{part}"] == z].mean()) for z in sorted(set(sp[f"g_{part}"].tolist()))]
                       for sp in splits))
                  for part in ("train", "test")}}

    def mean_point(runs, **extra):
        pt = dict(extra)
        for key in ("error", "dp_gap", "ovr_gap", "eo_gap"):
            vals = [r["average"][key] for r in runs]
            pt[key] = statistics.fmean(vals)
            pt[key + "_sd"] = statistics.stdev(vals) if len(vals) > 1 else 0.0
        if "eval" in runs[0]:
            pt["val"] = {key: statistics.fmean(r["eval"]["val"][key] for r in runs)
                         for key in ("error", "dp_gap", "ovr_gap", "eo_gap")}
        pt["steps"] = runs[0]["steps"]
        pt["epsilon_spent"] = runs[0]["epsilon"]
        return pt

    dpsgd = [common.raco_run(data(s), gamma=None, epsilon=args.epsilon, seed=s, extra_eval=extra(s), **cfg["params"])
             for s in range(args.seeds)]
    result["our_dpsgd_unconstrained"] = mean_point(dpsgd)
    print("dpsgd", result["our_dpsgd_unconstrained"], flush=True)
    ours = []
    for gamma in cfg["gammas"]:
        runs = [common.raco_run(data(s), gamma=gamma, epsilon=args.epsilon, seed=s, constraint=args.constraint,
                                extra_eval=extra(s), **cfg["params"])
                for s in range(args.seeds)]
        ours.append(mean_point(runs, gamma=gamma))
        print("raco", ours[-1], flush=True)
        result["raco_dp"] = ours
        common.write_yaml(out_path, result)
    pub = published(args.dataset, args.epsilon)
    result["published"] = pub
    if not args.no_fairlearn:
        # fairlearn is deterministic given the split: average its points over the splits too
        per_split = [fairlearn_points(data(s), cfg["fairlearn_bounds"]) for s in range(len(splits))]
        result["fairlearn_expgrad_nonprivate"] = [
            {"bound": pts[0]["bound"], **{k: statistics.fmean(p[k] for p in pts) for k in ("error", "dp_gap", "ovr_gap", "eo_gap", "seconds")}}
            for pts in zip(*per_split)]
    methods = {"RaCO-DP (ours)": ours + [result["our_dpsgd_unconstrained"]], **pub}
    if "fairlearn_expgrad_nonprivate" in result:
        methods["fairlearn ExpGrad (non-private)"] = result["fairlearn_expgrad_nonprivate"]
    result["hypervolume"] = {m: common.hypervolume([(p[GAP], p["error"]) for p in pts]) for m, pts in methods.items()}
    dominated = {}
    mine = methods["RaCO-DP (ours)"]          # the gamma grid plus the unconstrained (gamma = inf) point
    for m, pts in pub.items():
        dominated[m] = {"points": len(pts), "dominated_by_ours": sum(
            any(o[GAP] <= p[GAP] and o["error"] <= p["error"] for o in mine) for p in pts)}
    result["published_points_dominated"] = dominated
    result["best_error_at_gap"] = {str(g): min([o["error"] for o in mine if o[GAP] <= g], default=None)
                                   for g in (0.01, 0.02, 0.05, 0.1)}
    result["front"] = front(mine)
    result["matched_gap"] = {m: matched_gap(mine, pts) for m, pts in pub.items()}
    common.write_yaml(out_path, result)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 4))
        ax.plot([p[GAP] for p in ours], [p["error"] for p in ours], "o-", label="RaCO-DP (ours)")
        for m, pts in pub.items():
            ax.plot([p[GAP] for p in pts], [p["error"] for p in pts], "x--", label=m, alpha=0.7)
        if "fairlearn_expgrad_nonprivate" in result:
            pts = result["fairlearn_expgrad_nonprivate"]
            ax.plot([p[GAP] for p in pts], [p["error"] for p in pts], "s:", label="fairlearn (non-private)")
        ax.set_xlabel("test DP gap (max - min selection rate)" if GAP == "dp_gap" else "test equalized-odds gap")
        ax.set_ylabel("test misclassification")
        ax.set_title(f"{args.dataset}, {args.constraint}, epsilon {args.epsilon:g}")
        ax.legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(Path(out_path).with_suffix(".png"), dpi=110)
    except ImportError:
        pass


if __name__ == "__main__":
    main()
