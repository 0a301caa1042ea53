"""pcn14 B: the decision table from bench.py files. Per (config, L): mean ± sd of final test top-1
for BP, Meta-PCN `fan` (= BP + WN `fan` by the gradient identity) and Meta-PCN at --cand, the
paired differences (mean ± SE over seeds present in both) and the bar
cand >= max(BP, BP + WN `fan`) - 0.5 (and cand >= fan - 0.5 with --guard). BP may come from
--bp FILE (an earlier file with the same command) when the files given hold none.

    python benchmarks/train_pcn/pcn14_table.py --cand fan-free-readout \
        benchmarks/train_pcn/pcn14_patches_L5.yaml benchmarks/train_pcn/pcn14_patches_L16.yaml
    python benchmarks/train_pcn/pcn14_table.py --cand fan-free-readout --guard \
        --bp benchmarks/train_pcn/study_mnist_rule.yaml benchmarks/train_pcn/pcn14_mnist.yaml
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import yaml


def rows_of(paths, seeds=None):
    table = defaultdict(dict)   # (config) -> {(name, seed): top1}
    for path in paths:
        for r in yaml.safe_load(open(path))["runs"]:
            if seeds is not None and r["seed"] not in seeds:
                continue
            gain = r.get("weight_norm_gain")
            name = "BP" if r["method"] == "BP" else (
                "BP+WN" if r["method"] == "BP+WN" and gain == "fan" else
                f"{r['method']}:{gain}")
            table[r["config"]][(name, r["seed"])] = r["final_top1"]
    return table


def stats(values):
    v = np.asarray(values, float)
    return v.mean(), (v.std(ddof=1) if len(v) > 1 else 0.0)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--cand", required=True)
    p.add_argument("--bp", default=None, help="earlier file with the BP (and BP + WN) rows")
    p.add_argument("--guard", action="store_true", help="also require cand >= fan - 0.5")
    args = p.parse_args(argv)
    table = rows_of(args.files)
    earlier = rows_of([args.bp]) if args.bp else {}
    print(f"| config | seeds | BP | BP + WN = Meta-PCN `fan` | Meta-PCN `{args.cand}` | cand - BP | "
          f"cand - `fan` | `fan` - BP | bar |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for config, cells in table.items():
        cand = {s: v for (n, s), v in cells.items() if n == f"Meta-PCN:{args.cand}"}
        fan = {s: v for (n, s), v in cells.items() if n == "Meta-PCN:fan"}
        bp = {s: v for (n, s), v in cells.items() if n == "BP"}
        if not bp and config in earlier:
            bp = {s: v for (n, s), v in earlier[config].items() if n == "BP" and s in cand}
        seeds = sorted(set(cand) & set(fan) & set(bp)) if bp else sorted(set(cand) & set(fan))
        if not seeds:
            continue
        mb = stats([bp[s] for s in seeds]) if bp else (float("nan"), 0)
        mf, mc = stats([fan[s] for s in seeds]), stats([cand[s] for s in seeds])

        def paired(a, b):
            d = np.array([a[s] - b[s] for s in seeds])
            return d.mean(), (d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0)

        dcb = paired(cand, bp) if bp else (float("nan"), 0)
        dcf, dfb = paired(cand, fan), (paired(fan, bp) if bp else (float("nan"), 0))
        ok = mc[0] >= max(mb[0] if bp else -1, mf[0]) - 0.5
        if args.guard:
            ok = ok and mc[0] >= mf[0] - 0.5
        verdicts.append(ok)
        print(f"| {config} | {seeds[0]}-{seeds[-1]} (n={len(seeds)}) | {mb[0]:.2f} ± {mb[1]:.2f} | "
              f"{mf[0]:.2f} ± {mf[1]:.2f} | {mc[0]:.2f} ± {mc[1]:.2f} | {dcb[0]:+.2f} ± {dcb[1]:.2f} | "
              f"{dcf[0]:+.2f} ± {dcf[1]:.2f} | {dfb[0]:+.2f} ± {dfb[1]:.2f} | "
              f"{'met' if ok else '**missed**'} |")
    print(f"\nall cells met: {bool(verdicts) and all(verdicts)} ({sum(verdicts)} of {len(verdicts)})")


if __name__ == "__main__":
    main()
