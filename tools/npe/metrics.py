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


def sbc_summary(ranks: torch.Tensor, n_samples: int, names: list[str], bins: int = 10) -> dict:
    """Uniformity of SBC ranks per parameter: KS test of (rank + U) / (L + 1) against U(0, 1),
    chi-square over ``bins`` equal bins, and the mean normalised rank (0.5 if unbiased)."""
    from scipy import stats

    rng = np.random.default_rng(0)
    out = {}
    r = ranks.numpy().astype(float)
    for j, name in enumerate(names):
        u = (r[:, j] + rng.uniform(size=r.shape[0])) / (n_samples + 1)
        ks = stats.kstest(u, "uniform")
        counts = np.histogram(u, bins=bins, range=(0, 1))[0]
        chi = stats.chisquare(counts)
        out[name] = {"ks_stat": float(ks.statistic), "ks_pvalue": float(ks.pvalue),
                     "chi2_pvalue": float(chi.pvalue), "mean_rank": float(u.mean()),
                     "histogram": [int(c) for c in counts]}
    return out


def expected_coverage(log_q_true: torch.Tensor, log_q_samples: torch.Tensor,
                      levels=(0.5, 0.8, 0.9, 0.95)) -> dict:
    """HPD coverage: for each pair, the posterior mass above q(theta_true) is estimated as the
    fraction of samples with higher density; a calibrated posterior puts theta_true inside the
    level-alpha HPD region with probability alpha. log_q_true (n,), log_q_samples (n, L)."""
    mass_above = (log_q_samples > log_q_true[:, None]).double().mean(1)
    return {f"{a:g}": float((mass_above < a).double().mean()) for a in levels}
