"""Section 24's rule on its choosing runs: per case the masked avatars against today's default
(masks_mesh_auto, same process), then the conditions per candidate and the verdict. Reads
study_meshbones_{hexapod,quadruped,bird}_{16,4}.yaml beside this file (``held`` as the first argument:
study_meshbones_raptor_{16,4}.yaml, the held-out cases, tables and conditions for information only);
Markdown on stdout.

    python benchmarks/fit_avatar/rule_meshbones.py
    python benchmarks/fit_avatar/rule_meshbones.py held

A candidate is adopted as the default ``--masks-in`` if, over the 6 choosing cases: (1) its per-vertex error
is <= -25 % vs the keypoint-only avatar of the same process in more cases than today's default's; (2) its
track MPJPE <= 1.02 x today's in every case; (3) its per-vertex error <= 1.02 x today's in every case; (4) its
masked shape CPU at 12 keyframes x 16 cams <= 60 s in each of the three 16-camera cases. Several passing: the
one meeting -25 % in more cases, then the lower mean per-vertex ratio. None: no default changes.
Bone-length error is reported, not a condition.
"""

from __future__ import annotations

import sys

import rule_meshsigma
from rule_meshsigma import load_runs, print_cases

TODAY = "masks_mesh_auto"
CANDIDATES = ("masks_mesh_bones_auto", "masks_spanned_auto")
SHOWN = ("masks_mesh_only_auto",)   # section 19's A (masks_in mesh), for reference: not a candidate


def conditions(runs: dict, cases: list, cand: str) -> tuple[list[bool], dict]:
    """(pass of (1)-(4), the figures) of one candidate over ``cases``."""
    kv = [runs[k][cand]["vertex_error_mm"] / runs[k]["keypoints"]["vertex_error_mm"] - 1 for k in cases]
    kv0 = [runs[k][TODAY]["vertex_error_mm"] / runs[k]["keypoints"]["vertex_error_mm"] - 1 for k in cases]
    vr = [runs[k][cand]["vertex_error_mm"] / runs[k][TODAY]["vertex_error_mm"] for k in cases]
    tr = [runs[k][cand]["track_mpjpe_mm"] / runs[k][TODAY]["track_mpjpe_mm"] for k in cases]
    cpu16 = [runs[k][cand]["shape_cpu_s"] for k in cases if k[1] == 16]
    met = sum(x <= -0.25 for x in kv)
    met0 = sum(x <= -0.25 for x in kv0)
    bones = sum(runs[k][cand]["bone_error_mean"] for k in cases) / len(cases)
    bones0 = sum(runs[k][TODAY]["bone_error_mean"] for k in cases) / len(cases)
    bonesk = sum(runs[k]["keypoints"]["bone_error_mean"] for k in cases) / len(cases)
    ok = [met > met0, max(tr) <= 1.02, max(vr) <= 1.02, max(cpu16, default=0.0) <= 60.0]
    return ok, {"kv": kv, "kv0": kv0, "met": met, "met0": met0, "vr": vr, "mean_v": sum(vr) / len(vr), "tr": tr,
                "cpu16": cpu16, "bones": bones, "bones0": bones0, "bonesk": bonesk}


def main(which: str = "choose"):
    held = which == "held"
    if held:
        rule_meshsigma.CASES[:] = [("raptor", c) for c in (16, 4)]
    cases = list(rule_meshsigma.CASES)
    runs = load_runs("study_meshbones")
    print_cases(runs, TODAY, "today's default (mesh-auto)")
    print()
    if len(runs) < len(cases):
        print(f"only {len(runs)} of {len(cases)} cases finished: no verdict")
        return
    mark = lambda b: "pass" if b else "**fail**"  # noqa: E731
    print("| avatar | masks vs keypoint-only per vertex (cases <= -25 %) | (1) more cases than today's | "
          "(2) track / today's, each <= 1.02 | (3) vertex / today's, each <= 1.02 | (4) shape CPU at 12 x 16 <= 60 s | "
          "bone-length mean error (keypoint-only / today's / it) | passes |")
    print("|---|---|---|---|---|---|---|---|")
    verdicts = {}
    for cand in CANDIDATES + SHOWN:
        if not all(cand in runs[k] for k in cases):
            print(f"| {cand} | not run | | | | | | |")
            continue
        ok, f = conditions(runs, cases, cand)
        if cand in CANDIDATES:
            verdicts[cand] = (all(ok), f["met"], f["mean_v"])
        print(f"| {cand}{'' if cand in CANDIDATES else ' (reference)'} | "
              f"{' / '.join(f'{100 * x:+.1f}' for x in f['kv'])} % ({f['met']} of {len(cases)}) | "
              f"{f['met']} vs {f['met0']} ({mark(ok[0])}) | "
              f"{' / '.join(f'{x:.3f}' for x in f['tr'])}, max {max(f['tr']):.3f} ({mark(ok[1])}) | "
              f"{' / '.join(f'{x:.3f}' for x in f['vr'])}, max {max(f['vr']):.3f}, mean {f['mean_v']:.3f} ({mark(ok[2])}) | "
              f"{' / '.join(f'{x:.1f}' for x in f['cpu16'])} s ({mark(ok[3])}) | "
              f"{100 * f['bonesk']:.2f} / {100 * f['bones0']:.2f} / {100 * f['bones']:.2f} % | "
              f"{'yes' if all(ok) else 'no'} |")
    kv0 = conditions(runs, cases, CANDIDATES[0])[1]["kv0"] if all(CANDIDATES[0] in runs[k] for k in cases) else []
    print()
    print(f"today's default (masks_mesh_auto) vs keypoint-only: {' / '.join(f'{100 * x:+.1f}' for x in kv0)} % "
          f"({sum(x <= -0.25 for x in kv0)} of {len(cases)} at <= -25 %)")
    passing = [c for c, v in verdicts.items() if v[0]]
    best = sorted(passing, key=lambda c: (-verdicts[c][1], verdicts[c][2]))
    label = "held-out conditions (information, no verdict)" if held else "verdict"
    print(f"{label}: " + (f"adopt {best[0]} (passing: {', '.join(best)})" if best else "no candidate passes: no default changes"))


if __name__ == "__main__":
    main(*sys.argv[1:])
