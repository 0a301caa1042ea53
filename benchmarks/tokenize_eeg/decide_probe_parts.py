"""The event-probe study's table and the verdict of its rule (benchmarks/tokenize_eeg/RESULTS.md,
"Study: event-probe features that keep the montage"), from heldout.py's files:

    python benchmarks/tokenize_eeg/decide_probe_parts.py benchmarks/tokenize_eeg/results/probe/[AB]_parts_s[01].yaml

A candidate passes iff (1) on each choosing split its task-vs-rest balanced accuracy (mean of the
seeds) is >= that split's band power - 0.02 and (2) its left-vs-right mean over all files is >=
``hist,mean``'s - 0.02. The passing candidate with the highest task-vs-rest mean is adopted; one
within 0.01 of it with fewer columns is taken instead. Files of split H are tabulated, never decide.
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
import yaml

CANDIDATES = ("chmean", "champ", "chpow", "chmean,champ,chpow", "hist,mean,chmean,champ,chpow")
REFERENCE = "hist,mean"


def load(paths):
    """-> {split: [{set: (task/rest, left/right, columns)} per file]}, {split: band (tr, lr) per file}."""
    runs, bands = defaultdict(list), defaultdict(list)
    for path in paths:
        d = yaml.safe_load(open(path))
        p = d["probe"]
        tr = p["task_vs_rest"]
        lr = next(v for k, v in p.items() if k.startswith("left_vs_right"))
        runs[d["split"]].append({name: (tr["sets"][name]["balanced_accuracy"],
                                        lr["sets"][name]["balanced_accuracy"],
                                        tr["sets"][name]["features"]) for name in tr["sets"]})
        bands[d["split"]].append((tr["band_power"]["balanced_accuracy"],
                                  lr["band_power"]["balanced_accuracy"], d["seed"]))
    return runs, bands


def decide(runs, bands, splits=("A", "B")):
    """-> {candidate: verdict dict}, adopted set or None."""
    verdicts = {}
    all_cells = [r for s in splits for r in runs[s]]
    ref_lr = np.mean([r[REFERENCE][1] for r in all_cells])
    for name in CANDIDATES:
        per_split = {s: float(np.mean([r[name][0] for r in runs[s]])) for s in splits}
        band = {s: float(np.mean([b[0] for b in bands[s]])) for s in splits}
        lr = float(np.mean([r[name][1] for r in all_cells]))
        rule1 = all(per_split[s] >= band[s] - 0.02 for s in splits)
        rule2 = lr >= ref_lr - 0.02
        verdicts[name] = {"task_rest_by_split": per_split, "band_by_split": band,
                          "task_rest_mean": float(np.mean([r[name][0] for r in all_cells])),
                          "left_right_mean": lr, "reference_left_right": float(ref_lr),
                          "columns": all_cells[0][name][2], "rule1": rule1, "rule2": rule2,
                          "passes": rule1 and rule2}
    passing = [n for n in CANDIDATES if verdicts[n]["passes"]]
    if not passing:
        return verdicts, None
    best = max(passing, key=lambda n: verdicts[n]["task_rest_mean"])
    near = [n for n in passing
            if verdicts[n]["task_rest_mean"] >= verdicts[best]["task_rest_mean"] - 0.01]
    return verdicts, min(near, key=lambda n: verdicts[n]["columns"])


def main(paths):
    runs, bands = load(paths)
    for split in sorted(runs):
        seeds = [b[2] for b in bands[split]]
        print(f"\nsplit {split}, seeds {seeds}: task vs rest / left vs right balanced accuracy")
        print("| features | columns | " + " | ".join(f"seed {s}" for s in seeds) + " | mean |")
        print("|---|---|" + "---|" * (len(seeds) + 1))
        band_tr = [b[0] for b in bands[split]]
        band_lr = [b[1] for b in bands[split]]
        print("| band power (raw signal) | 95 | " + " | ".join(
            f"{t:.3f} / {l:.3f}" for t, l in zip(band_tr, band_lr))
              + f" | {np.mean(band_tr):.3f} / {np.mean(band_lr):.3f} |")
        for name in (REFERENCE,) + CANDIDATES:
            if not all(name in r for r in runs[split]):  # a run of fewer --feature-sets
                continue
            cells = [r[name] for r in runs[split]]
            print(f"| {name} | {cells[0][2]} | " + " | ".join(f"{c[0]:.3f} / {c[1]:.3f}" for c in cells)
                  + f" | {np.mean([c[0] for c in cells]):.3f} / {np.mean([c[1] for c in cells]):.3f} |")
    speeds = [(d["seed"], d["speed"]) for d in map(lambda p: yaml.safe_load(open(p)), paths) if "speed" in d]
    if speeds:
        print("\n| seed | encode windows/s: ours / plain loop | speedup |\n|---|---|---|")
        for seed, sp in speeds:
            print(f"| {seed} | {sp['ours_windows_per_s']:.1f} / {sp['plain_windows_per_s']:.1f} | {sp['speedup']:.2f}x |")
        print(f"| mean | {np.mean([sp['ours_windows_per_s'] for _, sp in speeds]):.1f} / "
              f"{np.mean([sp['plain_windows_per_s'] for _, sp in speeds]):.1f} | "
              f"{np.mean([sp['speedup'] for _, sp in speeds]):.2f}x |")
    if {"A", "B"} <= set(runs):
        verdicts, adopted = decide(runs, bands)
        print()
        for name, v in verdicts.items():
            print(f"{name}: task/rest A {v['task_rest_by_split']['A']:.3f} (band - 0.02 = "
                  f"{v['band_by_split']['A'] - 0.02:.3f}), B {v['task_rest_by_split']['B']:.3f} "
                  f"(band - 0.02 = {v['band_by_split']['B'] - 0.02:.3f}): rule 1 "
                  f"{'met' if v['rule1'] else 'not met'}; left/right {v['left_right_mean']:.3f} vs "
                  f"hist,mean {v['reference_left_right']:.3f} - 0.02: rule 2 "
                  f"{'met' if v['rule2'] else 'not met'}; task/rest mean {v['task_rest_mean']:.3f}"
                  f" -> {'passes' if v['passes'] else 'fails'}")
        print(f"adopted: {adopted or 'none (default stays hist,mean)'}")


if __name__ == "__main__":
    main(sys.argv[1:])
