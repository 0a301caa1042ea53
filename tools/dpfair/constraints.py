"""Rate constraints over a global partition of the data (RaCO-DP, Section 3).

Every record lies in exactly one *cell* q of the partition: the product of the levels of every
attribute any constraint uses (sensitive columns, and the label for equalized odds / FNR).  A
*rate term* r is the soft rate of class ``k_r`` on a union of cells ``I_r``:

    P_r(H) = sum_{q in I_r} H[q, k_r] / sum_{q in I_r} sum_k H[q, k]

for a histogram ``H`` of shape ``(cells, classes)``.  Constraint j is affine in the terms:

    Gamma_j = constant_j + sum_r coef[j, r] * P_r  <=  gamma_j.

The dual gradient is ``Gamma(H_noisy) - gamma``; the per-example primal term is
``R(x) = sum_k W[cell(x), k] * softmax(tau * logits(x))_k`` with
``W[q, k] = sum_r (lambda @ coef)_r * [q in I_r] * [k_r = k] / den_r`` and ``den_r`` the noisy
count of ``I_r`` (post-processing of the released histogram).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import torch

# Denominators below this are treated as this (noisy counts can be tiny or negative).
DENOMINATOR_FLOOR = 1.0


def _sort_levels(values) -> list[str]:
    uniq = sorted(set(str(v) for v in values))
    try:
        return sorted(uniq, key=float)
    except ValueError:
        return uniq


@dataclass
class Partition:
    """Product partition over ``attributes``; cell index is mixed-radix, first attribute slowest."""
    attributes: list[str]
    levels: list[list[str]]

    @classmethod
    def from_columns(cls, attributes: list[str], columns: dict) -> "Partition":
        return cls(list(attributes), [_sort_levels(columns[a]) for a in attributes])

    @property
    def n_cells(self) -> int:
        return int(np.prod([len(l) for l in self.levels])) if self.levels else 1

    def cell_tuples(self) -> list[tuple[str, ...]]:
        return list(itertools.product(*self.levels))

    def cell_index(self, columns: dict) -> np.ndarray:
        """(n,) int64 cell of each record; raises ValueError on a level never seen in training."""
        n = len(next(iter(columns.values()))) if columns else 0
        idx = np.zeros(n, dtype=np.int64)
        for attr, levels in zip(self.attributes, self.levels):
            lookup = {v: i for i, v in enumerate(levels)}
            vals = [str(v) for v in columns[attr]]
            bad = sorted(set(v for v in vals if v not in lookup))
            if bad:
                raise ValueError(f"column {attr!r} has values not seen in training: {bad[:5]}")
            idx = idx * len(levels) + np.array([lookup[v] for v in vals], dtype=np.int64)
        return idx

    def select(self, where: dict) -> np.ndarray:
        """(cells,) bool mask of the cells matching ``where`` (attribute -> value or list of values)."""
        for attr in where:
            if attr not in self.attributes:
                raise ValueError(f"constraint refers to attribute {attr!r}, not in the partition {self.attributes}")
        mask = []
        for cell in self.cell_tuples():
            ok = True
            for attr, level in zip(self.attributes, cell):
                if attr in where:
                    want = where[attr]
                    want = [str(w) for w in want] if isinstance(want, (list, tuple)) else [str(want)]
                    for w in want:
                        if w not in self.levels[self.attributes.index(attr)]:
                            raise ValueError(f"constraint refers to {attr}={w!r}, not a level of {attr} "
                                             f"(levels: {self.levels[self.attributes.index(attr)]})")
                    ok = ok and level in want
            mask.append(ok)
        return np.array(mask, dtype=bool)

    def to_dict(self) -> dict:
        return {"attributes": self.attributes, "levels": self.levels}

    @classmethod
    def from_dict(cls, d: dict) -> "Partition":
        return cls(list(d["attributes"]), [list(l) for l in d["levels"]])


@dataclass
class RateConstraints:
    """J affine constraints on R soft rates over a partition with Q cells and K classes."""
    partition: Partition
    n_classes: int
    term_cells: np.ndarray      # (R, Q) bool
    term_class: np.ndarray      # (R,) int64
    coef: np.ndarray            # (J, R) float64
    constant: np.ndarray        # (J,) float64
    gamma: np.ndarray           # (J,) float64
    names: list[str] = field(default_factory=list)
    kind: str = "custom"

    def __post_init__(self):
        self.term_cells = np.asarray(self.term_cells, dtype=bool)
        self.term_class = np.asarray(self.term_class, dtype=np.int64)
        self.coef = np.asarray(self.coef, dtype=np.float64).reshape(len(self.constant), len(self.term_class))
        self.constant = np.asarray(self.constant, dtype=np.float64)
        self.gamma = np.asarray(self.gamma, dtype=np.float64)
        if self.term_cells.shape != (len(self.term_class), self.partition.n_cells):
            raise ValueError("term_cells must be (terms, cells)")
        if (self.term_class < 0).any() or (self.term_class >= self.n_classes).any():
            raise ValueError("term class out of range")
        if not self.term_cells.any(axis=1).all():
            raise ValueError("a constraint term selects no cell")
        self._torch_cache: dict = {}

    @property
    def n_constraints(self) -> int:
        return len(self.constant)

    def _t(self, device, dtype):
        key = (str(device), dtype)
        if key not in self._torch_cache:
            self._torch_cache[key] = (
                torch.as_tensor(self.term_cells, device=device, dtype=dtype),             # (R, Q)
                torch.nn.functional.one_hot(torch.as_tensor(self.term_class, device=device),
                                            self.n_classes).to(dtype),                     # (R, K)
                torch.as_tensor(self.coef, device=device, dtype=dtype),                   # (J, R)
                torch.as_tensor(self.constant, device=device, dtype=dtype),
                torch.as_tensor(self.gamma, device=device, dtype=dtype))
        return self._torch_cache[key]

    def denominators(self, hist: torch.Tensor) -> torch.Tensor:
        """(R,) counts of each term's cell union from ``hist`` (Q, K), floored at DENOMINATOR_FLOOR."""
        cells, _, _, _, _ = self._t(hist.device, hist.dtype)
        return (cells @ hist.sum(dim=1)).clamp_min(DENOMINATOR_FLOOR)

    def rates(self, hist: torch.Tensor) -> torch.Tensor:
        """(R,) rate estimates from a (possibly noisy) histogram (Q, K), clipped to [0, 1]."""
        cells, cls, _, _, _ = self._t(hist.device, hist.dtype)
        num = ((cells @ hist) * cls).sum(dim=1)
        return (num / self.denominators(hist)).clamp(0.0, 1.0)

    def values(self, hist: torch.Tensor) -> torch.Tensor:
        """(J,) constraint values Gamma_j(hist)."""
        _, _, coef, const, _ = self._t(hist.device, hist.dtype)
        return const + coef @ self.rates(hist)

    def violations(self, hist: torch.Tensor) -> torch.Tensor:
        """(J,) Gamma_j - gamma_j (positive: violated)."""
        _, _, _, _, gamma = self._t(hist.device, hist.dtype)
        return self.values(hist) - gamma

    def cell_weights(self, dual: torch.Tensor, hist: torch.Tensor) -> torch.Tensor:
        """(Q, K) weights W so that the per-example regularizer is sum_k W[cell(x), k] p_k(x)."""
        cells, cls, coef, _, _ = self._t(hist.device, hist.dtype)
        per_term = (dual.to(hist.dtype) @ coef) / self.denominators(hist)        # (R,)
        return cells.T @ (per_term[:, None] * cls)                               # (Q, K)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "partition": self.partition.to_dict(), "n_classes": int(self.n_classes),
                "term_cells": self.term_cells.astype(int).tolist(), "term_class": self.term_class.tolist(),
                "coef": self.coef.tolist(), "constant": self.constant.tolist(), "gamma": self.gamma.tolist(),
                "names": list(self.names)}

    @classmethod
    def from_dict(cls, d: dict) -> "RateConstraints":
        return cls(Partition.from_dict(d["partition"]), int(d["n_classes"]), np.array(d["term_cells"], dtype=bool),
                   np.array(d["term_class"]), np.array(d["coef"]), np.array(d["constant"]),
                   np.array(d["gamma"]), list(d["names"]), d.get("kind", "custom"))


class _Builder:
    def __init__(self, partition: Partition, n_classes: int):
        self.partition, self.n_classes = partition, n_classes
        self.terms: dict[tuple, int] = {}
        self.rows: list[tuple[float, dict[int, float], float, str]] = []

    def term(self, mask: np.ndarray, k: int) -> int:
        key = (tuple(mask.tolist()), int(k))
        return self.terms.setdefault(key, len(self.terms))

    def add(self, name: str, gamma: float, parts: list[tuple[np.ndarray, int, float]], constant: float = 0.0):
        row: dict[int, float] = {}
        for mask, k, w in parts:
            r = self.term(mask, k)
            row[r] = row.get(r, 0.0) + float(w)
        self.rows.append((float(constant), row, float(gamma), name))

    def build(self, kind: str) -> RateConstraints:
        keys = sorted(self.terms, key=self.terms.get)
        term_cells = np.array([k[0] for k in keys], dtype=bool).reshape(len(keys), self.partition.n_cells)
        term_class = np.array([k[1] for k in keys], dtype=np.int64)
        coef = np.zeros((len(self.rows), len(keys)))
        for j, (_, row, _, _) in enumerate(self.rows):
            for r, w in row.items():
                coef[j, r] = w
        return RateConstraints(self.partition, self.n_classes, term_cells, term_class, coef,
                               np.array([r[0] for r in self.rows]), np.array([r[2] for r in self.rows]),
                               [r[3] for r in self.rows], kind)


def demographic_parity(sensitive: list[str], columns: dict, classes: list[str], gamma: float) -> RateConstraints:
    """One-vs-rest: P_k(D_z) - P_k(D_{not z}) <= gamma for every class k and group z (J = K * Z).

    Groups z are the cells of the product of the ``sensitive`` columns.
    """
    part = Partition.from_columns(sensitive, columns)
    b = _Builder(part, len(classes))
    for z, cell in enumerate(part.cell_tuples()):
        mask = np.zeros(part.n_cells, dtype=bool)
        mask[z] = True
        if mask.all():
            raise ValueError(f"sensitive column(s) {sensitive} have a single group: nothing to constrain")
        for k, c in enumerate(classes):
            b.add(f"P({c}|{'&'.join(cell)}) - P({c}|not {'&'.join(cell)})", gamma, [(mask, k, 1.0), (~mask, k, -1.0)])
    return b.build("demographic-parity")


def equalized_odds(label: str, sensitive: list[str], columns: dict, classes: list[str], gamma: float) -> RateConstraints:
    """P_k(D_{y,z}) - P_k(D_{y,not z}) <= gamma for every class k, label y, group z (J = K * K * Z)."""
    part = Partition.from_columns([label] + list(sensitive), columns)
    if part.levels[0] != list(classes):
        part.levels[0] = list(classes)
    b = _Builder(part, len(classes))
    groups = list(itertools.product(*part.levels[1:]))
    if len(groups) < 2:
        raise ValueError(f"sensitive column(s) {sensitive} have a single group: nothing to constrain")
    tuples = part.cell_tuples()
    for y in classes:
        for g in groups:
            same = np.array([t[0] == y and t[1:] == g for t in tuples])
            rest = np.array([t[0] == y and t[1:] != g for t in tuples])
            for k, c in enumerate(classes):
                b.add(f"P({c}|y={y},{'&'.join(g)}) - P({c}|y={y},not {'&'.join(g)})", gamma,
                      [(same, k, 1.0), (rest, k, -1.0)])
    return b.build("equalized-odds")


def false_negative_rate(label: str, columns: dict, classes: list[str], gamma: float,
                        positive: str | None = None) -> RateConstraints:
    """1 - P_pos(D_{y=pos}) <= gamma (one constraint; cells = true label)."""
    positive = classes[-1] if positive is None else str(positive)
    if positive not in classes:
        raise ValueError(f"positive label {positive!r} is not one of the labels {classes}")
    part = Partition([label], [list(classes)])
    b = _Builder(part, len(classes))
    k = classes.index(positive)
    mask = np.array([t[0] == positive for t in part.cell_tuples()])
    b.add(f"FNR(y={positive})", gamma, [(mask, k, -1.0)], constant=1.0)
    return b.build("fnr")


def from_spec(spec: dict, label: str, columns: dict, classes: list[str], default_gamma: float) -> RateConstraints:
    """Constraints from a YAML spec::

        partition: [sex, race]            # attributes (columns); the label column may be named
        constraints:
          - name: female-vs-male           # optional
            gamma: 0.05                    # optional, default --gamma
            constant: 0.0                  # optional
            terms:
              - {where: {sex: Female}, class: "Yes", weight: 1.0}
              - {where: {sex: Male}, class: "Yes", weight: -1.0}

    ``where`` selects the union of cells whose attributes match (a value or a list of values;
    attributes left out match anything); ``class`` is a label value.
    """
    if not isinstance(spec, dict) or "partition" not in spec or "constraints" not in spec:
        raise ValueError("constraint spec must be a mapping with keys 'partition' and 'constraints'")
    attrs = spec["partition"]
    if isinstance(attrs, str):
        attrs = [attrs]
    for a in attrs:
        if a not in columns:
            raise ValueError(f"constraint spec partition names column {a!r}, not in the table")
    part = Partition.from_columns(attrs, columns)
    if label in attrs:
        part.levels[attrs.index(label)] = list(classes)
    b = _Builder(part, len(classes))
    if not spec["constraints"]:
        raise ValueError("constraint spec has no constraints")
    for j, c in enumerate(spec["constraints"]):
        parts = []
        for t in c.get("terms", []):
            cls = str(t["class"])
            if cls not in classes:
                raise ValueError(f"constraint term class {cls!r} is not one of the labels {classes}")
            mask = part.select(t.get("where", {}) or {})
            if not mask.any():
                raise ValueError(f"constraint {c.get('name', j)}: term {t} selects no cell")
            parts.append((mask, classes.index(cls), float(t.get("weight", 1.0))))
        if not parts:
            raise ValueError(f"constraint {c.get('name', j)} has no terms")
        b.add(str(c.get("name", f"c{j}")), float(c.get("gamma", default_gamma)), parts, float(c.get("constant", 0.0)))
    return b.build("custom")


def soft_histogram(probs: torch.Tensor, cells: torch.Tensor, n_cells: int) -> torch.Tensor:
    """(Q, K) histogram: H[q, k] = sum over records in cell q of probs[:, k]. probs (n, K), cells (n,)."""
    hist = torch.zeros(n_cells, probs.shape[1], dtype=probs.dtype, device=probs.device)
    return hist.index_add_(0, cells, probs)


def _denominators(constraints: RateConstraints, cell_counts: np.ndarray,
                  laplace_b: float | None) -> list[tuple[int, float, float]]:
    """(term index, records in the rate's denominator, Laplace std of its noisy count) per rate
    term; empty without histogram noise."""
    if laplace_b is None or math.isinf(laplace_b):
        return []
    return [(r, float(cell_counts[constraints.term_cells[r]].sum()),
             math.sqrt(2.0 * int(constraints.term_cells[r].sum()) * constraints.n_classes) / laplace_b)
            for r in range(len(constraints.term_class))]


def small_groups(constraints: RateConstraints, cell_counts: np.ndarray, sampling_rate: float,
                 laplace_b: float | None) -> list[tuple[str, float, float]]:
    """(group names, expected batch count, Laplace std of its noisy count) of every rate denominator
    whose expected count per batch is below its own noise std (its rates are mostly noise)."""
    out = []
    for r, count, noise_std in _denominators(constraints, cell_counts, laplace_b):
        expected = sampling_rate * count
        if expected < noise_std:
            names = [" & ".join(t) for t, m in zip(constraints.partition.cell_tuples(), constraints.term_cells[r]) if m]
            item = (f"{names[:3]}{'...' if len(names) > 3 else ''}", expected, noise_std)
            if item not in out:
                out.append(item)
    return out


def group_noise_rate(constraints: RateConstraints, cell_counts: np.ndarray, laplace_b: float | None) -> float:
    """The sampling rate at which the smallest rate denominator's expected batch count equals the
    Laplace std of its noisy count (``small_groups`` flags rates below it); 0 without histogram noise."""
    return max((math.inf if count == 0 else noise_std / count
                for _, count, noise_std in _denominators(constraints, cell_counts, laplace_b)), default=0.0)


def feasible(constraints: RateConstraints, cell_counts: np.ndarray) -> bool:
    """Whether some classifier that predicts class k in cell q with probability p[q, k] meets every
    constraint on data with these (cells,) counts: a linear program (rates are linear in p, their
    denominators are counts). Real classifiers cannot see every cell (e.g. the label's), so this is a
    relaxation: False proves the constraint set infeasible on the data."""
    from scipy.optimize import linprog

    q, k = constraints.partition.n_cells, constraints.n_classes
    counts = np.asarray(cell_counts, dtype=np.float64)
    # P_r = sum_{q in I_r} n_q p[q, k_r] / sum_{q in I_r} n_q, as a (R, Q*K) matrix acting on p.ravel()
    rates = np.zeros((len(constraints.term_class), q * k))
    for r, (mask, cls) in enumerate(zip(constraints.term_cells, constraints.term_class)):
        den = counts[mask].sum()
        if den > 0:
            rates[r, np.flatnonzero(mask) * k + cls] = counts[mask] / den
    a_ub = constraints.coef @ rates
    b_ub = constraints.gamma - constraints.constant
    a_eq = np.kron(np.eye(q), np.ones((1, k)))
    res = linprog(np.zeros(q * k), A_ub=a_ub, b_ub=b_ub + 1e-9, A_eq=a_eq, b_eq=np.ones(q), bounds=(0, 1),
                  method="highs")
    return res.status != 2


def expected_cell_warnings(constraints: RateConstraints, cell_counts: np.ndarray, sampling_rate: float,
                           laplace_b: float | None) -> list[str]:
    """Warnings for rate denominators whose expected batch count is small against the Laplace noise.

    A term's denominator sums |I_r| * K noisy cells, each with Laplace std sqrt(2)/b.
    """
    out = []
    if laplace_b is None or math.isinf(laplace_b):
        return out
    for r in range(len(constraints.term_class)):
        n_cells = int(constraints.term_cells[r].sum())
        expected = sampling_rate * float(cell_counts[constraints.term_cells[r]].sum())
        noise_std = math.sqrt(2.0 * n_cells * constraints.n_classes) / laplace_b
        if expected < 10.0 * noise_std / math.sqrt(2.0):
            names = [" & ".join(t) for t, m in zip(constraints.partition.cell_tuples(), constraints.term_cells[r]) if m]
            item = (f"{names[:3]}{'...' if len(names) > 3 else ''}", expected, noise_std)
            if item not in out:
                out.append(item)
    if not out:
        return []
    # one cause, one warning: every group whose batch count is small against its noise, in one line
    shown = "; ".join(f"{g} {e:.1f} +/- {s:.1f}" for g, e, s in out[:4]) + ("; ..." if len(out) > 4 else "")
    return [f"{len(out)} group(s) have small expected noisy counts per batch against the Laplace noise "
            f"({shown}): their rates are noisy (an expected count should be at least 7 times its noise "
            "std); raise the batch size or --laplace-b, or merge small groups"]
