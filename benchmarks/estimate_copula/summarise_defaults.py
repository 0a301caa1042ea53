"""Markdown table of benchmarks/estimate_copula/defaults.py outputs (one row per table and seed,
then the mean over seeds per table).

    python benchmarks/estimate_copula/summarise_defaults.py benchmarks/estimate_copula/results/defaults_*.yaml
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
import yaml


def main(paths: list[str]) -> None:
    rows = [r for p in paths for r in yaml.safe_load(open(p))["rows"]]
    print("| table | seed | n train x d | default LL | kept | Gaussian | TLL vine | default - Gaussian "
          "| default - vine | ESS frac | fit wall s | steps per CDC | evaluate wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    by = defaultdict(list)
    for r in rows:
        vine = r.get("vine_tll", {}).get("ll", float("nan"))
        steps = "/".join(str(v["steps"]) for k, v in (r.get("candidates") or {}).items() if "steps" in v)
        d = r["default"]
        print(f"| {r['table']} | {r['seed']} | {r['train_rows']} x {r['dim']} | {d['ll']:.3f} | {r['chosen']} | "
              f"{r['gaussian']['ll']:.3f} | {vine:.3f} | {d['ll'] - r['gaussian']['ll']:+.3f} | "
              f"{d['ll'] - vine:+.3f} | {d.get('ess_fraction', 1):.3g} | {r['fit_wall_seconds']} | {steps} | "
              f"{r['evaluate_wall_seconds']} |")
        by[r["table"]].append((d["ll"], r["gaussian"]["ll"], vine, r["fit_wall_seconds"], r["evaluate_wall_seconds"]))
    print()
    print("| table | seeds | default LL | Gaussian | TLL vine | worst default - Gaussian | max fit wall s | max evaluate wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for table, vals in by.items():
        a = np.array(vals)
        print(f"| {table} | {len(a)} | {a[:, 0].mean():.3f} +- {a[:, 0].std():.3f} | {a[:, 1].mean():.3f} | "
              f"{np.nanmean(a[:, 2]):.3f} | {(a[:, 0] - a[:, 1]).min():+.3f} | {a[:, 3].max():.0f} | {a[:, 4].max():.0f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
