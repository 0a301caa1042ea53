"""Stop 40: mean ± sd per method and depth over the seeds of one or more bench YAML files, and the
paired difference A - B (same seed) with its standard error sd / sqrt(n) and a t value.

    python benchmarks/train_pcn/stop40_stats.py benchmarks/train_pcn/heldout_patches_mlp.yaml \
        benchmarks/train_pcn/stop40_patches_seeds345.yaml --depths 12,16 --seeds 0-5
"""

from __future__ import annotations

import argparse
import statistics as st

import yaml


def seeds_of(text: str | None):
    if not text:
        return None
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--depths", default=None)
    p.add_argument("--seeds", default=None, help="e.g. 0-5 or 0,1,2")
    p.add_argument("--pair", default="Meta-PCN,BP", help="A,B: report A - B per seed")
    p.add_argument("--metric", default="final_top1")
    args = p.parse_args(argv)
    keep = seeds_of(args.seeds)
    depths = None if args.depths is None else {int(d) for d in args.depths.split(",")}
    table: dict = {}
    for f in args.files:
        for r in yaml.safe_load(open(f))["runs"]:
            if (depths and r["L"] not in depths) or (keep and r["seed"] not in keep):
                continue
            table.setdefault((r["L"], r["method"]), {})[r["seed"]] = r[args.metric]
    a, b = args.pair.split(",")
    for L in sorted({k[0] for k in table}):
        cells = []
        for (depth, method), by_seed in sorted(table.items()):
            if depth == L:
                v = list(by_seed.values())
                cells.append(f"{method} {st.mean(v):.2f} ± {st.stdev(v) if len(v) > 1 else 0:.2f}"
                             f" (n={len(v)})")
        line = f"L={L} {args.metric}: " + "; ".join(cells)
        if (L, a) in table and (L, b) in table:
            common = sorted(set(table[(L, a)]) & set(table[(L, b)]))
            d = [table[(L, a)][s] - table[(L, b)][s] for s in common]
            if len(d) > 1:
                se = st.stdev(d) / len(d) ** 0.5
                line += (f"; {a} - {b} = {st.mean(d):+.2f} ± {se:.2f} (SE, n={len(d)}, "
                         f"t={st.mean(d) / se if se else float('nan'):+.2f})")
        print(line)


if __name__ == "__main__":
    main()
