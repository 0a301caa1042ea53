"""Markdown table of benchmarks/estimate_copula/results/*.yaml (one row per dataset x model x seed);
``summarise.py seeds FILE.yaml``: mean +- sd over the seeds of one multi-seed run, per model."""

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
        for row in yaml.safe_load(path.read_text()).get("rows", []):   # reflection_speed has none
            if "error" in row:
                print(f"| {path.stem} | {row['model']} | error: {row['error']} |")
                continue
            print(f"| {row['dataset']} | {row['model']} | " + " | ".join(fmt(row.get(c)) for c, _ in COLS) + " |")


def seeds(path: str) -> None:
    import numpy as np

    rows = [r for r in yaml.safe_load(Path(path).read_text())["rows"] if "error" not in r]
    keys = [("ll", "LL (norm.)"), ("ess_fraction", "ESS frac"), ("w2", "W2"), ("tau_frobenius", "tau-Frob"),
            ("ks_max", "max KS"), ("fit_seconds", "fit s")]
    print("| model | seeds | " + " | ".join(k[1] for k in keys) + " |")
    print("|" + "---|" * (len(keys) + 2))
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        cells = []
        for k, _ in keys:
            v = np.array([r[k] for r in mine if r.get(k) is not None], dtype=float)
            cells.append(f"{v.mean():.3f} +- {v.std(ddof=1):.3f}" if len(v) > 1 else fmt(v[0] if len(v) else None))
        print(f"| {model} | {','.join(str(r['seed']) for r in mine)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["seeds"]:
        seeds(sys.argv[2])
    else:
        main(*sys.argv[1:])
