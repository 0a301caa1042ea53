"""The markdown table of clip_split.py results, with the decision figures.

Per data set and --clip-split value: the mean test accuracy @ test DP gap at each gamma, the Pareto
hypervolume of its front (the gamma points plus the shared unconstrained point) in the box accuracy
>= the test set's majority share, gap <= the unconstrained run's gap (larger is better), and whether
some gamma dominates Opacus (accuracy >= and gap <=, item 4).

    python benchmarks/dp_fairness_train/clip_split_table.py results/clip_split_*.yaml
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))


def majority_share(name: str) -> float:
    import tempfile

    import pareto35
    import transfer

    with tempfile.TemporaryDirectory() as tmp:
        if name == "synthetic":
            _, test, _, _, label, _ = pareto35.synthetic(Path(tmp))
        else:
            _, test, _, _, label, _ = transfer.split(name, Path(tmp))
    return float(test[label].value_counts(normalize=True).max())


def hypervolume(points: list[tuple[float, float]], acc_ref: float, gap_ref: float) -> float:
    """Area dominated by (accuracy, gap) points in the box [acc_ref, 1] x [0, gap_ref] (max acc, min gap)."""
    pts = sorted((g, a) for a, g in points if a > acc_ref and g < gap_ref)
    area, best = 0.0, acc_ref
    for i, (g, a) in enumerate(pts):
        best = max(best, a)
        nxt = pts[i + 1][0] if i + 1 < len(pts) else gap_ref
        area += (best - acc_ref) * (nxt - g)
    return area


def main(paths):
    for path in paths:
        data = yaml.safe_load(Path(path).read_text())
        for name, d in data["datasets"].items():
            unc, opa = d["unconstrained"], d.get("opacus")
            maj = majority_share(name)
            print(f"\n{name} ({data['seeds']} seeds; majority share {maj:.4f}; unconstrained "
                  f"{unc['accuracy']:.4f} @ {unc['dp_gap']:.4f}"
                  + (f"; Opacus {opa['accuracy']:.4f} @ {opa['dp_gap']:.4f} (lr {opa['lr_chosen']:g})" if opa else "")
                  + ")\n")
            splits = sorted({v["clip_split"] for v in d["constrained"].values()})
            gammas = sorted({v["gamma"] for v in d["constrained"].values()})
            print("| clip split | " + " | ".join(f"gamma {g:g}" for g in gammas) + " | hypervolume x1e4 | item 4 |")
            print("|---|" + "---|" * (len(gammas) + 2))
            for s in splits:
                rows = [d["constrained"][f"{g} {s}"] for g in gammas]
                cells = [f"{r['accuracy']:.4f} @ {r['dp_gap']:.4f}" for r in rows]
                hv = hypervolume([(r["accuracy"], r["dp_gap"]) for r in rows] + [(unc["accuracy"], unc["dp_gap"])],
                                 maj, unc["dp_gap"])
                dom = [g for g, r in zip(gammas, rows) if opa and r["accuracy"] >= opa["accuracy"]
                       and r["dp_gap"] <= opa["dp_gap"]]
                print(f"| {s} | " + " | ".join(cells) + f" | {1e4 * hv:.1f} | "
                      + (f"met (gamma {', '.join(f'{g:g}' for g in dom)})" if dom else "not met") + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
