"""pcn16: the decision table from bench.py files run with --wn-lr-scales. Per (config, L): mean ±
sd of final test top-1 for BP, Meta-PCN@1 (today's default, AdamW 1e-3) and, per candidate factor
k, Meta-PCN@k and BP + WN@k (rate k x 1e-3); paired differences (mean ± SE over the seeds in
both); the largest |Meta-PCN@k - BP + WN@k| (the gradient identity); and the rule's verdict:

- ``--rule bar`` (patches L = 5): Meta-PCN@k >= max(BP, BP + WN@k, Meta-PCN@1) - 0.5;
- ``--rule noregress`` (patches L = 16): Meta-PCN@k >= Meta-PCN@1 - 0.5;
- ``--rule guard`` (MNIST): Meta-PCN@k >= max(BP, Meta-PCN@1) - 0.5, BP and Meta-PCN@1 may come
  from ``--base FILE`` (an earlier file of the same command, rows at 1e-3, gain `fan`).
- ``--rule none``: report only (held-out sets).

    python benchmarks/train_pcn/pcn16_table.py --rule bar benchmarks/train_pcn/pcn16_patches_L5.yaml \
        benchmarks/train_pcn/pcn16_patches_L5_bpwn.yaml
    python benchmarks/train_pcn/pcn16_table.py --rule guard \
        --base benchmarks/train_pcn/study_mnist_rule.yaml benchmarks/train_pcn/pcn16_mnist.yaml
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import yaml


def rows_of(paths):
    """{config: {(name, seed): final top-1}}, name BP, Meta-PCN@k or BP+WN@k (gain `fan` only)."""
    table = defaultdict(dict)
    for path in paths:
        for r in yaml.safe_load(open(path))["runs"]:
            if r.get("weight_norm_gain") not in (None, "fan"):
                continue
            k = round(r.get("lr", 1e-3) / 1e-3, 4)
            name = "BP" if r["method"] == "BP" else f"{r['method']}@{k:g}"
            table[r["config"]][(name, r["seed"])] = r["final_top1"]
    return table


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--rule", choices=["bar", "noregress", "guard", "none"], default="none")
    p.add_argument("--scales", default="0.5,0.3")
    p.add_argument("--base", default=None, help="earlier file with BP and Meta-PCN at 1e-3")
    args = p.parse_args(argv)
    table, base = rows_of(args.files), (rows_of([args.base]) if args.base else {})
    scales = [float(k) for k in args.scales.split(",")]
    verdicts = defaultdict(list)
    for config, cells in table.items():
        def col(name):
            got = {s: v for (n, s), v in cells.items() if n == name}
            if not got and config in base:
                got = {s: v for (n, s), v in base[config].items() if n == name}
            return got

        bp, ref = col("BP"), col("Meta-PCN@1")
        print(f"\n{config}")
        print("| candidate k | seeds | BP | Meta-PCN@1 | Meta-PCN@k | BP + WN@k | max |Meta - BP+WN| "
              "| k - BP | k - @1 | @1 - BP | rule |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for k in scales:
            cand, bpwn = col(f"Meta-PCN@{k:g}"), col(f"BP+WN@{k:g}")
            seeds = sorted(set(cand) & set(bp) & set(ref))
            if not seeds:
                continue

            def m(d, ss=seeds):
                v = np.array([d[s] for s in ss], float)
                return v.mean(), (v.std(ddof=1) if len(v) > 1 else 0.0)

            def paired(a, b):
                d = np.array([a[s] - b[s] for s in seeds])
                return d.mean(), (d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0)

            mb, mr, mc = m(bp), m(ref), m(cand)
            wseeds = [s for s in seeds if s in bpwn]
            mw = m(bpwn, wseeds) if wseeds else (float("nan"), 0.0)
            ident = max((abs(cand[s] - bpwn[s]) for s in wseeds), default=float("nan"))
            if args.rule == "bar":
                need = max(mb[0], mr[0], mw[0] if wseeds else -1) - 0.5
            elif args.rule == "noregress":
                need = mr[0] - 0.5
            elif args.rule == "guard":
                need = max(mb[0], mr[0]) - 0.5
            else:
                need = None
            ok = None if need is None else mc[0] >= need
            if ok is not None:
                verdicts[k].append(ok)
            dkb, dkr, drb = paired(cand, bp), paired(cand, ref), paired(ref, bp)
            verdict = "-" if ok is None else (f"met (>= {need:.2f})" if ok else
                                              f"**missed** ({mc[0]:.2f} < {need:.2f})")
            print(f"| {k:g} | {seeds[0]}-{seeds[-1]} (n={len(seeds)}) | {mb[0]:.2f} ± {mb[1]:.2f} | "
                  f"{mr[0]:.2f} ± {mr[1]:.2f} | {mc[0]:.2f} ± {mc[1]:.2f} | "
                  + (f"{mw[0]:.2f} (n={len(wseeds)})" if wseeds else "-")
                  + f" | {ident:.2f} | {dkb[0]:+.2f} ± {dkb[1]:.2f} | {dkr[0]:+.2f} ± {dkr[1]:.2f} | "
                  f"{drb[0]:+.2f} ± {drb[1]:.2f} | {verdict} |")
    for k, v in verdicts.items():
        print(f"\nk = {k:g}: all cells met: {all(v)} ({sum(v)} of {len(v)})")


if __name__ == "__main__":
    main()
