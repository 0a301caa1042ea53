"""Table encoding: string columns -> float features (z-scored numerics, one-hot categoricals).

The encoding (column order, numeric means/stds, categorical levels, label classes) is fitted on the
training table and stored in the model, so ``predict`` encodes new tables identically.  Note: these
statistics are computed from the training data without privacy (as in the paper's pipeline).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

MISSING = {"", "?", "na", "nan", "null", "none"}
MAX_CLASSES = 50


def _is_missing(v: str) -> bool:
    return v.strip().lower() in MISSING


def _parse_float(v: str) -> float | None:
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def check_missing(columns: dict[str, list[str]], names: list[str], source: str | None = None) -> None:
    """ValueError naming the first column with missing values (empty, '?', NA, NaN, null), and the
    table's file when ``source`` is given."""
    for c in names:
        bad = [i for i, v in enumerate(columns[c]) if _is_missing(str(v))]
        if bad:
            where = f"{source}: " if source else ""
            raise ValueError(f"{where}column {c!r} has {len(bad)} missing value(s) (first at data row {bad[0] + 1}); "
                             f"drop or impute those rows first")


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def _check_infinite(cells: list, vals: list, column: str, source: str | None) -> None:
    """A column whose cells are all numbers but some infinite: an error, not a categorical column."""
    bad = [i for i, v in enumerate(vals) if v is None]
    if bad and all(_is_number(str(cells[i])) for i in bad):
        where = f"{source}: " if source else ""
        raise ValueError(f"{where}column {column!r}, data row {bad[0] + 1}: {str(cells[bad[0]]).strip()!r} is "
                         f"not a finite number ({len(bad)} such cell(s)); fix or drop those rows, or "
                         f"declare the column categorical")


def label_classes(values: list[str], column: str) -> list[str]:
    """Sorted class names of a binary/categorical label; ValueError for continuous labels."""
    uniq = sorted(set(str(v).strip() for v in values))
    nums = [_parse_float(v) for v in uniq]
    if all(x is not None for x in nums):
        if any(abs(x - round(x)) > 0 for x in nums):
            raise ValueError(f"label column {column!r} holds non-integer numbers ({uniq[:4]}...): labels must be "
                             f"binary or categorical, not continuous")
        uniq = sorted(uniq, key=float)
    if len(uniq) < 2:
        raise ValueError(f"label column {column!r} has a single value {uniq}: need at least two classes")
    if len(uniq) > MAX_CLASSES:
        raise ValueError(f"label column {column!r} has {len(uniq)} distinct values: labels must be binary or "
                         f"categorical (at most {MAX_CLASSES} classes)")
    return uniq


@dataclass
class TableEncoder:
    columns: list[str]                               # feature columns, in order
    numeric: dict[str, list[float]] = field(default_factory=dict)      # col -> [mean, std]
    categorical: dict[str, list[str]] = field(default_factory=dict)    # col -> levels
    standardize: bool = True

    @classmethod
    def fit(cls, table: dict[str, list[str]], columns: list[str], standardize: bool = True,
            categorical: Iterable[str] = (), source: str | None = None) -> "TableEncoder":
        """Numeric columns are z-scored unless named in ``categorical`` (numerically coded categories,
        one-hot encoded); a column with any cell that is not a number is categorical. A numeric
        column with an infinite cell (``inf``, ``1e400``) is a ValueError naming the row, not a
        category of its own."""
        check_missing(table, columns, source)
        enc = cls(list(columns), standardize=standardize)
        declared = set(categorical)
        for c in columns:
            vals = [_parse_float(str(v)) for v in table[c]]
            if c not in declared:
                _check_infinite(table[c], vals, c, source)
            if c not in declared and all(v is not None for v in vals):
                x = np.array(vals, dtype=np.float64)
                std = float(x.std()) if standardize else 1.0
                enc.numeric[c] = [float(x.mean()) if standardize else 0.0, std if std > 0 else 1.0]
            else:
                enc.categorical[c] = sorted(set(str(v).strip() for v in table[c]))
        return enc

    @property
    def feature_names(self) -> list[str]:
        out = []
        for c in self.columns:
            if c in self.numeric:
                out.append(c)
            else:
                out += [f"{c}={lvl}" for lvl in self.categorical[c]]
        return out

    def transform(self, table: dict[str, list[str]]) -> tuple[np.ndarray, list[str]]:
        """(n, features) float32 and warnings (unseen categorical levels encode as all zeros)."""
        missing_cols = [c for c in self.columns if c not in table]
        if missing_cols:
            raise ValueError(f"table lacks the feature column(s) {missing_cols} the model was trained on")
        check_missing(table, self.columns)
        blocks, warnings = [], []
        for c in self.columns:
            if c in self.numeric:
                vals = [_parse_float(str(v)) for v in table[c]]
                bad = [i for i, v in enumerate(vals) if v is None]
                if bad:
                    raise ValueError(f"column {c!r} is numeric in the model but row {bad[0] + 1} holds "
                                     f"{table[c][bad[0]]!r}")
                mean, std = self.numeric[c]
                blocks.append(((np.array(vals) - mean) / std)[:, None])
            else:
                levels = {lvl: i for i, lvl in enumerate(self.categorical[c])}
                block = np.zeros((len(table[c]), len(levels)))
                unseen = set()
                for i, v in enumerate(table[c]):
                    j = levels.get(str(v).strip())
                    if j is None:
                        unseen.add(str(v).strip())
                    else:
                        block[i, j] = 1.0
                if unseen:
                    warnings.append(f"column {c!r}: level(s) {sorted(unseen)[:5]} not seen in training, encoded as all zeros")
                blocks.append(block)
        n = len(next(iter(table.values())))
        x = np.concatenate(blocks, axis=1) if blocks else np.zeros((n, 0))
        return x.astype(np.float32), warnings

    def to_dict(self) -> dict:
        return {"columns": self.columns, "numeric": self.numeric, "categorical": self.categorical,
                "standardize": self.standardize}

    @classmethod
    def from_dict(cls, d: dict) -> "TableEncoder":
        return cls(list(d["columns"]), {k: list(v) for k, v in d["numeric"].items()},
                   {k: list(v) for k, v in d["categorical"].items()}, bool(d.get("standardize", True)))
