"""Evaluation metrics: accuracy and group-fairness gaps on hard predictions, constraint violations."""
from __future__ import annotations

import numpy as np
import torch

from .constraints import RateConstraints, soft_histogram


def _rates(pred: np.ndarray, mask_rows: np.ndarray, n_classes: int) -> np.ndarray | None:
    if mask_rows.sum() == 0:
        return None
    return np.bincount(pred[mask_rows], minlength=n_classes) / mask_rows.sum()


def fairness_gaps(pred: np.ndarray, labels: np.ndarray, groups: np.ndarray, n_classes: int) -> dict:
    """Gaps of hard predictions ``pred`` (n,) across groups (n,) (any hashable ids).

    dp_gap: max over classes k of max_z P(yhat=k|z) - min_z P(yhat=k|z) (binary: fairlearn
    demographic_parity_difference).  ovr_gap: max over k, z of |P(yhat=k|z) - P(yhat=k|not z)|.
    eo_gap: max over true y and class k of max_z - min_z P(yhat=k|y,z) (binary: fairlearn
    equalized_odds_difference).  Empty groups are skipped.
    """
    pred, labels, groups = np.asarray(pred), np.asarray(labels), np.asarray(groups)
    ids = sorted(set(groups.tolist()), key=str)
    per_group = {}
    for z in ids:
        r = _rates(pred, groups == z, n_classes)
        if r is not None:
            per_group[z] = r
    sel = np.array(list(per_group.values()))           # (Z, K)
    dp_gap = float((sel.max(axis=0) - sel.min(axis=0)).max()) if len(sel) > 1 else 0.0
    ovr = 0.0
    for z in ids:
        a, b = _rates(pred, groups == z, n_classes), _rates(pred, groups != z, n_classes)
        if a is not None and b is not None:
            ovr = max(ovr, float(np.abs(a - b).max()))
    eo = 0.0
    for y in range(n_classes):
        rows = [r for z in ids if (r := _rates(pred, (groups == z) & (labels == y), n_classes)) is not None]
        if len(rows) > 1:
            rows = np.array(rows)
            eo = max(eo, float((rows.max(axis=0) - rows.min(axis=0)).max()))
    return {"dp_gap": dp_gap, "ovr_gap": ovr, "eo_gap": eo,
            "selection_rates": {str(z): [float(v) for v in r] for z, r in per_group.items()}}


def constraint_report(constraints: RateConstraints, logits: torch.Tensor, cells: torch.Tensor, temperature: float) -> dict:
    """Exact (noise-free) constraint values on a data set, soft (softmax(tau * logits)) and hard (argmax)."""
    q = constraints.partition.n_cells
    soft = torch.softmax(temperature * logits.to(torch.float64), dim=1)
    hard = torch.nn.functional.one_hot(logits.argmax(dim=1), logits.shape[1]).to(torch.float64)
    v_soft = constraints.violations(soft_histogram(soft, cells, q))
    v_hard = constraints.violations(soft_histogram(hard, cells, q))
    return {
        "max_violation_soft": float(v_soft.clamp_min(0).max()),
        "max_violation_hard": float(v_hard.clamp_min(0).max()),
        "constraints": [{"name": n, "gamma": float(g), "value_soft": float(vs + g), "value_hard": float(vh + g)}
                        for n, g, vs, vh in zip(constraints.names, constraints.gamma, v_soft, v_hard)],
    }
