"""Section 19's rule on its choosing runs: per case the masked avatars against today's default
(masks_mesh_auto, same process), then conditions (1)-(5) per candidate and the verdict. Reads
study_meshonly_{hexapod,quadruped,bird}_{16,4}.yaml beside this file (C from study_meshonly_c_*.yaml
if it was run); Markdown on stdout.

    python benchmarks/fit_avatar/rule_meshonly.py
"""

from __future__ import annotations

import sys

from rule_meshsigma import CASES, load_runs, print_cases

TODAY = "masks_mesh_auto"
CANDIDATES = ("masks_mesh_only_auto", "masks_mesh_only_auto_m100")


def conditions(runs: dict, cand: str) -> tuple[list[bool], dict]:
    """(pass of (1)-(5), the figures) of one candidate over the 6 cases."""
    kv = [runs[k][cand]["vertex_error_mm"] / runs[k]["keypoints"]["vertex_error_mm"] - 1 for k in CASES]
    vr = [runs[k][cand]["vertex_error_mm"] / runs[k][TODAY]["vertex_error_mm"] for k in CASES]
    tr = [runs[k][cand]["track_mpjpe_mm"] / runs[k][TODAY]["track_mpjpe_mm"] for k in CASES]
    bones = sum(runs[k][cand]["bone_error_mean"] for k in CASES) / len(CASES)
    bones0 = sum(runs[k][TODAY]["bone_error_mean"] for k in CASES) / len(CASES)
    cpu = sum(runs[k][cand]["shape_cpu_s"] for k in CASES)
    cpu0 = sum(runs[k][TODAY]["shape_cpu_s"] for k in CASES)
    mean_v = sum(vr) / len(vr)
    ok = [max(kv) <= -0.25, mean_v <= 1.0 and max(vr) <= 1.15, max(tr) <= 1.02, bones <= bones0, cpu <= 1.05 * cpu0]
    return ok, {"kv": kv, "vr": vr, "mean_v": mean_v, "tr": tr, "bones": bones, "bones0": bones0,
                "cpu": cpu, "cpu0": cpu0}


def main(prefix: str = "study_meshonly"):
    runs = load_runs(prefix)
    for k, v in load_runs(prefix + "_c").items():   # C, if run, in its own processes (with keypoints and today's)
        runs.setdefault(k, {}).update({n: r for n, r in v.items() if n == "masks_mesh_only_auto_m100"})
    print_cases(runs, TODAY, "today's default (mesh-auto)")
    print()
    if len(runs) < len(CASES):
        print(f"only {len(runs)} of {len(CASES)} cases finished: no verdict")
        return
    mark = lambda b: "pass" if b else "**fail**"  # noqa: E731
    print("| candidate | (1) masks vs keypoint-only per vertex, each <= -25 % | (2) vertex / today's, mean <= 1.00, "
          "each <= 1.15 | (3) track / today's, each <= 1.02 | (4) bone-length mean error over the 6 not above today's | "
          "(5) shape CPU sum <= 1.05 x today's | passes |")
    print("|---|---|---|---|---|---|---|")
    verdicts = {}
    for cand in CANDIDATES:
        if not all(cand in runs[k] for k in CASES):
            print(f"| {cand} | not run | | | | | |")
            continue
        ok, f = conditions(runs, cand)
        verdicts[cand] = (all(ok), f["mean_v"], ok, f)
        print(f"| {cand} | {' / '.join(f'{100 * x:+.1f}' for x in f['kv'])} % ({mark(ok[0])}) | "
              f"{' / '.join(f'{x:.3f}' for x in f['vr'])}: mean {f['mean_v']:.3f}, max {max(f['vr']):.3f} ({mark(ok[1])}) | "
              f"{' / '.join(f'{x:.3f}' for x in f['tr'])}, max {max(f['tr']):.3f} ({mark(ok[2])}) | "
              f"{100 * f['bones0']:.2f} -> {100 * f['bones']:.2f} % ({mark(ok[3])}) | "
              f"{f['cpu0']:.1f} -> {f['cpu']:.1f} s, x{f['cpu'] / f['cpu0']:.3f} ({mark(ok[4])}) | "
              f"{'yes' if all(ok) else 'no'} |")
    print()
    a = verdicts.get(CANDIDATES[0])
    if a is not None and not a[0]:
        misses = [x for x in a[3]["kv"] if x > -0.25]
        wants_c = len(misses) == 1 and misses[0] <= -0.24
        print(f"C ({CANDIDATES[1]}) is {'called for' if wants_c else 'not called for'} by the rule: A misses -25 % "
              f"in {len(misses)} case(s)" + (f" (by {100 * (misses[0] + 0.25):.2f} points)" if len(misses) == 1 else ""))
        if not wants_c:
            verdicts.pop(CANDIDATES[1], None)
    else:
        verdicts.pop(CANDIDATES[1], None)
    passing = [c for c, v in verdicts.items() if v[0]]
    print("verdict: " + (f"adopt {min(passing, key=lambda c: verdicts[c][1])}" if passing else "no default changes"))


if __name__ == "__main__":
    main(*sys.argv[1:])
