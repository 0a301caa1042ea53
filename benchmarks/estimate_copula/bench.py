"""estimate-copula benchmark: our copulas (cortexkit.tools.copula, the code behind the CLI) and the
pyvinecopulib TLL vine on the SAME pseudo-observations, in one run.

Protocol (per dataset and seed): 80/20 train_test_split(random_state=seed); pseudo-observations
u = rank/(n+1) of the training split (random ties, seeded); test rows through the training
split's interpolated ECDF. Every model gets exactly these u. Metrics: held-out mean log copula
density (the CDC normalised by importance-sampled log Z, with ESS), W2 on the Gaussian scale
(exact assignment, 2000 samples vs 2000 test rows, fixed subset), Kendall-tau Frobenius error,
max per-dimension KS of the samples against U(0,1), fit time, log-density time per 1k rows,
sampling time per 1k, peak RSS. Each model runs in its own subprocess so the peak RSS is its own.

    python benchmarks/estimate_copula/bench.py run --dataset magic --seeds 0 \
        --models gaussian,vine,cdc,reflection --cdc-seconds 480 --out benchmarks/estimate_copula/results/magic.yaml
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
DRYBEAN_DROP = ("EquivDiameter", "Eccentricity", "ShapeFactor3")
SYNTHETIC = {
    "clayton2": ("clayton:theta=3", 2),
    "student8": ("student:rho=0.6,nu=4", 8),
    "gumbel5": ("gumbel:theta=2", 5),
    "mixture2": ("0.5*clayton:theta=3+0.5*gumbel:theta=3,survival", 2),
}


def load(dataset: str, seed: int):
    """(train, test) data arrays and the truth (closed-form copula or None)."""
    from sklearn.model_selection import train_test_split

    truth = None
    if dataset == "magic":
        x = np.genfromtxt(DATA / "copula" / "magic04.data", delimiter=",", usecols=range(10))
    elif dataset in ("drybean16", "drybean13"):
        path = DATA / "copula" / "Dry_Bean_Dataset.csv"
        header = path.read_text().splitlines()[0].split(",")[:16]
        x = np.genfromtxt(path, delimiter=",", skip_header=1, usecols=range(16))
        if dataset == "drybean13":
            x = x[:, [i for i, h in enumerate(header) if h not in DRYBEAN_DROP]]
    elif dataset == "digits":
        from sklearn.datasets import load_digits

        x = load_digits().data + np.random.default_rng(seed).normal(0, 0.1, (1797, 64))
    elif dataset in SYNTHETIC:
        from cortexkit.tools.copula.closed_form import parse_spec

        spec, dim = SYNTHETIC[dataset]
        truth = parse_spec(spec, dim)
        x = truth.sample(20000, np.random.default_rng(1000 + seed))  # 16k / 4k
    else:
        raise SystemExit(f"unknown dataset {dataset}")
    train, test = train_test_split(x, test_size=0.2, random_state=seed)
    return train, test, truth


def pseudo(dataset: str, seed: int):
    from cortexkit.tools.copula import marginals as mg

    train, test, truth = load(dataset, seed)
    u_train = mg.pseudo_observations(train, "random", np.random.default_rng(seed))
    u_test = mg.fit_ecdf(train).cdf(test)
    true_ll = float(truth.logpdf(test).mean()) if truth is not None else None  # at the true u
    return u_train, u_test, true_ll


def sample_metrics(u_s: np.ndarray, u_test: np.ndarray, seed: int) -> dict:
    from cortexkit.tools.copula import marginals as mg
    from cortexkit.tools.copula import metrics

    m = min(len(u_s), len(u_test))
    pick = np.random.default_rng(seed).permutation(len(u_test))[:m]
    u_s = u_s[:m]
    return {"w2": metrics.w2_gaussian(mg.to_gaussian(u_s), mg.to_gaussian(u_test[pick])),
            "tau_frobenius": metrics.tau_frobenius(u_s, u_test[pick]),
            "ks_max": float(metrics.ks_uniform(u_s).max())}


def run_one(args) -> dict:
    import torch

    torch.set_num_threads(1)
    u_train, u_test, true_ll = pseudo(args.dataset, args.seed)
    n_s = min(2000, len(u_test))
    out = {"dataset": args.dataset, "seed": args.seed, "model": args.model, "n_train": len(u_train),
           "n_test": len(u_test), "dim": u_train.shape[1]}
    if args.model == "vine":
        import pyvinecopulib as pv

        mult = 7.33 if args.dataset == "digits" else 1.0
        controls = pv.FitControlsVinecop(family_set=[pv.BicopFamily.tll], selection_criterion="mbic",
                                         nonparametric_method="constant", nonparametric_mult=mult,
                                         num_threads=1)
        t0 = time.perf_counter()
        cop = pv.Vinecop.from_data(u_train, controls=controls)
        out["fit_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ll = np.log(cop.pdf(u_test))
        out["score_seconds_per_1k"] = (time.perf_counter() - t0) / len(u_test) * 1000
        out["ll"] = float(np.mean(ll))
        out["vine_settings"] = f"TLL, mBIC, constant, mult {mult}"
        t0 = time.perf_counter()
        u_s = cop.simulate(n_s, seeds=[args.seed])
        out["sample_seconds_per_1k"] = (time.perf_counter() - t0) / n_s * 1000
    else:
        from cortexkit.tools.copula.cdc import CDCConfig
        from cortexkit.tools.copula.model import FitConfig, fit_model
        from cortexkit.tools.copula.reflection import ReflectionConfig

        model_name = args.model
        guide = "none"
        if model_name == "cdc-guided":
            model_name, guide = "cdc", "gaussian"
        cdc = CDCConfig(hidden=args.hidden, depth=args.depth, lr=args.lr, batch_size=args.batch,
                        steps=10**7, time_limit=args.cdc_seconds, guide=guide)
        refl = ReflectionConfig(hidden=args.hidden, layers=args.depth, lr=args.lr * 2, batch_size=args.batch // 2,
                                steps=10**7, time_limit=args.reflection_seconds)
        config = FitConfig(copula=model_name, cdc=cdc, reflection=refl)
        gen = torch.Generator().manual_seed(args.seed)
        model = fit_model(u_train, [f"c{j}" for j in range(u_train.shape[1])], config, generator=gen,
                          rng=np.random.default_rng(args.seed))
        out["fit_seconds"] = model.fit_seconds
        out["steps"] = model.info.get("steps")
        if model_name in ("cdc", "reflection"):
            out["config"] = {"hidden": args.hidden, "depth": args.depth, "lr": args.lr if model_name == "cdc"
                             else args.lr * 2, "batch": args.batch if model_name == "cdc" else args.batch // 2,
                             "time_limit_s": args.cdc_seconds if model_name == "cdc" else args.reflection_seconds,
                             "guide": guide}
        if model.has_density:
            from cortexkit.tools.copula import marginals as mg

            z = mg.to_gaussian(model.marginals.cdf(u_test))
            t0 = time.perf_counter()
            raw = model.log_copula_z(z)
            out["score_seconds_per_1k"] = (time.perf_counter() - t0) / len(u_test) * 1000
            for prop in args.proposals.split(","):   # the first gives the headline ll / log_z
                t0 = time.perf_counter()
                lz = model.log_z(args.is_draws, np.random.default_rng(10 + args.seed), proposal=prop)
                entry = {"log_z": lz.log_z, "log_z_stderr": lz.stderr, "ess_fraction": lz.ess_fraction,
                         "is_draws": lz.draws, "ll": float(raw.mean()) - lz.log_z,
                         "ll_trusted": bool(lz.trusted), "seconds": time.perf_counter() - t0}
                out.setdefault("log_z_by_proposal", {})[prop] = entry
                if "ll" not in out:
                    out.update({"ll_raw": float(raw.mean()), "proposal": prop,
                                **{k: v for k, v in entry.items() if k != "seconds"}})
                if lz.proposal == "exact":
                    break
            out["min_eigenvalue_corr"] = model.info["min_eigenvalue_corr"]
        t0 = time.perf_counter()
        u_s = model.sample(n_s, torch.Generator().manual_seed(100 + args.seed), "cube")
        out["sample_seconds_per_1k"] = (time.perf_counter() - t0) / n_s * 1000
    out.update(sample_metrics(np.asarray(u_s), u_test, args.seed))
    if true_ll is not None:
        out["true_ll"] = true_ll
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("action", choices=["run", "one"])
    p.add_argument("--dataset", required=True)
    p.add_argument("--seeds", default="0")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="gaussian")
    p.add_argument("--models", default="gaussian,vine,cdc,reflection")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--cdc-seconds", type=float, default=480)
    p.add_argument("--reflection-seconds", type=float, default=240)
    p.add_argument("--is-draws", type=int, default=1_000_000)
    p.add_argument("--proposals", default="issue,samples", help="log Z proposals, the first is the headline")
    p.add_argument("--timeout", type=float, default=1200)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.action == "one":
        print(json.dumps(run_one(args)))
        return
    rows = []
    passthrough = ["--dataset", args.dataset, "--hidden", str(args.hidden), "--depth", str(args.depth),
                   "--lr", str(args.lr), "--batch", str(args.batch), "--cdc-seconds", str(args.cdc_seconds),
                   "--reflection-seconds", str(args.reflection_seconds), "--is-draws", str(args.is_draws),
                   "--proposals", args.proposals]
    for seed in [int(s) for s in args.seeds.split(",")]:
        for model in args.models.split(","):
            cmd = [sys.executable, __file__, "one", "--seed", str(seed), "--model", model, *passthrough]
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                row = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else \
                    {"model": model, "seed": seed, "error": proc.stderr.strip().splitlines()[-1:]}
            except subprocess.TimeoutExpired:
                row = {"model": model, "seed": seed, "error": f"timeout after {args.timeout} s"}
            row["wall_seconds"] = time.perf_counter() - t0
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
            summary = {"dataset": args.dataset, "command": " ".join(sys.argv), "rows": rows}
            text = yaml.safe_dump(summary, sort_keys=False)
            if args.out:   # after every model, so a time-boxed run keeps what it finished
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
