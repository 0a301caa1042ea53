"""pcn18: the decision table from bench.py files run with --wn-variants pin,cap:0.3,cap:1. Per
config: mean ± sd of final test top-1 for BP, BP + WN pinned, Meta-PCN pinned (today's default)
and Meta-PCN capped with AdamW weight decay lambda (``cap:LAMBDA``); paired differences against BP
and against the pinned default (mean ± SE over the seeds in both); with ``--rule``, the verdict of
pcn18's rule per candidate at that cell:

    cap:L >= max(BP, BP + WN pin) - 0.5  and  cap:L >= Meta-PCN pin - 0.5   (means over the seeds)

(where a file has no BP + WN pin rows, Meta-PCN pin stands for it: the same weights by the
gradient identity); BP + WN cap:LAMBDA rows, where run, give the largest per-seed |Meta-PCN -
BP + WN| (the identity in float32). Rows without ``weight_decay`` (files before pcn18) have decay 0.

    python benchmarks/train_pcn/pcn18_table.py --rule benchmarks/train_pcn/pcn18_patches_L5.yaml
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import yaml


def name_of(r):
    if r["method"] in ("BP", "PC", "iPC"):
        return r["method"]
    decay = r.get("weight_decay") or 0.0
    return f"{r['method']} {r.get('weight_norm_mode') or 'pin'}" + (f":{decay:g}" if decay else "")


def rows_of(paths):
    """{config: {(name, seed): final top-1}} (gain fan, rate 1e-3 only)."""
    table = defaultdict(dict)
    for path in paths:
        for r in yaml.safe_load(open(path))["runs"]:
            if r.get("weight_norm_gain") not in (None, "fan") or abs(r.get("lr", 1e-3) - 1e-3) > 1e-12:
                continue
            table[r["config"]][(name_of(r), r["seed"])] = r["final_top1"]
    return table


def paired(a, b):
    seeds = sorted(set(a) & set(b))
    d = np.array([a[s] - b[s] for s in seeds])
    if not len(d):
        return "-"
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return f"{d.mean():+.2f} ± {se:.2f}"


def identity(a, b):
    """The largest per-seed |a - b| (Meta-PCN and BP + WN: equal in exact arithmetic)."""
    seeds = sorted(set(a) & set(b))
    return f"{max(abs(a[s] - b[s]) for s in seeds):.2f}" if seeds else "-"


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
    every = sorted({n for cells in table.values() for (n, _) in cells})
    cands = [n for n in every if n.startswith("Meta-PCN cap")]
    names = [n for n in ("BP", "BP+WN pin", "Meta-PCN pin") if n in every] + cands
    twins = [n for n in every if n.startswith("BP+WN cap")]
    names += twins
    diffs = [f"{c[9:]} - BP" for c in cands] + [f"{c[9:]} - pin" for c in cands] + ["pin - BP"]
    diffs += [f"max abs(Meta {c[9:]} - BP+WN {c[9:]})" for c in cands if f"BP+WN {c[9:]}" in twins]
    print("| config | seeds | " + " | ".join(names) + " | " + " | ".join(diffs) + " |"
          + (" rule |" if args.rule else ""))
    print("|" + " --- |" * (len(names) + len(diffs) + 2 + args.rule))
    for config, cells in sorted(table.items(), key=lambda kv: (len(kv[0]), kv[0])):
        col = {n: {s: v for (m, s), v in cells.items() if m == n} for n in names}
        seeds = sorted({s for (_, s) in cells})
        pin, bp = col["Meta-PCN pin"], col["BP"]
        line = (f"| {config} | {seeds[0]}-{seeds[-1]} ({len(seeds)}) | "
                + " | ".join(stat(col[n]) for n in names) + " | "
                + " | ".join([paired(col[c], bp) for c in cands] + [paired(col[c], pin) for c in cands]
                             + [paired(pin, bp)] + [identity(col[c], col[f"BP+WN {c[9:]}"])
                                                    for c in cands if f"BP+WN {c[9:]}" in twins])
                + " |")
        if args.rule:
            mean = {n: np.mean(list(c.values())) for n, c in col.items() if c}
            wn_pin = mean["BP+WN pin"] if "BP+WN pin" in mean else mean["Meta-PCN pin"]
            bar = max(mean["BP"], wn_pin) - 0.5
            verdicts = []
            for c in cands:
                ok = mean[c] >= bar and mean[c] >= mean["Meta-PCN pin"] - 0.5
                verdicts.append(f"{c[9:]} {'met' if ok else 'missed'} ({mean[c]:.2f})")
            line += (f" bar {bar:.2f}, pin - 0.5 = {mean['Meta-PCN pin'] - 0.5:.2f}: "
                     + "; ".join(verdicts) + " |")
        print(line)


if __name__ == "__main__":
    main()
