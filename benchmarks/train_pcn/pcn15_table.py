"""pcn15: the decision table from pcn15_keep.py files. Per config: mean ± sd over seeds of the test
top-1 of Meta-PCN `best` / `last`, BP `best` / `last` (90 % fit split) and BP-full `last`, the
paired difference Meta-PCN best - last (mean ± SE), the chosen epochs, and the bars
best >= max(BP-full, Meta-PCN last) - 0.5 (choosing) and best >= last - 0.5 (--guard).

    python benchmarks/train_pcn/pcn15_table.py benchmarks/train_pcn/pcn15_patches_L5.yaml ...
    python benchmarks/train_pcn/pcn15_table.py --guard benchmarks/train_pcn/pcn15_mnist.yaml
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import yaml


def ms(values):
    v = np.asarray(values, float)
    if not len(v):
        return "-"
    return f"{v.mean():.2f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.2f}"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--guard", action="store_true")
    p.add_argument("--curves", action="store_true",
                   help="also the mean validation / test top-1 per epoch of each method")
    args = p.parse_args(argv)
    cells = defaultdict(lambda: defaultdict(dict))   # config -> method -> seed -> row
    for path in args.files:
        for r in yaml.safe_load(open(path))["runs"]:
            cells[r["config"]][r["method"]][r["seed"]] = r
    print("| config | seeds | Meta-PCN best | Meta-PCN last | best - last | chosen epochs | BP best | "
          "BP last | BP-full last | bar |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for config, by in cells.items():
        meta = by.get("Meta-PCN", {})
        seeds = sorted(meta)
        if "BP-full" in by and not args.guard:
            seeds = sorted(set(seeds) & set(by["BP-full"]))
        if not seeds:
            continue
        best = np.array([meta[s]["best_top1"] for s in seeds])
        last = np.array([meta[s]["last_top1"] for s in seeds])
        d = best - last
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
        bp = by.get("BP", {})
        full = by.get("BP-full", {})
        bpb = [bp[s]["best_top1"] for s in seeds if s in bp]
        bpl = [bp[s]["last_top1"] for s in seeds if s in bp]
        fl = [full[s]["last_top1"] for s in seeds if s in full]
        if args.guard:
            ok = best.mean() >= last.mean() - 0.5
        else:
            ok = bool(fl) and best.mean() >= max(np.mean(fl), last.mean()) - 0.5
        verdicts.append(ok)
        epochs = ",".join(str(meta[s]["chosen_epoch"]) for s in seeds)
        print(f"| {config} | {seeds[0]}-{seeds[-1]} (n={len(seeds)}) | {ms(best)} | {ms(last)} | "
              f"{d.mean():+.2f} ± {se:.2f} | {epochs} | {ms(bpb)} | {ms(bpl)} | {ms(fl)} | "
              f"{'met' if ok else '**missed**'} |")
    if args.curves:
        print("\n| config | method | mean val top-1 per epoch | mean test top-1 per epoch |")
        print("| --- | --- | --- | --- |")
        for config, by in cells.items():
            for name, rows in by.items():
                val = [r["val_top1"] for r in rows.values() if "val_top1" in r]
                test = [r["test_top1"] for r in rows.values()]
                v = " / ".join(f"{x:.2f}" for x in np.mean(val, 0)) if val else "-"
                t = " / ".join(f"{x:.2f}" for x in np.mean(test, 0))
                print(f"| {config} | {name} (n={len(rows)}) | {v} | {t} |")
    print(f"\nall cells met: {bool(verdicts) and all(verdicts)} ({sum(verdicts)} of {len(verdicts)})")


if __name__ == "__main__":
    main()
