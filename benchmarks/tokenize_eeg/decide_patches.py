"""The eeg21 study's rule (RESULTS.md "Study: more temporal context per window (--patches)") applied to
study.py's files:

    python benchmarks/tokenize_eeg/decide_patches.py benchmarks/tokenize_eeg/results/study/[AB]_amphead2_s[01].yaml \
        benchmarks/tokenize_eeg/results/study/[AB]_patches*_s[01].yaml

The reference is eeg20's ``adet`` (today's defaults, 4 patches); every other variant is a candidate. A cell =
(split, seed); each variant's ratios are to the k-means floor of its own file (fitted on the same windows'
patches: a floor per window length). Last epoch only. A candidate passes if its mean time ratio is lower by
>= 0.03 and lower in >= 3 of 4 cells, its mean tokens-only amplitude ratio is up by <= 0.03, and its mean
training CPU is <= 30 min (the event-window check is run separately, through the command).
Of the passing candidates the one with the lowest mean time ratio is adopted.
"""

import sys
from collections import defaultdict

import yaml

BASE = "adet"
cells = defaultdict(dict)  # (split, seed) -> name -> (time ratio, amp ratio, cpu s, patches, floor time)
for path in sys.argv[1:]:
    d = yaml.safe_load(open(path))
    f = d["kmeans_floor"]
    amp_floor = min(f["amplitude_nmse_signal"], f["amplitude_nmse"])
    for name, v in d["variants"].items():
        cells[(d["split"], d["seed"])][name] = (v["test"]["time_nmse"] / f["time_nmse"],
                                                v["test"]["amplitude_nmse_signal"] / amp_floor,
                                                v["train_cpu_seconds"], d.get("patches", 4), f["time_nmse"],
                                                v["steps"]["train"])
keys = sorted(cells)
names = []
for c in cells.values():
    names += [n for n in c if n not in names]
mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
print("| variant | patches | " + " | ".join(f"{s}{seed} time / amp (floor time)" for s, seed in keys)
      + " | mean time | mean amp | mean CPU s | steps |")
print("|---|---|" + "---|" * (len(keys) + 4))
for n in names:
    got = [cells[k].get(n) for k in keys]
    if any(g is None for g in got):
        print(f"| {n} | cells missing: {[k for k, g in zip(keys, got) if g is None]} |")
        continue
    print(f"| {n} | {got[0][3]} | " + " | ".join(f"{g[0]:.3f} / {g[1]:.3f} ({g[4]:.3f})" for g in got)
          + f" | {mean([g[0] for g in got]):.3f} | {mean([g[1] for g in got]):.3f} | "
          f"{mean([g[2] for g in got]):.0f} | {got[0][5]} |")
print()
base = [cells[k][BASE] for k in keys]
passing = []
for n in names:
    got = [cells[k].get(n) for k in keys]
    if n == BASE or any(g is None for g in got):
        continue
    drop = mean([b[0] for b in base]) - mean([g[0] for g in got])
    lower = sum(g[0] < b[0] for g, b in zip(got, base))
    amp = mean([g[1] for g in got]) - mean([b[1] for b in base])
    cpu = mean([g[2] for g in got])
    ok = [drop >= 0.03, lower >= 3, amp <= 0.03, cpu <= 1800]
    if all(ok):
        passing.append((mean([g[0] for g in got]), n))
    print(f"{n}: time drop {drop:+.3f} (1: {ok[0]}), lower in {lower}/{len(keys)} (2: {ok[1]}), amp {amp:+.3f} "
          f"(3: {ok[2]}), CPU {cpu:.0f} s = {cpu / mean([b[2] for b in base]):.2f}x base (4: {ok[3]}) -> "
          f"{'PASSES' if all(ok) else 'fails'}")
print(f"adopted (if the event-window check passes): {min(passing)[1]} (mean time ratio {min(passing)[0]:.3f})"
      if passing else "adopted: none (no candidate passes; no default changes)")
