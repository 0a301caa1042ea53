"""Markdown table of benchmarks/estimate_copula/results/*.yaml (one row per dataset x model x seed)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

COLS = [("ll", "LL (norm.)"), ("ll_raw", "raw"), ("log_z", "log Z"), ("ess_fraction", "ESS frac"),
        ("true_ll", "true"), ("w2", "W2"), ("tau_frobenius", "tau-Frob"), ("ks_max", "max KS"),
        ("fit_seconds", "fit s"), ("steps", "steps"), ("score_seconds_per_1k", "score s/1k"),
        ("sample_seconds_per_1k", "sample s/1k"), ("peak_rss_mib", "peak MiB")]


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e-2 and v != 0 else f"{v:.3f}" if abs(v) < 100 else f"{v:.0f}"
    return str(v)


def main(folder: str = "benchmarks/estimate_copula/results") -> None:
    print("| data | model | " + " | ".join(c[1] for c in COLS) + " |")
    print("|" + "---|" * (len(COLS) + 2))
    for path in sorted(Path(folder).glob("*.yaml")):
        for row in yaml.safe_load(path.read_text())["rows"]:
            if "error" in row:
                print(f"| {path.stem} | {row['model']} | error: {row['error']} |")
                continue
            print(f"| {row['dataset']} | {row['model']} | " + " | ".join(fmt(row.get(c)) for c, _ in COLS) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
