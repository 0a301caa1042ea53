"""Markdown table of study.py results: python summarise_study.py results/study/*.yaml"""

import sys

import yaml

print("| split | variant | epochs | time NMSE (floor) | ratio | amplitude NMSE (floor) | ratio | "
      "train-fit time NMSE | train s |")
print("|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    data = yaml.safe_load(open(path))
    floor = data["kmeans_floor"]
    best = min(floor["amplitude_nmse_signal"], floor["amplitude_nmse"])
    for name, v in data["variants"].items():
        t, a = v["test"]["time_nmse"], v["test"]["amplitude_nmse_signal"]
        print(f"| {data['split']} | {name} {v['model'] or ''} {', '.join(f'{k}={x}' for k, x in v['train'].items() if k in ('contrastive', 'signal_weight'))} "
              f"| {v['train']['epochs']} | {t:.3f} ({floor['time_nmse']:.3f}) | {t / floor['time_nmse']:.2f} "
              f"| {a:.3f} ({best:.3f}) | {a / best:.2f} | {v['train_fit']['time_nmse']:.3f} | {v['train_seconds']:.0f} |")
