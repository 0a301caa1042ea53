"""Issue 35, the constrained path's cost at a loose gamma: one row per near_gap.py results file.

Each row: the setting (the file's sweep options), the gamma rows' mean test accuracy @ gap (seed sd), the
planned steps, and the sweep's own unconstrained private model, so each setting's gamma-1 row reads against
the unconstrained run of the same command.

    python benchmarks/dp_fairness_train/cost_table.py TAG=results/cost35_parkinsons_TAG.yaml ...
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml


def main(argv):
    print("| table | setting | sweep options | gamma | steps | acc @ gap (acc sd) | unconstrained acc @ gap |")
    print("|---|---|---|---|---|---|---|")
    for item in argv:
        tag, path = item.split("=", 1)
        d = yaml.safe_load(Path(path).read_text())
        for name, v in d["datasets"].items():
            o = v["ours"]
            u = o["unconstrained"]
            opts = (f"--clip {o['clip']} " if o.get("clip") not in (None, "default") else "") + o.get("sweep_args", "")
            for r in o["rows"]:
                print(f"| {name} | {tag} | `{opts.strip() or '(defaults)'}` | {r['gamma']:g} | {r['steps']} | "
                      f"{r['accuracy']:.4f} @ {r['dp_gap']:.4f} ({r.get('accuracy_sd', 0):.4f}) | "
                      f"{u['accuracy']:.4f} @ {u['dp_gap']:.4f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
