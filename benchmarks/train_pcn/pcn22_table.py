"""pcn22: the depth-resolved gain rule R(L*) (``fan-init`` = fan / sqrt(3), torch's init scale,
for weight-normalised MLPs of depth L <= L*, ``fan`` above; VGG / ResNet unchanged), the decision
from bench.py files (``--gains fan,fan-init``) and the paired CPU-clock cost probe.

R(L*), L* in {8, 5}, passes iff (RESULTS.md pcn22 §1, fixed before the deciding runs)

1. complete: every deciding cell at L <= L* holds BP, Meta-PCN fan (today's default, standing for
   BP + WN pinned: the same gradients) and Meta-PCN fan-init at exactly the named seeds;
2. bar on patches L = 3 and 5: mean fan-init >= max(mean BP, mean fan) - 0.5;
3. no loss beyond seed noise on patches L = 8 (R(8) only) and on MNIST at every L <= L* of
   3, 5, 8: paired mean (fan-init - fan) >= -2 SE (SE of the paired differences);
4. cost (``--probe``): at every probed MLP depth <= L*, median per-triple CPU-clock ratio
   fan-init / fan <= 1.05 and fan-init / BP <= 1.3.

R(8) is adopted if it passes, else R(5) if it passes, else nothing.

    python benchmarks/train_pcn/pcn22_table.py --patches pcn22_patches_L3.yaml \\
        pcn22_patches_L5.yaml pcn22_patches_L8.yaml --mnist pcn22_mnist.yaml \\
        --probe pcn22_cost_probe.yaml
    python benchmarks/train_pcn/pcn22_table.py --heldout pcn22_heldout_numerals.yaml ...
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import yaml

BP, PIN, CAND = "BP", "Meta-PCN fan", "Meta-PCN fan-init"
PATCH_SEEDS = {3: list(range(300, 396)), 5: list(range(300, 396)), 8: list(range(300, 348))}
MNIST_SEEDS = list(range(300, 312))


def rows_of(paths):
    """{L: {name: {seed: final top-1}}} (AdamW rate 1e-3, pin, decay 0)."""
    table = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        data = yaml.safe_load(open(path))
        for r in data["runs"]:
            name = r["method"] if r["weight_norm_gain"] is None else f"{r['method']} {r['weight_norm_gain']}"
            table[r["L"]][name][r["seed"]] = r["final_top1"]
    return table


def stat(col):
    v = np.array(list(col.values()))
    return f"{v.mean():.2f} ± {v.std(ddof=1):.2f}" if len(v) > 1 else f"{v.mean():.2f}"


def paired(a, b):
    seeds = sorted(set(a) & set(b))
    d = np.array([a[s] - b[s] for s in seeds])
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return float(d.mean()), float(se), int((d > 0).sum()), int((d < 0).sum())


def fmt(p):
    return f"{p[0]:+.2f} ± {p[1]:.2f}"


def decide(args):
    sets = {"patches": (rows_of(args.patches), PATCH_SEEDS),
            "MNIST": (rows_of(args.mnist), {L: MNIST_SEEDS for L in (3, 5, 8)})}
    print("| set, L | seeds | BP | Meta-PCN fan (today) | Meta-PCN fan-init | fan-init - fan "
          "(above / below) | fan-init - BP | condition | verdict |\n|" + " --- |" * 9)
    ok = {}
    for name, (table, seeds) in sets.items():
        for L in (3, 5, 8):
            col = table.get(L, {})
            full = all(sorted(col.get(n, {})) == seeds[L] for n in (BP, PIN, CAND))
            if not all(n in col for n in (BP, PIN, CAND)):
                ok[name, L] = False
                print(f"| {name} {L} | missing | | | | | | | |")
                continue
            mean = {n: float(np.mean(list(col[n].values()))) for n in (BP, PIN, CAND)}
            dp, db = paired(col[CAND], col[PIN]), paired(col[CAND], col[BP])
            if name == "patches" and L in (3, 5):
                bar = max(mean[BP], mean[PIN]) - 0.5
                good, cond = mean[CAND] >= bar, f"bar {bar:.2f}"
            else:
                good, cond = dp[0] >= -2 * dp[1], f"fan-init - fan >= -2 SE ({-2 * dp[1]:+.2f})"
            ok[name, L] = good and full
            got = sorted({s for c in col.values() for s in c})
            print(f"| {name} {L} | {got[0]}-{got[-1]} ({len(got)}){'' if full else ' INCOMPLETE'} | "
                  f"{stat(col[BP])} | {stat(col[PIN])} | {stat(col[CAND])} | {fmt(dp)} "
                  f"({dp[2]} / {dp[3]}) | {fmt(db)} | {cond} | {'met' if ok[name, L] else '**missed**'} |")
    probe = yaml.safe_load(open(args.probe))["results"]
    cost = {}
    print("\n| MLP L | fan-init / fan (median, IQR) | fan-init / BP | fan / BP | cost |\n|" + " --- |" * 5)
    for key, r in probe.items():
        L = int(key.split("L=")[1].split()[0])
        over_bp = next(v for k, v in r.items() if k.endswith("_over_bp") and k != "pin_over_bp")
        cost[L] = r["median_pair_ratio"] <= 1.05 and over_bp["median"] <= 1.3
        print(f"| {L} | {r['median_pair_ratio']:.3f} ({r['pair_ratio_iqr'][0]:.3f}-"
              f"{r['pair_ratio_iqr'][1]:.3f}) | {over_bp['median']:.3f} | "
              f"{r['pin_over_bp']['median']:.3f} | {'met' if cost[L] else '**missed**'} |")
    verdict = None
    for lstar in (8, 5):
        cells = [("patches", L) for L in (3, 5, 8) if L <= lstar] + \
                [("MNIST", L) for L in (3, 5, 8) if L <= lstar]
        passed = all(ok[c] for c in cells) and all(cost.get(L, False) for L in (3, 5, 8) if L <= lstar)
        print(f"\nR({lstar}): {'passes' if passed else 'fails'} "
              f"({', '.join(f'{s} {L}' for (s, L) in cells if not ok[s, L]) or 'all cells met'}; "
              f"cost {'met' if all(cost.get(L, False) for L in (3, 5, 8) if L <= lstar) else 'missed'})")
        if passed and verdict is None:
            verdict = lstar
    print(f"\nVerdict: {'R(%d) adopted' % verdict if verdict else 'nothing adopted'}")


def heldout(paths, lstar):
    print("| set, L | BP | Meta-PCN fan (today) | Meta-PCN fan-init | fan-init - fan | "
          "bar = max(BP, fan) - 0.5 | today vs bar | R vs bar |\n|" + " --- |" * 8)
    for path in paths:
        data = yaml.safe_load(open(path))
        table = rows_of([path])
        for L in sorted(table):
            col = table[L]
            mean = {n: float(np.mean(list(col[n].values()))) for n in (BP, PIN, CAND)}
            bar = max(mean[BP], mean[PIN]) - 0.5
            resolved = CAND if (lstar and L <= lstar) else PIN
            print(f"| {data['data']} {L} | {stat(col[BP])} | {stat(col[PIN])} | {stat(col[CAND])} | "
                  f"{fmt(paired(col[CAND], col[PIN]))} | {bar:.2f} | "
                  f"{'met' if mean[PIN] >= bar else '**missed**'} | "
                  f"{'met' if mean[resolved] >= bar else '**missed**'} ({resolved.split()[-1]}) |")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--patches", nargs="+")
    p.add_argument("--mnist", nargs="+")
    p.add_argument("--probe")
    p.add_argument("--heldout", nargs="+")
    p.add_argument("--lstar", type=int, default=0, help="held out: the adopted L* (0: none)")
    args = p.parse_args(argv)
    if args.heldout:
        heldout(args.heldout, args.lstar)
    else:
        decide(args)


if __name__ == "__main__":
    main()
