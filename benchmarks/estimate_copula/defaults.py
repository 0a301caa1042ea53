"""estimate-copula at its DEFAULTS, as a new user runs it, against the Gaussian copula and the
pyvinecopulib TLL vine (mBIC, the paper's baseline) on the same split, in one run.

Per table and seed: 80/20 train_test_split(random_state=seed); the train and test rows are
written as CSV and go through the installed command exactly as a user types it:

    cortexkit estimate-copula fit train.csv -o m.st --seed S            (default: auto, --budget 240)
    cortexkit estimate-copula evaluate m.st test.csv --seed S           (default IS: adaptive, both proposals)
    cortexkit estimate-copula fit train.csv --copula gaussian -o g.st   (+ evaluate: the baseline)

Wall clock of each command is measured around the subprocess (start-up included). The vine gets
the same train-only pseudo-observations as the tool (rank/(n+1), random ties seeded; test rows
through the training ECDF) and its held-out mean log copula density.

    python benchmarks/estimate_copula/defaults.py --tables wine,diabetes --seeds 0,1,2 \
        --out benchmarks/estimate_copula/results/defaults_small.yaml
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
DRYBEAN_DROP = ("EquivDiameter", "Eccentricity", "ShapeFactor3")


def load(table: str) -> tuple[np.ndarray, list[str]]:
    """(rows, d) data and column names of a benchmark table."""
    from sklearn import datasets

    if table == "magic":
        names = ["fLength", "fWidth", "fSize", "fConc", "fConc1", "fAsym", "fM3Long", "fM3Trans", "fAlpha", "fDist"]
        return np.genfromtxt(DATA / "copula" / "magic04.data", delimiter=",", usecols=range(10)), names
    if table in ("drybean13", "drybean16"):
        path = DATA / "copula" / "Dry_Bean_Dataset.csv"
        header = path.read_text().splitlines()[0].split(",")[:16]
        x = np.genfromtxt(path, delimiter=",", skip_header=1, usecols=range(16))
        keep = [i for i, h in enumerate(header) if table == "drybean16" or h not in DRYBEAN_DROP]
        return x[:, keep], [header[i] for i in keep]
    loader = {"wine": datasets.load_wine, "diabetes": datasets.load_diabetes,
              "breast_cancer": datasets.load_breast_cancer}[table]
    bunch = loader()
    names = [f"c{j}" for j in range(bunch.data.shape[1])]
    return np.asarray(bunch.data, dtype=np.float64), names


def write_csv(path: Path, x: np.ndarray, names: list[str]) -> None:
    np.savetxt(path, x, delimiter=",", header=",".join(names), comments="", fmt="%.17g")


def command(args: list[str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(["cortexkit", "estimate-copula", *args], cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"cortexkit estimate-copula {' '.join(args)} failed:\n{proc.stderr}")
    return wall, proc.stderr


def vine(train: np.ndarray, test: np.ndarray, seed: int, threads: int) -> dict:
    import pyvinecopulib as pv

    from cortexkit.tools.copula import marginals as mg

    u_train = mg.pseudo_observations(train, "random", np.random.default_rng(seed))
    u_test = mg.fit_ecdf(train).cdf(test)
    controls = pv.FitControlsVinecop(family_set=[pv.BicopFamily.tll], selection_criterion="mbic",
                                     nonparametric_method="constant", num_threads=threads)
    t0 = time.perf_counter()
    cop = pv.Vinecop.from_data(u_train, controls=controls)
    fit_s = time.perf_counter() - t0
    ll = float(np.mean(np.log(cop.pdf(u_test))))
    return {"ll": ll, "fit_seconds": round(fit_s, 1)}


def one(table: str, seed: int, threads: int, budget: float | None, with_vine: bool) -> dict:
    from sklearn.model_selection import train_test_split

    x, names = load(table)
    train, test = train_test_split(x, test_size=0.2, random_state=seed)
    out: dict = {"table": table, "seed": seed, "train_rows": len(train), "test_rows": len(test), "dim": x.shape[1]}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_csv(tmp / "train.csv", train, names)
        write_csv(tmp / "test.csv", test, names)
        extra = ["--budget", str(budget)] if budget else []
        wall, err = command(["fit", "train.csv", "-o", "m.st", "--seed", str(seed), *extra], tmp)
        out["fit_wall_seconds"] = round(wall, 1)
        out["fit_stderr"] = err.strip().splitlines()
        wall, _ = command(["evaluate", "m.st", "test.csv", "--seed", str(seed), "-o", "rep.yaml"], tmp)
        rep = yaml.safe_load((tmp / "rep.yaml").read_text())
        out["evaluate_wall_seconds"] = round(wall, 1)
        info = yaml.safe_load(subprocess.run(["cortexkit", "inspect", "m.st"], cwd=tmp, capture_output=True,
                                             text=True).stdout)["metadata"]["copula.info"]
        info = yaml.safe_load(info) if isinstance(info, str) else info
        out["chosen"] = info.get("chosen")
        out["candidates"] = info.get("candidates")
        out["plan"] = info.get("plan")
        keep = ("ll", "ll_raw", "log_z", "log_z_stderr", "ess_fraction", "is_draws", "ll_trusted", "w2",
                "tau_frobenius", "ks_max", "gaussian_copula_w2")
        out["default"] = {k: rep[k] for k in keep if k in rep}
        if "log_z_by_proposal" in rep:
            out["default"]["log_z_by_proposal"] = rep["log_z_by_proposal"]
        command(["fit", "train.csv", "--copula", "gaussian", "-o", "g.st"], tmp)
        command(["evaluate", "g.st", "test.csv", "--seed", str(seed), "-o", "g.yaml"], tmp)
        out["gaussian"] = {"ll": yaml.safe_load((tmp / "g.yaml").read_text())["ll"]}
    if with_vine:
        out["vine_tll"] = vine(train, test, seed, threads)
    out["default_minus_gaussian"] = out["default"]["ll"] - out["gaussian"]["ll"]
    if with_vine:
        out["default_minus_vine"] = out["default"]["ll"] - out["vine_tll"]["ll"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", default="wine,diabetes")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--threads", type=int, default=1, help="vine threads")
    ap.add_argument("--budget", type=float, default=None, help="fit --budget (default: the tool's)")
    ap.add_argument("--no-vine", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    for table in args.tables.split(","):
        for seed in map(int, args.seeds.split(",")):
            row = one(table, seed, args.threads, args.budget, not args.no_vine)
            rows.append(row)
            print(f"{table} seed {seed}: default {row['default']['ll']:.3f} ({row['chosen']}), gaussian "
                  f"{row['gaussian']['ll']:.3f}, vine {row.get('vine_tll', {}).get('ll', float('nan')):.3f}; fit "
                  f"{row['fit_wall_seconds']} s, evaluate {row['evaluate_wall_seconds']} s", file=sys.stderr, flush=True)
            Path(args.out).write_text(yaml.safe_dump({"command": " ".join(sys.argv), "rows": rows}, sort_keys=False))


if __name__ == "__main__":
    main()
