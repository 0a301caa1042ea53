"""Posterior-quality metrics: C2ST (random forest as in the MF-NPE paper, MLP as in sbibm), MMD,
NLTP, and simulation-based calibration (SBC) for tasks without reference posteriors.

C2ST: both sample sets z-scored with the first set's mean and (unbiased) std, 5-fold shuffled
KFold (random_state = seed), mean held-out accuracy of a classifier telling them apart;
0.5 = indistinguishable, 1.0 = disjoint. RF: sklearn ``RandomForestClassifier(random_state=seed)``
defaults (sbi's ``c2st``, used by the paper). MLP: ``MLPClassifier`` relu, hidden (10 d, 10 d), adam,
max_iter 10000 (sbibm's ``c2st``).
"""
from __future__ import annotations

import math

import numpy as np
import torch


def _sklearn():
    try:
        import sklearn  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise RuntimeError("C2ST needs scikit-learn: pip install 'cortexkit[npe]'") from err


def c2st(x: torch.Tensor, y: torch.Tensor, classifier: str = "rf", seed: int = 1, n_folds: int = 5) -> float:
    """Classifier two-sample test accuracy between x (n, d) and y (m, d)."""
    _sklearn()
    from sklearn.model_selection import KFold, cross_val_score

    x, y = x.double(), y.double()
    mean, std = x.mean(0), x.std(0)
    std = torch.where(std < 1e-14, torch.ones_like(std), std)
    x, y = ((x - mean) / std).numpy(), ((y - mean) / std).numpy()
    if classifier == "rf":
        from sklearn.ensemble import RandomForestClassifier

        clf = RandomForestClassifier(random_state=seed)
    elif classifier == "mlp":
        from sklearn.neural_network import MLPClassifier

        d = x.shape[1]
        clf = MLPClassifier(activation="relu", hidden_layer_sizes=(10 * d, 10 * d), max_iter=10000,
                            solver="adam", random_state=seed)
    else:
        raise ValueError(f"unknown C2ST classifier {classifier!r}; use rf or mlp")
    data = np.concatenate([x, y])
    target = np.concatenate([np.zeros(x.shape[0]), np.ones(y.shape[0])])
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=seed)
    return float(np.mean(cross_val_score(clf, data, target, cv=folds, scoring="accuracy")))


def median_bandwidth(x: torch.Tensor, y: torch.Tensor, max_points: int = 1000, generator=None) -> float:
    """Median of the nonzero pairwise distances among at most ``max_points`` pooled samples."""
    z = torch.cat([x, y]).double()
    idx = torch.randperm(z.shape[0], generator=generator)[:max_points]
    d = torch.cdist(z[idx], z[idx])
    return float(d[d > 0].median())


def mmd2(x: torch.Tensor, y: torch.Tensor, bandwidth: float | None = None, generator=None) -> float:
    """Biased MMD^2 with a Gaussian kernel exp(-|a-b|^2 / (2 s^2)); s = median heuristic by default."""
    x, y = x.double(), y.double()
    s = bandwidth if bandwidth is not None else median_bandwidth(x, y, generator=generator)

    def kmean(a, b):
        total = 0.0
        for i in range(0, a.shape[0], 4096):
            total += torch.exp(-torch.cdist(a[i:i + 4096], b) ** 2 / (2 * s * s)).sum().item()
        return total / (a.shape[0] * b.shape[0])

    return kmean(x, x) + kmean(y, y) - 2 * kmean(x, y)


def mean_ci95(values) -> dict:
    """{mean, ci95 (1.96 sd / sqrt n), std, n} of a list of numbers (the paper's summary)."""
    v = np.asarray(list(values), dtype=float)
    n = v.size
    sd = float(v.std(ddof=1)) if n > 1 else 0.0
    return {"mean": float(v.mean()), "ci95": 1.96 * sd / math.sqrt(n) if n > 1 else 0.0, "std": sd, "n": int(n)}


def sbc_ranks(theta_true: torch.Tensor, samples: torch.Tensor) -> torch.Tensor:
    """SBC ranks: theta_true (n, d), posterior samples (n, L, d) -> (n, d) int64 in [0, L]."""
    return (samples < theta_true[:, None, :]).sum(1)


def sbc_summary(ranks: torch.Tensor, n_samples: int, names: list[str], bins: int = 10, alpha: float = 0.05) -> dict:
    """Uniformity of SBC ranks per parameter: KS test of u = (rank + U) / (L + 1) against U(0, 1),
    chi-square over ``bins`` equal bins, the mean normalised rank (0.5 if unbiased) and the shape of
    the rank histogram.

    Shape: under calibration E[u] = 1/2 and Var[u] = 1/12; with n pairs the standard errors are
    sqrt(1/(12 n)) for the mean and sqrt(1/(180 n)) for the variance ((mu_4 - sigma^4) / n with
    mu_4 = 1/80). ``dispersion_z`` > 0 means ranks pile at both ends (U-shaped: the true value often
    falls outside the posterior's bulk, so the posterior is too narrow: over-confident); < 0 means a
    hump in the middle (too wide: under-confident). ``bias_z`` < 0 means low ranks (the samples lie
    above the true value: the posterior overestimates), > 0 the reverse.

    A parameter is ``uniform`` unless the KS or the chi-square test rejects at ``alpha`` / (2 d)
    (Bonferroni over both tests and the d parameters); a rejected one is labelled by the larger of
    |dispersion_z| and |bias_z|."""
    from scipy import stats

    rng = np.random.default_rng(0)
    out = {}
    r = ranks.numpy().astype(float)
    n = r.shape[0]
    level = alpha / (2 * max(1, len(names)))
    for j, name in enumerate(names):
        u = (r[:, j] + rng.uniform(size=n)) / (n_samples + 1)
        ks = stats.kstest(u, "uniform")
        counts = np.histogram(u, bins=bins, range=(0, 1))[0]
        chi = stats.chisquare(counts)
        bias_z = float((u.mean() - 0.5) / math.sqrt(1 / (12 * n)))
        dispersion_z = float((u.var() - 1 / 12) / math.sqrt(1 / (180 * n)))
        uniform = bool(ks.pvalue >= level and chi.pvalue >= level)
        out[name] = {"ks_stat": float(ks.statistic), "ks_pvalue": float(ks.pvalue),
                     "chi2_pvalue": float(chi.pvalue), "mean_rank": float(u.mean()),
                     "bias_z": bias_z, "dispersion_z": dispersion_z, "uniform": uniform,
                     "shape": "uniform" if uniform else _rank_shape(bias_z, dispersion_z),
                     "histogram": [int(c) for c in counts]}
    return out


SHAPES = {
    "u-shaped": "over-confident (posterior too narrow: ranks pile at both ends)",
    "hump": "under-confident (posterior too wide: ranks gather in the middle)",
    "low": "biased (posterior overestimates: ranks pile at the low end)",
    "high": "biased (posterior underestimates: ranks pile at the high end)",
}


def _rank_shape(bias_z: float, dispersion_z: float) -> str:
    if abs(dispersion_z) >= abs(bias_z):
        return "u-shaped" if dispersion_z > 0 else "hump"
    return "low" if bias_z < 0 else "high"


def sbc_verdict(parameters: dict, alpha: float = 0.05) -> dict:
    """The overall statement of an :func:`sbc_summary`: ``calibrated`` when every parameter's ranks
    pass, else ``miscalibrated`` with the parameters grouped by what their histogram shows."""
    bad = {name: p["shape"] for name, p in parameters.items() if not p["uniform"]}
    findings = {}
    for name, shape in bad.items():
        findings.setdefault(shape, []).append(name)
    text = "; ".join(f"{SHAPES[shape]}: {', '.join(names)}" for shape, names in findings.items())
    return {"verdict": "miscalibrated" if bad else "calibrated", "alpha": alpha,
            "test": f"KS and chi-square per parameter at alpha / (2 d) = {alpha / (2 * max(1, len(parameters))):.3g}",
            "over_confident": findings.get("u-shaped", []), "under_confident": findings.get("hump", []),
            "biased": findings.get("low", []) + findings.get("high", []),
            "summary": text or "every parameter's ranks are uniform"}


def expected_coverage(log_q_true: torch.Tensor, log_q_samples: torch.Tensor,
                      levels=(0.5, 0.8, 0.9, 0.95)) -> dict:
    """HPD coverage: for each pair, the posterior mass above q(theta_true) is estimated as the
    fraction of samples with higher density; a calibrated posterior puts theta_true inside the
    level-alpha HPD region with probability alpha. log_q_true (n,), log_q_samples (n, L)."""
    mass_above = (log_q_samples > log_q_true[:, None]).double().mean(1)
    return {f"{a:g}": float((mass_above < a).double().mean()) for a in levels}
