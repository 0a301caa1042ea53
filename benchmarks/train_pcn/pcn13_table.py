"""Issue 31, helper pcn13: the decision table for one candidate gain rule. The bar
max(BP, BP + WN fan) - 0.5 from the earlier files (``--earlier``) and again from the rerun
(``--rerun``: BP where rerun, Meta-PCN ``fan`` standing for BP + WN ``fan``, equal by the gradient
identity); Meta-PCN at the candidate against both; the paired difference candidate - fan (rerun,
same seed) ± its standard error; and how many rerun rows reproduce the earlier files.

    python benchmarks/train_pcn/pcn13_table.py --cand fan-sqrt-act \
        --earlier benchmarks/train_pcn/heldout_patches_mlp.yaml \
        --rerun benchmarks/train_pcn/pcn13_patches_fan-sqrt-act.yaml
"""

from __future__ import annotations

import argparse
import statistics as st

import yaml


def load(files, metric, seeds):
    cell = {}
    for f in files:
        for r in yaml.safe_load(open(f))["runs"]:
            if r["seed"] in seeds:
                gain = r.get("weight_norm_gain") if r["method"] in ("BP+WN", "Meta-PCN") else None
                cell.setdefault((r["L"], r["method"], gain, r["seed"]), r[metric])
    return cell


def mean(cell, L, method, gain, seeds):
    vals = [cell[(L, method, gain, s)] for s in seeds if (L, method, gain, s) in cell]
    return (st.mean(vals), st.stdev(vals) if len(vals) > 1 else 0.0) if vals else (None, None)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--cand", required=True)
    p.add_argument("--earlier", nargs="+", required=True)
    p.add_argument("--rerun", nargs="+", required=True)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--metric", default="final_top1")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    old, new = load(args.earlier, args.metric, seeds), load(args.rerun, args.metric, seeds)
    same = [(k, old[k], v) for k, v in new.items() if k in old]
    print(f"rerun rows reproducing the earlier files: {sum(a == b for _, a, b in same)} of "
          f"{len(same)}; differing: " + ", ".join(f"L={k[0]} {k[1]} {k[2] or ''} s{k[3]} "
                                                  f"{a} -> {b}" for k, a, b in same if a != b))
    c = args.cand
    print(f"| L | BP | BP + WN fan | Meta-PCN fan (rerun) | Meta-PCN {c} | bar | {c} - bar "
          f"| bar (rerun) | {c} - bar (rerun) | {c} - fan (paired) |")
    print("| --- " * 10 + "|")
    for L in sorted({k[0] for k in new}):
        bp, bpwn = mean(old, L, "BP", None, seeds), mean(old, L, "BP+WN", "fan", seeds)
        fan_new, cand = mean(new, L, "Meta-PCN", "fan", seeds), mean(new, L, "Meta-PCN", c, seeds)
        bp_new = mean(new, L, "BP", None, seeds)
        bar = max(m for m in (bp[0], bpwn[0]) if m is not None) - 0.5
        bar_new = max(m for m in ((bp_new[0] if bp_new[0] is not None else bp[0]), fan_new[0])
                      if m is not None) - 0.5
        diff = [new[(L, "Meta-PCN", c, s)] - new[(L, "Meta-PCN", "fan", s)] for s in seeds
                if (L, "Meta-PCN", c, s) in new and (L, "Meta-PCN", "fan", s) in new]
        f = lambda x: "-" if x[0] is None else f"{x[0]:.2f} ± {x[1]:.2f}"  # noqa: E731
        verdict = lambda b: "-" if cand[0] is None else (  # noqa: E731
            f"{cand[0] - b:+.2f} {'met' if cand[0] >= b else '**missed**'}")
        paired = "-" if len(diff) < 2 else f"{st.mean(diff):+.2f} ± {st.stdev(diff) / len(diff) ** .5:.2f}"
        bp_text = f(bp) + ("" if bp_new[0] is None else f" (rerun {bp_new[0]:.2f})")
        print(f"| {L} | {bp_text} | {f(bpwn)} | {f(fan_new)} | {f(cand)} | {bar:.2f} | "
              f"{verdict(bar)} | {bar_new:.2f} | {verdict(bar_new)} | {paired} |")


if __name__ == "__main__":
    main()
