"""pcn20: pcn19's depth-resolved weight-norm default with a smaller L*, the decision from bench.py
files and the paired CPU-clock cost probe.

Candidates R(L*), L* in {8, 5}: Meta-PCN's weight-normalised MLP runs of depth L <= L* use
``--weight-norm-mode cap --weight-decay 1`` (``cap:1``), deeper ones and every VGG / ResNet today's
pin with decay 0. They differ from today's default only at MLP depths <= 8, so the deciding cells
are L = 3, 5, 8 on patches (``--patches``) and MNIST (``--mnist``). R(L*) passes iff

1. complete: every deciding cell at L <= L* holds BP, Meta-PCN pin and Meta-PCN cap:1 at exactly
   the seeds the rule names (``--patches-seeds``, ``--mnist-seeds``);
2. bar, at every cell with L <= L*:  mean cap:1 >= max(mean BP, mean pin) - 0.5  (Meta-PCN pin
   stands for BP + WN pinned, the same gradients); this implies no regression (>= pin - 0.5);
3. direction on patches: the paired mean (cap:1 - pin) >= 0 at L = 5 and, for L* = 8, at L = 8;
4. cost (``--probe``, pcn19_cost_probe.py --bp): at every probed MLP depth <= L* the median
   per-pair CPU-clock ratio cap:1 / pin <= 1.05 and the median cap:1 / BP <= 1.3.

R(8) is adopted if it passes, else R(5) if it passes, else nothing.

    python benchmarks/train_pcn/pcn20_table.py --patches pcn20_patches_L3.yaml ... \\
        --mnist pcn20_mnist.yaml --probe pcn20_cost_probe.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pcn18_table import paired, rows_of, stat  # noqa: E402
from pcn19_table import CAND, PIN, cols, diff_mean  # noqa: E402

DEPTHS = (3, 5, 8)
CANDIDATES = (8, 5)


def seeds_arg(text):
    lo, hi = (int(v) for v in text.split("-"))
    return list(range(lo, hi + 1))


def cell(table, L, seeds):
    """(means, columns, complete) of one deciding cell."""
    col = cols(table, f"MLP L={L}") if f"MLP L={L}" in table else {}
    complete = all(sorted(col.get(n, {})) == seeds for n in ("BP", PIN, CAND))
    mean = {n: float(np.mean(list(c.values()))) for n, c in col.items() if c}
    return mean, col, complete


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--patches", nargs="+", required=True)
    p.add_argument("--mnist", nargs="+", required=True)
    p.add_argument("--probe", required=True)
    p.add_argument("--patches-seeds", type=seeds_arg, default=seeds_arg("136-183"))
    p.add_argument("--mnist-seeds", type=seeds_arg, default=seeds_arg("136-147"))
    args = p.parse_args(argv)
    sets = {"patches": (rows_of(args.patches), args.patches_seeds),
            "MNIST": (rows_of(args.mnist), args.mnist_seeds)}
    print("| set, L | seeds | BP | Meta-PCN pin (today) | Meta-PCN cap:1 | cap:1 - pin | "
          "cap:1 - BP | bar | cap:1 vs bar |\n|" + " --- |" * 9)
    ok_cell, complete = {}, {}
    for name, (table, seeds) in sets.items():
        for L in DEPTHS:
            mean, col, full = cell(table, L, seeds)
            complete[name, L] = full
            if not all(n in mean for n in ("BP", PIN, CAND)):
                ok_cell[name, L] = False
                print(f"| {name} {L} | missing | | | | | | | |")
                continue
            bar = max(mean["BP"], mean[PIN]) - 0.5
            ok_cell[name, L] = mean[CAND] >= bar and mean[CAND] >= mean[PIN] - 0.5
            got = sorted({s for c in col.values() for s in c})
            print(f"| {name} {L} | {got[0]}-{got[-1]} ({len(got)}){'' if full else ' INCOMPLETE'}"
                  f" | {stat(col['BP'])} | {stat(col[PIN])} | {stat(col[CAND])} | "
                  f"{paired(col[CAND], col[PIN])} | {paired(col[CAND], col['BP'])} | {bar:.2f} | "
                  f"{'met' if ok_cell[name, L] else '**missed**'} |")
    patches = sets["patches"][0]
    direction = {L: diff_mean(cols(patches, f"MLP L={L}")[CAND], cols(patches, f"MLP L={L}")[PIN])
                 for L in (5, 8) if f"MLP L={L}" in patches}
    print(f"patches paired mean cap:1 - pin: {direction}")
    probe = yaml.safe_load(open(args.probe))["results"]
    cost = {}
    for key, r in probe.items():
        L = int(key.split("L=")[1].split()[0])
        over_bp = r.get("cap1_over_bp", {}).get("median", float("inf"))
        cost[L] = (r["median_pair_ratio"], over_bp)
        print(f"cost MLP L = {L}: cap:1 / pin {r['median_pair_ratio']:.3f} (IQR "
              f"{r['pair_ratio_iqr']}), cap:1 / BP {over_bp:.3f}, pin / BP "
              f"{r.get('pin_over_bp', {}).get('median', float('nan')):.3f}")
    adopted = None
    for lstar in CANDIDATES:
        cells = [(n, L) for n in sets for L in DEPTHS if L <= lstar]
        c1 = all(complete[c] for c in cells)
        c2 = all(ok_cell[c] for c in cells)
        c3 = all(direction.get(L, -1.0) >= 0 for L in (5, 8) if L <= lstar)
        probed = [L for L in cost if L <= lstar]
        c4 = bool(probed) and all(cost[L][0] <= 1.05 and cost[L][1] <= 1.3 for L in probed) \
            and all(L in cost for L in DEPTHS if L <= lstar)
        ok = c1 and c2 and c3 and c4
        print(f"R({lstar}): complete {c1}, bar {c2}, direction {c3}, cost {c4} -> "
              f"{'PASS' if ok else 'FAIL'}")
        if ok and adopted is None:
            adopted = lstar
    print(f"verdict: {'adopt L* = ' + str(adopted) if adopted else 'nothing adopted'}")


if __name__ == "__main__":
    main()
