"""Section 25's rule on its runs: ``masks_in`` auto (today's default bones,mesh and mesh-bones, both fitted
without the held-out camera, the one better on that camera kept) against today's default. Reads
study_auto_{hexapod,quadruped,bird}_{16,4}.yaml beside this file (``held``: study_auto_raptor2_{16,4}.yaml,
the held-out cases, information only; ``look``: study_auto_look_*.yaml, the first look: does the held-out
camera rank the two candidates as the truth does?). Markdown on stdout.

    python benchmarks/fit_avatar/rule_auto.py look
    python benchmarks/fit_avatar/rule_auto.py
    python benchmarks/fit_avatar/rule_auto.py held

Two forms of auto are judged, from one ``masks_auto`` variant per process: **keep** (the chosen candidate's fit
without the camera is the avatar; FitConfig.auto_refit false) and **refit** (the chosen one refitted on every
camera: its figures are the same process's full-camera row of that variant, masks_mesh_auto or
masks_mesh_bones_auto, and its CPU is auto's plus that row's). A form is adopted if over the 6 choosing cases:
(1) per-vertex error <= -25 % vs the keypoint-only avatar in at least 5 cases; (2) track MPJPE <= 1.02 x today's
(masks_mesh_auto, every camera, same process) in every case; (3) per-vertex error <= 1.02 x today's in every
case; (4) its whole shape CPU (both fits, and the refit) at 12 keyframes x 16 cams <= 60 s in each of the three
16-camera cases; (5) the choice follows MEASURE on the recorded scores in every case (deterministic selection
is tested separately: tests/tools/test_avatar_template.py). Both passing: keep (cheaper).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CASES = [(t, c) for t in ("hexapod", "quadruped", "bird") for c in (16, 4)]
TODAY = "masks_mesh_auto"
FULL = {"bones,mesh": "masks_mesh_auto", "mesh-bones": "masks_mesh_bones_auto"}
MEASURE = "keypoints"   # the rule's held-out measure, fixed before the deciding runs (FitConfig.auto_measure)
KEY = {"iou": ("iou", -1.0), "keypoints": ("keypoints_px_median", 1.0)}


def load(pattern: str, cases) -> dict:
    runs = {}
    for t, c in cases:
        path = HERE / pattern.format(t=t, c=c)
        data = yaml.safe_load(path.read_text()) if path.exists() else None
        if data:
            runs[(t, c)] = data["variants"]
    return runs


def choose(auto: dict, measure: str) -> str:
    key, sign = KEY[measure]
    order = list(FULL)
    return min(order, key=lambda m: (sign * auto["scores"][m][key], order.index(m)))


def look(runs: dict) -> None:
    """Per case: the candidates' truth (fits without the held-out camera) and both held-out measures."""
    print("| case | held-out camera | candidate | held-out IoU | held-out keypoints median px | vertex mm | track mm |")
    print("|---|---|---|---|---|---|---|")
    agree = {m: [0, 0] for m in KEY}
    for (t, c), v in runs.items():
        a = v["masks_auto"]
        for m in FULL:
            s, tr = a["auto"]["scores"][m], a["candidates"][m]
            print(f"| {t} {c} | {a['auto']['camera']} | {m} | {s['iou']:.4f} | {s['keypoints_px_median']:.3f} | "
                  f"{tr['vertex_error_mm']:.2f} | {tr['track_mpjpe_mm']:.3f} |")
        cand = a["candidates"]
        best_v = min(FULL, key=lambda m: cand[m]["vertex_error_mm"])
        best_t = min(FULL, key=lambda m: cand[m]["track_mpjpe_mm"])
        for meas in KEY:
            ch = choose(a["auto"], meas)
            agree[meas][0] += ch == best_v
            agree[meas][1] += ch == best_t
            print(f"|  |  | {meas} picks {ch} | | | truth: {best_v} on vertex | {best_t} on track |")
    for meas, (av, at) in agree.items():
        print(f"\n{meas}: agrees with the surface ranking in {av} of {len(runs)}, with the track ranking in {at} of {len(runs)}")


def forms(v: dict) -> dict:
    """{form: (vertex, track, cpu)} of auto keep / refit in one case."""
    a = v["masks_auto"]
    chosen = a["auto"]["chosen"]
    full = v[FULL[chosen]]
    return {"keep": (a["vertex_error_mm"], a["track_mpjpe_mm"], a["shape_cpu_s"]),
            "refit": (full["vertex_error_mm"], full["track_mpjpe_mm"], a["shape_cpu_s"] + full["shape_cpu_s"])}


def main(which: str = "choose"):
    if which == "look":
        runs = load("study_auto_look_{t}_{c}.yaml", [(t, c) for t in ("hexapod", "quadruped", "bird", "raptor")
                                                     for c in (16, 4)])
        look(runs)
        return
    cases = [("raptor2", 16), ("raptor2", 4)] if which == "held" else CASES
    runs = load("study_auto_{t}_{c}.yaml", cases)
    print("| case | held-out camera | IoU bones,mesh / mesh-bones | keypoints px bones,mesh / mesh-bones | chosen "
          "| candidates' truth without the camera: vertex / track | keypoint-only vertex | today's vertex / track / CPU "
          "| mesh-bones (every camera) vertex / track / CPU | auto keep vertex / track / CPU | auto refit vertex / track / CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (t, c), v in runs.items():
        a = v["masks_auto"]
        s = a["auto"]["scores"]
        f = forms(v)
        cand = a["candidates"]
        print(f"| {t} {c} | {a['auto']['camera']} | {s['bones,mesh']['iou']:.4f} / {s['mesh-bones']['iou']:.4f} | "
              f"{s['bones,mesh']['keypoints_px_median']:.3f} / {s['mesh-bones']['keypoints_px_median']:.3f} | "
              f"{a['auto']['chosen']} | "
              + " ; ".join(f"{m} {cand[m]['vertex_error_mm']:.2f} / {cand[m]['track_mpjpe_mm']:.3f}" for m in FULL)
              + f" | {v['keypoints']['vertex_error_mm']:.2f} | {v[TODAY]['vertex_error_mm']:.2f} / "
              f"{v[TODAY]['track_mpjpe_mm']:.3f} / {v[TODAY]['shape_cpu_s']:.1f} | "
              f"{v[FULL['mesh-bones']]['vertex_error_mm']:.2f} / {v[FULL['mesh-bones']]['track_mpjpe_mm']:.3f} / "
              f"{v[FULL['mesh-bones']]['shape_cpu_s']:.1f} | "
              + " | ".join(f"{x[0]:.2f} / {x[1]:.3f} / {x[2]:.1f}" for x in f.values()) + " |")
    print()
    if len(runs) < len(cases):
        print(f"only {len(runs)} of {len(cases)} cases finished: no verdict")
        return
    mark = lambda b: "pass" if b else "**fail**"  # noqa: E731
    print("| form | vs keypoint-only per vertex (cases <= -25 %) | (1) >= 5 of 6 | (2) track / today's, each <= 1.02 | "
          "(3) vertex / today's, each <= 1.02 | (4) shape CPU at 12 x 16 <= 60 s | (5) choice follows "
          f"{MEASURE} | passes |")
    print("|---|---|---|---|---|---|---|---|")
    verdict = []
    need = max(1, len(cases) - 1)
    for form in ("keep", "refit"):
        kv = [forms(runs[k])[form][0] / runs[k]["keypoints"]["vertex_error_mm"] - 1 for k in cases]
        tr = [forms(runs[k])[form][1] / runs[k][TODAY]["track_mpjpe_mm"] for k in cases]
        vr = [forms(runs[k])[form][0] / runs[k][TODAY]["vertex_error_mm"] for k in cases]
        cpu16 = [forms(runs[k])[form][2] for k in cases if k[1] == 16]
        follows = all(choose(runs[k]["masks_auto"]["auto"], MEASURE) == runs[k]["masks_auto"]["auto"]["chosen"]
                      for k in cases)
        met = sum(x <= -0.25 for x in kv)
        ok = [met >= need, max(tr) <= 1.02, max(vr) <= 1.02, max(cpu16) <= 60.0, follows]
        if all(ok):
            verdict.append(form)
        print(f"| {form} | {' / '.join(f'{100 * x:+.1f}' for x in kv)} % ({met} of {len(cases)}) | {mark(ok[0])} | "
              f"{' / '.join(f'{x:.3f}' for x in tr)}, max {max(tr):.3f} ({mark(ok[1])}) | "
              f"{' / '.join(f'{x:.3f}' for x in vr)}, max {max(vr):.3f} ({mark(ok[2])}) | "
              f"{' / '.join(f'{x:.1f}' for x in cpu16)} s ({mark(ok[3])}) | {mark(ok[4])} | "
              f"{'yes' if all(ok) else 'no'} |")
    kv0 = [runs[k][TODAY]["vertex_error_mm"] / runs[k]["keypoints"]["vertex_error_mm"] - 1 for k in cases]
    print(f"\ntoday's default vs keypoint-only: {' / '.join(f'{100 * x:+.1f}' for x in kv0)} % "
          f"({sum(x <= -0.25 for x in kv0)} of {len(cases)} at <= -25 %)")
    label = "held-out conditions (information, no verdict)" if which == "held" else "verdict"
    print(f"{label}: " + (f"adopt auto ({verdict[0]})" if verdict else "neither form passes: no default changes"))


if __name__ == "__main__":
    main(*sys.argv[1:])
