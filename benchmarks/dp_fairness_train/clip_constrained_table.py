"""The constrained clip default study (stop 42): item-4 figures of near_gap.py results files, per clip.

    python benchmarks/dp_fairness_train/clip_constrained_table.py 3=results/clip42_choosing_clip3.yaml \\
        1=results/clip42_choosing_clip1.yaml

Per data set and clip: the best mean test accuracy among the auto sweep's gamma rows below 1 whose mean test
gap <= Opacus DP-SGD's (near_gap.verdict), its seed sd, the Pareto hypervolume (every gamma row plus the
unconstrained model, box accuracy >= the test part's majority share, gap <= the unconstrained model's gap),
the item-1 figure (the largest test gap - gamma among the gamma rows below 1 whose training rows met gamma,
train_violation <= 0; issue 35's target is <= 0.005), and, for the first two clips given, the difference with the rule's threshold
max(0.10 points, sqrt((sd_a^2 + sd_b^2) / 3)).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from clip_split_table import hypervolume, majority_share  # noqa: E402
from near_gap import verdict  # noqa: E402


def figures(d: dict, majority: float) -> dict:
    v = verdict(d)
    rows = d["ours"]["rows"]
    best = next((r for r in rows if r["gamma"] == v.get("best_gamma")), None)
    unc = d["ours"]["unconstrained"]
    hv = hypervolume([(r["accuracy"], r["dp_gap"]) for r in rows] + [(unc["accuracy"], unc["dp_gap"])],
                     majority, unc["dp_gap"])
    met = [r["dp_gap"] - r["gamma"] for r in rows if r["gamma"] < 1 and r.get("train_violation", 1) <= 0]
    return {"verdict": v, "sd": best["accuracy_sd"] if best else None, "hv": 1e4 * hv,
            "item1": max(met) if met else None}


def main(specs):
    runs = [(clip, yaml.safe_load(Path(path).read_text())["datasets"]) for clip, path in
            (s.split("=", 1) for s in specs)]
    names = [n for n in runs[0][1] if all(n in r and "ours" in r[n] for _, r in runs)]
    for name in names:
        maj = majority_share(name)
        opa = runs[0][1][name]["opacus"]
        print(f"\n{name}: Opacus {opa['accuracy']:.4f} @ {opa['dp_gap']:.4f} (lr {opa['lr_chosen']:g}); "
              f"majority {maj:.4f}")
        got = []
        for clip, data in runs:
            f = figures(data[name], maj)
            v = f["verdict"]
            got.append(f)
            cell = (f"gamma {v['best_gamma']:g}: {v['accuracy']:.4f} @ {v['dp_gap']:.4f} (sd {f['sd']:.4f}), "
                    f"{v['accuracy_minus_opacus_points']:+.2f} points vs Opacus, "
                    f"{'met' if v['item4_met'] else 'missed'}" if v.get("best_gamma") else "no gamma row <= Opacus's gap")
            unc = data[name]["ours"]["unconstrained"]
            item1 = "n/a" if f["item1"] is None else f"{f['item1']:+.4f}"
            print(f"  clip {clip}: {cell}; hypervolume x1e4 {f['hv']:.1f}; item 1 worst test gap - gamma {item1}; unconstrained (clip {unc['clip']:g}) "
                  f"{unc['accuracy']:.4f} @ {unc['dp_gap']:.4f}")
            print("    rows: " + ", ".join(f"{r['gamma']:g}: {r['accuracy']:.4f} @ {r['dp_gap']:.4f}"
                                        for r in data[name]["ours"]["rows"]))
        a, b = got[0], got[1]
        if a["sd"] is not None and b["sd"] is not None:
            diff = 100 * (b["verdict"]["accuracy"] - a["verdict"]["accuracy"])
            thr = max(0.10, 100 * math.sqrt((a["sd"] ** 2 + b["sd"] ** 2) / 3))
            word = "better" if diff > thr else "worse" if diff < -thr else "within noise"
            print(f"  clip {runs[1][0]} - clip {runs[0][0]}: {diff:+.2f} points, threshold {thr:.2f}: {word}")


if __name__ == "__main__":
    main(sys.argv[1:])
