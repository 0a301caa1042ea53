"""The epochs decision rule of RESULTS.md ("Study: training length") applied to study.py's files:

    python benchmarks/tokenize_eeg/decide_epochs.py benchmarks/tokenize_eeg/results/study/[AB]_epochs_s*.yaml

A cell = (split, seed); its figure = validation time NMSE / the same-seed k-means floor's. Prints a
markdown table of the cells and whether rules 1 (lower in >= 4 of 6 cells) and 2 (mean lower on A
and on B) hold for the longer run; rule 3 (training time) is measured with the installed command.
"""

import sys
from collections import defaultdict

import yaml

OLD, NEW = sys.argv[1:3] if sys.argv[1].startswith("e") else ("e20", "e40")
paths = [p for p in sys.argv[1:] if p.endswith(".yaml")]
cells, means = [], defaultdict(lambda: defaultdict(list))
print(f"| split | seed | floor time / amp | {OLD} time ratio | {NEW} time ratio | {OLD} amp ratio | "
      f"{NEW} amp ratio | {OLD} / {NEW} train s |")
print("|---|---|---|---|---|---|---|---|")
for path in sorted(paths):
    d = yaml.safe_load(open(path))
    floor = d["kmeans_floor"]
    amp_floor = min(floor["amplitude_nmse_signal"], floor["amplitude_nmse"])
    v = d["variants"]
    t = {k: v[k]["test"]["time_nmse"] / floor["time_nmse"] for k in (OLD, NEW)}
    a = {k: v[k]["test"]["amplitude_nmse_signal"] / amp_floor for k in (OLD, NEW)}
    cells.append(t[NEW] < t[OLD])
    for k in (OLD, NEW):
        means[d["split"]][k].append(t[k])
        means[d["split"]][k + "_amp"].append(a[k])
    print(f"| {d['split']} | {d['seed']} | {floor['time_nmse']:.3f} / {amp_floor:.3f} | {t[OLD]:.3f} | "
          f"{t[NEW]:.3f} | {a[OLD]:.3f} | {a[NEW]:.3f} | {v[OLD]['train_seconds']:.0f} / "
          f"{v[NEW]['train_seconds']:.0f} |")
mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
for split, m in sorted(means.items()):
    print(f"\n{split}: mean time ratio {OLD} {mean(m[OLD]):.3f} -> {NEW} {mean(m[NEW]):.3f}; "
          f"amplitude {mean(m[OLD + '_amp']):.3f} -> {mean(m[NEW + '_amp']):.3f} ({len(m[OLD])} seeds)")
allo = [x for m in means.values() for x in m[OLD]]
alln = [x for m in means.values() for x in m[NEW]]
print(f"\nall cells: mean time ratio {mean(allo):.3f} -> {mean(alln):.3f}")
rule1 = sum(cells) >= 4
rule2 = all(mean(m[NEW]) < mean(m[OLD]) for m in means.values()) and len(means) == 2
print(f"rule 1: {NEW} lower in {sum(cells)}/{len(cells)} cells (need >= 4): {rule1}")
print(f"rule 2: mean lower on A and on B: {rule2}")
