"""pcn17: the decision table from bench.py files run with --wn-modes. Per config: mean ± sd of
final test top-1 for BP, BP + WN pinned, Meta-PCN pinned (today's default) and Meta-PCN capped
(and BP + WN capped where run); paired differences (mean ± SE over the seeds in both); the
largest |Meta-PCN cap - BP + WN cap| (the gradient identity in float32); with ``--rule``, the
verdict of pcn17's rule at that cell:

    cap >= max(BP, BP + WN pin) - 0.5  and  cap >= Meta-PCN pin - 0.5   (means over the seeds)

(BP + WN pinned is Meta-PCN pinned's weights by the gradient identity; where a file has no
BP + WN pin rows, Meta-PCN pin stands for it.) Rows without ``weight_norm_mode`` (files before
pcn17) are pinned.

    python benchmarks/train_pcn/pcn17_table.py --rule benchmarks/train_pcn/pcn17_patches_L5.yaml \
        benchmarks/train_pcn/pcn17_patches_L5_bpwn.yaml
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import yaml


def rows_of(paths):
    """{config: {(name, seed): final top-1}}; name BP, BP+WN pin|cap, Meta-PCN pin|cap (gain fan,
    rate 1e-3 only)."""
    table = defaultdict(dict)
    for path in paths:
        for r in yaml.safe_load(open(path))["runs"]:
            if r.get("weight_norm_gain") not in (None, "fan") or abs(r.get("lr", 1e-3) - 1e-3) > 1e-12:
                continue
            name = r["method"] if r["method"] in ("BP", "PC", "iPC") else \
                f"{r['method']} {r.get('weight_norm_mode') or 'pin'}"
            table[r["config"]][(name, r["seed"])] = r["final_top1"]
    return table


def paired(a, b):
    seeds = sorted(set(a) & set(b))
    d = np.array([a[s] - b[s] for s in seeds])
    if not len(d):
        return "-"
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return f"{d.mean():+.2f} ± {se:.2f}"


def stat(col):
    v = np.array(list(col.values()))
    if not len(v):
        return "-"
    return f"{v.mean():.2f} ± {v.std(ddof=1):.2f}" if len(v) > 1 else f"{v.mean():.2f}"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--rule", action="store_true", help="print the rule's verdict per config")
    args = p.parse_args(argv)
    table = rows_of(args.files)
    names = ["BP", "BP+WN pin", "Meta-PCN pin", "Meta-PCN cap", "BP+WN cap"]
    print("| config | seeds | " + " | ".join(names) + " | cap - BP | cap - pin | pin - BP "
          "| max abs(Meta cap - BP+WN cap) |" + (" rule |" if args.rule else ""))
    print("|" + " --- |" * (len(names) + 6 + args.rule))
    for config, cells in sorted(table.items(), key=lambda kv: (len(kv[0]), kv[0])):
        col = {n: {s: v for (m, s), v in cells.items() if m == n} for n in names}
        seeds = sorted({s for (_, s) in cells})
        cap, pin, bp = col["Meta-PCN cap"], col["Meta-PCN pin"], col["BP"]
        both = sorted(set(col["Meta-PCN cap"]) & set(col["BP+WN cap"]))
        ident = (f"{max(abs(cap[s] - col['BP+WN cap'][s]) for s in both):.2f}" if both else "-")
        line = (f"| {config} | {seeds[0]}-{seeds[-1]} ({len(seeds)}) | "
                + " | ".join(stat(col[n]) for n in names)
                + f" | {paired(cap, bp)} | {paired(cap, pin)} | {paired(pin, bp)} | {ident} |")
        if args.rule:
            mean = {n: np.mean(list(c.values())) for n, c in col.items() if c}
            wn_pin = mean.get("BP+WN pin", mean.get("Meta-PCN pin"))
            bar = max(mean["BP"], wn_pin) - 0.5
            ok = mean["Meta-PCN cap"] >= bar and mean["Meta-PCN cap"] >= mean["Meta-PCN pin"] - 0.5
            line += (f" {'met' if ok else 'missed'} (cap {mean['Meta-PCN cap']:.2f} vs bar "
                     f"{bar:.2f}, pin - 0.5 = {mean['Meta-PCN pin'] - 0.5:.2f}) |")
        print(line)


if __name__ == "__main__":
    main()
