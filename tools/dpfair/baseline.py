"""The first-try baselines, scored privately on rows held out of training.

DESIGN's rule for every fit verb: score the field's first-try baseline on a validation split of the
training data and warn when the method loses. For dp-fairness-train the baselines are the majority
class and (for sweeps) the unconstrained private model. The held-out rows are private data too, so
what is read from them is one Laplace release: the histogram over (group g, true class y, model's
class k[, unconstrained model's class u]) of the held-out rows. Each row lands in exactly one cell
(L1 sensitivity 1 under add/remove), so with Laplace(1 / validation_epsilon) noise per cell the
release is pure validation_epsilon-DP; the ledger composes it with training (accounting.one_off_epsilons).
Everything reported (accuracies, the majority class, selection rates, the gap) is post-processing of
that one noisy histogram. Non-private runs read the exact histogram.

Held-out rows are drawn by an independent coin per row (probability ``fraction``) from a seeded stream,
so the split does not depend on any other record.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

VALIDATION_STREAM = 0xB1        # seeds the held-out split apart from every other stream
NOISE_STREAM = 0xB2             # seeds the histogram's Laplace noise
MIN_HELD_OUT = 30               # fewer expected held-out rows than this: no split, no check


def holdout_mask(n: int, fraction: float, seed: int = 0) -> np.ndarray | None:
    """(n,) bool, True for the rows held out of training; None when ``fraction`` is 0 or the table is too
    small to hold out MIN_HELD_OUT rows (expected)."""
    if not (fraction > 0) or fraction * n < MIN_HELD_OUT:
        return None
    rng = np.random.default_rng([VALIDATION_STREAM, int(seed) % 2 ** 63])
    mask = rng.random(n) < fraction
    if mask.all() or not mask.any():
        return None
    return mask


@dataclass
class Scored:
    """What the release says about one model: accuracy, per-group selection rates, demographic-parity gap."""
    accuracy: float
    rates: dict                 # group -> [P(class k | group)] over classes
    dp_gap: float


def noisy_histogram(groups: np.ndarray, y: np.ndarray, predictions: list[np.ndarray], n_groups: int,
                    n_classes: int, epsilon: float, seed: int = 0) -> np.ndarray:
    """(n_groups, n_classes, n_classes[, n_classes]) counts of (group, true class, predicted classes...)
    over the held-out rows, plus Laplace(1 / epsilon) i.i.d. per cell (exact when epsilon is inf).

    groups, y: (m,) int64; predictions: one (m,) int64 array per model."""
    shape = (n_groups, n_classes) + (n_classes,) * len(predictions)
    flat = np.ravel_multi_index((groups, y, *predictions), shape)
    hist = np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64).reshape(shape)
    if math.isfinite(epsilon):
        rng = np.random.default_rng([NOISE_STREAM, int(seed) % 2 ** 63])
        hist = hist + rng.laplace(0.0, 1.0 / epsilon, hist.shape)
    return hist


def score(hist: np.ndarray, model: int, group_names: list[str]) -> Scored:
    """Accuracy, selection rates and DP gap of prediction axis ``model`` (0: first model) of ``hist``."""
    axes = tuple(range(hist.ndim))
    keep = (0, 1, 2 + model)
    joint = hist.sum(axis=tuple(a for a in axes if a not in keep))          # (G, Y, K)
    total = max(joint.sum(), 1.0)
    accuracy = float(np.clip(np.trace(joint.sum(axis=0)) / total, 0.0, 1.0))
    per_group = joint.sum(axis=1)                                            # (G, K)
    counts = np.maximum(per_group.sum(axis=1, keepdims=True), 1.0)
    rates = np.clip(per_group / counts, 0.0, 1.0)
    dp_gap = float((rates.max(axis=0) - rates.min(axis=0)).max()) if len(rates) > 1 else 0.0
    return Scored(accuracy, {g: [round(float(r), 4) for r in row] for g, row in zip(group_names, rates)}, dp_gap)


def majority(hist: np.ndarray) -> tuple[int, float]:
    """(class, accuracy) of the majority class read from the histogram's true-class marginal."""
    by_class = hist.sum(axis=tuple(a for a in range(hist.ndim) if a != 1))
    k = int(np.argmax(by_class))
    return k, float(np.clip(by_class[k] / max(by_class.sum(), 1.0), 0.0, 1.0))


def accuracy_sd(hist: np.ndarray, epsilon: float, rows: int) -> float:
    """Noise std of an accuracy read from ``hist``: the sum of G*K (diagonal) cells of Laplace(1/eps)
    (std sqrt(2)/eps each) over ``rows`` held-out rows; 0 for an exact histogram."""
    if not math.isfinite(epsilon):
        return 0.0
    cells = hist.shape[0] * hist.shape[1] * int(np.prod(hist.shape[3:]))
    return math.sqrt(2.0 * cells) / epsilon / max(rows, 1)
