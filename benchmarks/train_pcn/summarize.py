"""Tables of mean +- sd over seeds from bench.py YAML files (rows keyed by L, method, gain).

    python benchmarks/train_pcn/summarize.py benchmarks/train_pcn/mnist.yaml \
        benchmarks/train_pcn/mnist_seeds12*.yaml
    python benchmarks/train_pcn/summarize.py --by-gain benchmarks/train_pcn/mnist_gain*.yaml

Rows repeated across files (same L, method, gain, seed, init) must agree to the last digit
(the runs are deterministic); the first is kept and a disagreement is reported.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np
import yaml


def fmt(values, digits=2):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    if any(np.isinf(values)):
        return f"inf ({sum(map(np.isinf, values))} of {len(values)})"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f}"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--by-gain", action="store_true", help="one column per (method, gain)")
    p.add_argument("--field", default="final_top1")
    args = p.parse_args(argv)
    seen = {}
    for f in args.files:
        doc = yaml.safe_load(open(f))
        for r in doc["runs"]:
            key = (doc.get("init", "default"), r["L"], r["method"], r.get("weight_norm_gain")
                   if r["method"] in ("BP+WN", "Meta-PCN") else None, r["seed"])
            if key[3] is None and r["method"] in ("BP+WN", "Meta-PCN"):
                key = key[:3] + (1.0,) + key[4:]
            if key in seen:
                if seen[key][args.field] != r[args.field]:
                    print(f"disagree {key}: {seen[key][args.field]} vs {r[args.field]}",
                          file=sys.stderr)
                continue
            seen[key] = r
    cells = defaultdict(list)
    for (init, L, method, gain, seed), r in seen.items():
        col = f"{method} g={gain if isinstance(gain, str) else format(gain, 'g')}" if (args.by_gain and gain is not None) else method
        cells[(init, L, col)].append((seed, r))
    inits = sorted({k[0] for k in cells})
    for init in inits:
        cols = []
        for k in cells:
            if k[0] == init and k[2] not in cols:
                cols.append(k[2])
        depths = sorted({k[1] for k in cells if k[0] == init})
        print(f"\ninit {init}, {args.field} (mean ± sd over seeds; n = seeds)\n")
        print("| L | " + " | ".join(cols) + " |")
        print("| --- " * (len(cols) + 1) + "|")
        for L in depths:
            row = []
            for c in cols:
                got = cells.get((init, L, c), [])
                vals = [r[args.field] for _, r in got]
                vals = [float("inf") if v == ".inf" else v for v in vals]
                row.append(fmt(vals) + (f" (n={len(vals)})" if got and len(vals) != 3 else ""))
            print(f"| {L} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
