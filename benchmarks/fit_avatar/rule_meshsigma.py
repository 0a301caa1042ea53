"""Section 16's rule on its choosing runs: per case the masked avatars against today's masks (same
process), then conditions (1)-(4) per candidate and the verdict. Reads
study_meshsigma_{hexapod,quadruped,bird}_{16,4}.yaml beside this file; Markdown on stdout.

    python benchmarks/fit_avatar/rule_meshsigma.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CASES = [(t, c) for t in ("hexapod", "quadruped", "bird") for c in (16, 4)]
CANDIDATES = ("masks_mesh_anneal", "masks_mesh_auto")


def load_runs(prefix: str) -> dict:
    """{(template, cams): variants} of the finished runs ``<prefix>_<template>_<cams>.yaml`` beside this file."""
    runs = {}
    for t, c in CASES:
        path = HERE / f"{prefix}_{t}_{c}.yaml"
        data = yaml.safe_load(path.read_text()) if path.exists() else None
        if data:   # a case still running has an empty file
            runs[(t, c)] = data["variants"]
    return runs


def print_cases(runs: dict, base: str = "masks", label: str = "today's masks") -> None:
    """One Markdown row per case and avatar; the avatars other than keypoints and ``base`` against ``base``."""
    print("| case | avatar | sigma bones / mesh | bone lengths mean (spanned / unspanned) | global scale | "
          f"track mm | vertex mm (vs keypoint-only) | shape CPU s | vs {label} |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (t, c), v in runs.items():
        kp = v["keypoints"]["vertex_error_mm"]
        for name, r in v.items():
            st = r.get("sigma_stages") or {}
            mesh = st.get("mesh")
            mesh = f"{mesh[0]:.3g} -> {mesh[1]:.4f}" if isinstance(mesh, list) else (
                "" if mesh is None else f"{mesh:.4f}")
            bones = st.get("bones")
            sig = (f"{bones:.3g}" if bones is not None else "none") + f" / {mesh}" if st else ""
            rel = ""
            if name != base and name != "keypoints" and base in v:
                m = v[base]
                rel = (f"vertex x{r['vertex_error_mm'] / m['vertex_error_mm']:.3f} cpu "
                       f"x{r['shape_cpu_s'] / m['shape_cpu_s']:.3f} track x{r['track_mpjpe_mm'] / m['track_mpjpe_mm']:.3f}")
            vs_kp = "" if name == "keypoints" else f" ({100 * (r['vertex_error_mm'] / kp - 1):+.1f} %)"
            print(f"| {t} {c} | {name} | {sig} | {100 * r['bone_error_mean']:.2f} % "
                  f"({100 * r['bone_error_spanned']:.2f} / {100 * r['bone_error_unspanned']:.2f}) | "
                  f"{100 * r['scale_error']:+.1f} % | {r['track_mpjpe_mm']:.3f} | {r['vertex_error_mm']:.2f}{vs_kp} | "
                  f"{r['shape_cpu_s']:.1f} | {rel} |")


def main(prefix: str = "study_meshsigma"):
    runs = load_runs(prefix)
    print_cases(runs)
    print()
    if len(runs) < len(CASES):
        print(f"only {len(runs)} of {len(CASES)} cases finished: no verdict")
        return
    verdicts = {}
    print("| candidate | (1) vertex / today's, each <= 1.02, mean < 1 | (2) track / today's, each <= 1.02 | "
          "(3) shape CPU sum <= 1.05 x today's | (4) mean abs global scale error not above today's | passes |")
    print("|---|---|---|---|---|---|")
    for cand in CANDIDATES:
        vr = [runs[k][cand]["vertex_error_mm"] / runs[k]["masks"]["vertex_error_mm"] for k in CASES]
        tr = [runs[k][cand]["track_mpjpe_mm"] / runs[k]["masks"]["track_mpjpe_mm"] for k in CASES]
        cpu = sum(runs[k][cand]["shape_cpu_s"] for k in CASES)
        cpu0 = sum(runs[k]["masks"]["shape_cpu_s"] for k in CASES)
        sc = sum(abs(runs[k][cand]["scale_error"]) for k in CASES) / len(CASES)
        sc0 = sum(abs(runs[k]["masks"]["scale_error"]) for k in CASES) / len(CASES)
        mean_v = sum(vr) / len(vr)
        ok = [max(vr) <= 1.02 and mean_v < 1, max(tr) <= 1.02, cpu <= 1.05 * cpu0, sc <= sc0]
        verdicts[cand] = (all(ok), mean_v)
        mark = lambda b: "pass" if b else "**fail**"  # noqa: E731
        print(f"| {cand} | {' / '.join(f'{x:.3f}' for x in vr)}: mean {mean_v:.3f}, max {max(vr):.3f} ({mark(ok[0])}) | "
              f"{' / '.join(f'{x:.3f}' for x in tr)}, max {max(tr):.3f} ({mark(ok[1])}) | "
              f"{cpu0:.1f} -> {cpu:.1f} s, x{cpu / cpu0:.3f} ({mark(ok[2])}) | {100 * sc0:.2f} -> {100 * sc:.2f} % "
              f"({mark(ok[3])}) | {'yes' if all(ok) else 'no'} |")
    passing = [c for c in CANDIDATES if verdicts[c][0]]
    print()
    print("verdict: " + (f"adopt {min(passing, key=lambda c: verdicts[c][1])}" if passing else "no default changes"))


if __name__ == "__main__":
    main(*sys.argv[1:])
