"""pcn19: a depth-resolved weight-norm default for MLP blocks, the decision from bench.py files.

Candidate rule R(L*): Meta-PCN's MLP runs at depth L <= L* use ``--weight-norm-mode cap
--weight-decay 1`` (``cap:1``), deeper ones today's pin with decay 0. L* is chosen from the
patches cells L = 5, 8, 12 (``--choose``): the largest L in {5, 8, 12} such that the paired mean
(cap:1 - pin) over the seeds is >= 0 at every depth in {5, 8, 12} up to and including it; none if
cap:1 is below pin already at L = 5. Then every cell of ``--choose`` (patches, all depths in the
files) and of ``--guard`` (MNIST) is judged under R(L*):

    R >= max(BP, BP + WN pin) - 0.5  and  R >= Meta-PCN pin - 0.5   (means over the seeds)

(BP + WN pin = Meta-PCN pin by the gradient identity; Meta-PCN pin stands for it where a file has
no BP + WN rows). Cost is judged from ``--timing`` (timing.py --modes --variants pin,cap:1):
cap:1 / pin <= 1.05 at every MLP depth <= L*; ``--timing`` may be given twice (first reading,
rerun): the first reading counts as load-noisy if any of its ratios is below 0.95, and then the
rerun decides.

    python benchmarks/train_pcn/pcn19_table.py --choose pcn19_patches_L5.yaml ... \\
        --guard pcn18_mnist.yaml --timing pcn19_timing.yaml
    python benchmarks/train_pcn/pcn19_table.py --heldout FILE [--lstar 8]   (a table, no rule)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pcn18_table import paired, rows_of, stat  # noqa: E402

CAND, PIN = "Meta-PCN cap:1", "Meta-PCN pin"
CHOICES = (5, 8, 12)


def depth(config):
    return int(config.split("L=")[1])


def cols(table, config):
    cells = table[config]
    names = sorted({n for (n, _) in cells})
    return {n: {s: v for (m, s), v in cells.items() if m == n} for n in names}


def diff_mean(a, b):
    seeds = sorted(set(a) & set(b))
    return float(np.mean([a[s] - b[s] for s in seeds]))


def choose_lstar(table):
    lstar = None
    for L in CHOICES:
        config = f"MLP L={L}"
        if config not in table:
            break
        col = cols(table, config)
        if diff_mean(col[CAND], col[PIN]) < 0:
            break
        lstar = L
    return lstar


def judge(table, lstar, label):
    ok_all, lines = True, []
    for config in sorted(table, key=depth):
        col = cols(table, config)
        mean = {n: np.mean(list(c.values())) for n, c in col.items() if c}
        L = depth(config)
        use = CAND if lstar is not None and L <= lstar else PIN
        wn_pin = mean.get("BP+WN pin", mean[PIN])
        bar = max(mean["BP"], wn_pin) - 0.5
        ok = mean[use] >= bar and mean[use] >= mean[PIN] - 0.5
        ok_all &= ok
        seeds = sorted({s for c in col.values() for s in c})
        lines.append(
            f"| {label} {L} | {seeds[0]}-{seeds[-1]} ({len(seeds)}) | {stat(col['BP'])} | "
            f"{stat(col[PIN])} | {stat(col[CAND]) if CAND in col else '-'} | "
            f"{'cap:1' if use == CAND else 'pin'} {mean[use]:.2f} | "
            f"{paired(col[CAND], col[PIN]) if CAND in col else '-'} | "
            f"{paired(col[use], col['BP'])} | {bar:.2f} | {'met' if ok else '**missed**'} |")
    return ok_all, lines


def timing_ratios(path):
    res = yaml.safe_load(open(path))["results"]
    return {k: v["cap:1"]["over_pin"] for k, v in res.items()}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--choose", nargs="*", default=[])
    p.add_argument("--guard", nargs="*", default=[])
    p.add_argument("--timing", action="append", default=[])
    p.add_argument("--heldout", nargs="*", default=[])
    p.add_argument("--lstar", type=int, default=None, help="--heldout: the resolved L*")
    args = p.parse_args(argv)
    head = ("| set, L | seeds | BP | Meta-PCN pin (today) | Meta-PCN cap:1 | resolved | "
            "cap:1 - pin | resolved - BP | bar | cell |\n|" + " --- |" * 10)
    if args.heldout:
        print(head)
        for f in args.heldout:
            print("\n".join(judge(rows_of([f]), args.lstar, Path(f).stem)[1]))
        return
    patches = rows_of(args.choose)
    lstar = choose_lstar(patches)
    print(f"L* = {lstar}" + ("" if lstar else " (cap:1 below pin at L = 5: no rule to adopt)"))
    print(head)
    ok_p, lines_p = judge(patches, lstar, "patches")
    ok_m, lines_m = judge(rows_of(args.guard), lstar, "MNIST") if args.guard else (True, [])
    print("\n".join(lines_p + lines_m))
    ok_t = True
    if args.timing:
        first = timing_ratios(args.timing[0])
        noisy = any(r < 0.95 for r in first.values())
        use = timing_ratios(args.timing[1]) if noisy and len(args.timing) > 1 else first
        print(f"timing first reading {first}" + (" (load-noisy: a ratio < 0.95)" if noisy else ""))
        if noisy:
            print(f"timing rerun {use}" if len(args.timing) > 1 else "rerun missing")
            ok_t = len(args.timing) > 1
        mlp = {int(k.split("L=")[1].split()[0]): v for k, v in use.items() if k.startswith("MLP")}
        ok_t &= all(v <= 1.05 for L, v in mlp.items() if lstar is not None and L <= lstar)
        print(f"cost at MLP L <= L*: {'met' if ok_t else 'missed'}")
    passed = lstar is not None and ok_p and ok_m and ok_t
    print(f"verdict: {'PASS' if passed else 'FAIL'} (patches {ok_p}, MNIST {ok_m}, cost {ok_t})")


if __name__ == "__main__":
    main()
