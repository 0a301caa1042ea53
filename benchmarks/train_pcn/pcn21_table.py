"""pcn21: the probe's table (pcn21_probe.py YAMLs): per mode and gain-rate scale, the mean learnt
gain / resolved gain per layer (min-max over seeds) and final test top-1, paired against pin.

    python benchmarks/train_pcn/pcn21_table.py benchmarks/train_pcn/pcn21_probe_L5.yaml \\
        benchmarks/train_pcn/pcn21_probe_L3.yaml
"""

from __future__ import annotations

import sys

import numpy as np
import yaml


def main(paths):
    for path in paths:
        data = yaml.safe_load(open(path))
        runs = data["runs"]
        pin = {r["seed"]: r["top1_per_epoch"][-1] for r in runs if r["mode"] == "pin"}
        print(f"\n{path}: MLP L = {data['depth']}, resolved gains {data['resolved_gain']}, "
              f"{len(pin)} seeds")
        print("| variant | learnt / resolved gain per layer: mean (min-max) | final top-1 | - pin |")
        print("| --- | --- | --- | --- |")
        for mode, scale in dict.fromkeys((r["mode"], r.get("gain_lr_scale", 1.0)) for r in runs):
            rows = [r for r in runs if r["mode"] == mode and r.get("gain_lr_scale", 1.0) == scale]
            ratio = np.array([r["proxy_over_resolved"] for r in rows])
            top = np.array([r["top1_per_epoch"][-1] for r in rows])
            diff = np.array([r["top1_per_epoch"][-1] - pin[r["seed"]] for r in rows])
            gains = " / ".join(f"{m:.3f} ({lo:.3f}-{hi:.3f})" for m, lo, hi in
                               zip(ratio.mean(0), ratio.min(0), ratio.max(0)))
            se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else 0.0
            name = mode if mode != "learn" else f"{mode}, gain rate x {scale:g}"
            print(f"| {name} | {gains} | {top.mean():.2f} ± {top.std(ddof=1):.2f} | "
                  f"{diff.mean():+.2f} ± {se:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
