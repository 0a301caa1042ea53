"""Validation time-NMSE ratios to the same-seed k-means floor per (split, seed) cell, for variants
spread over several study.py files (the floor is cached per split, codebook size and seed, so files
of one cell share it):

    python benchmarks/tokenize_eeg/summarise_cells.py e40,b8,b32 benchmarks/tokenize_eeg/results/study/[AB]_*e*_s*.yaml
"""

import sys
from collections import defaultdict

import yaml

names = sys.argv[1].split(",")
cells = defaultdict(dict)
for path in sys.argv[2:]:
    d = yaml.safe_load(open(path))
    for name, v in d["variants"].items():
        if name in names:
            cells[(d["split"], d["seed"])][name] = v["test"]["time_nmse"] / d["kmeans_floor"]["time_nmse"]
print("| split | seed | " + " | ".join(f"{n} time ratio" for n in names) + " |")
print("|---|---|" + "---|" * len(names))
for (split, seed), r in sorted(cells.items()):
    print(f"| {split} | {seed} | " + " | ".join(f"{r[n]:.3f}" if n in r else "-" for n in names) + " |")
ref = names[0]
for name in names[1:]:
    pairs = [(r[ref], r[name]) for r in cells.values() if ref in r and name in r]
    lower = sum(b < a for a, b in pairs)
    print(f"\n{name} vs {ref}: lower in {lower}/{len(pairs)} cells; mean {sum(a for a, _ in pairs) / len(pairs):.3f} "
          f"({ref}) vs {sum(b for _, b in pairs) / len(pairs):.3f} ({name})")
