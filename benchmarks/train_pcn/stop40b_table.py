"""Stop 40b: the block-type gain trial's table from bench YAML files. Per depth: BP, BP + WN
(`fan`), Meta-PCN at `fan` and at `fan-act` (mean ± sd over seeds), the bar max(BP, BP + WN fan)
- 0.5, Meta-PCN fan-act minus the bar, and the paired difference Meta-PCN fan-act - fan (same
seed) ± its standard error.

    python benchmarks/train_pcn/stop40b_table.py benchmarks/train_pcn/study_mnist_rule.yaml
    python benchmarks/train_pcn/stop40b_table.py benchmarks/train_pcn/heldout_patches_mlp.yaml \
        benchmarks/train_pcn/stop40b_patches_mlp_gain.yaml --seeds 0,1,2

Rows repeated across files (same L, method, gain, seed) must agree to the last digit (the runs are
deterministic); a disagreement is printed and the first row kept.
"""

from __future__ import annotations

import argparse
import statistics as st
import sys

import yaml


def ms(values):
    if not values:
        return "-", None
    m = st.mean(values)
    sd = st.stdev(values) if len(values) > 1 else 0.0
    return f"{m:.2f} ± {sd:.2f}" + (f" (n={len(values)})" if len(values) != 3 else ""), m


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--metric", default="final_top1")
    args = p.parse_args(argv)
    seeds = {int(s) for s in args.seeds.split(",")}
    cell: dict = {}
    for f in args.files:
        for r in yaml.safe_load(open(f))["runs"]:
            if r["seed"] not in seeds:
                continue
            gain = r.get("weight_norm_gain") if r["method"] in ("BP+WN", "Meta-PCN") else None
            key = (r["L"], r["method"], gain, r["seed"])
            if key in cell:
                if cell[key] != r[args.metric]:
                    print(f"disagree {key}: {cell[key]} vs {r[args.metric]}", file=sys.stderr)
                continue
            cell[key] = r[args.metric]
    cols = [("BP", None), ("BP+WN", "fan"), ("Meta-PCN", "fan"), ("Meta-PCN", "fan-act")]
    print("| L | BP | BP + WN fan | Meta-PCN fan | Meta-PCN fan-act | bar | fan-act - bar "
          "| fan-act - fan (paired) |")
    print("| --- " * 8 + "|")
    for L in sorted({k[0] for k in cell}):
        texts, means = [], []
        for method, gain in cols:
            text, m = ms([v for (d, me, g, s), v in sorted(cell.items())
                          if d == L and me == method and g == gain])
            texts.append(text)
            means.append(m)
        base = [m for m in means[:2] if m is not None]
        bar = max(base) - 0.5 if base else None
        margin = "-" if bar is None or means[3] is None else (
            f"{means[3] - bar:+.2f} ({'met' if means[3] >= bar else 'missed'})")
        common = sorted(s for s in seeds if (L, "Meta-PCN", "fan", s) in cell
                        and (L, "Meta-PCN", "fan-act", s) in cell)
        diff = [cell[(L, "Meta-PCN", "fan-act", s)] - cell[(L, "Meta-PCN", "fan", s)]
                for s in common]
        paired = "-" if len(diff) < 2 else (
            f"{st.mean(diff):+.2f} ± {st.stdev(diff) / len(diff) ** 0.5:.2f}")
        print(f"| {L} | " + " | ".join(texts) + f" | {'-' if bar is None else f'{bar:.2f}'} | "
              f"{margin} | {paired} |")


if __name__ == "__main__":
    main()
