"""track's Adam steps per window, chosen on the Fox (the choosing set): each clip seen by each ring
of cameras (2 px noise, 20 % dropout, 3 % outliers, no masks), one keypoint-only avatar per clip and
rig, then track with every step count against the same views, triangulation and avatar. The
hexapod (held out) is run with ``hexapod.py --track-steps``. YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/study_track_steps.py --steps 120,240,360 > benchmarks/fit_avatar/study_track_steps.yaml
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from study_temporal import FOX, fox_clip, load_fox  # noqa: E402

from cortexkit.tools.avatar.fit import FitConfig, fit_avatar_shape, track_sequence  # noqa: E402
from cortexkit.tools.avatar.metrics import model_metrics  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="120,240", help="track steps per window, comma-separated")
    ap.add_argument("--clips", default="Walk,Run,Survey")
    ap.add_argument("--cams", default="16,6", help="ring sizes, comma-separated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fox", default=str(FOX))
    args = ap.parse_args()
    torch.set_num_threads(1)
    steps = [int(s) for s in args.steps.split(",")]
    mesh, tpl = load_fox(args.fox)
    out = {"seed": args.seed, "steps": steps, "runs": {}}
    for n_cams in [int(c) for c in args.cams.split(",")]:
        for clip in args.clips.split(","):
            cams, syn, obs, tri_mpjpe = fox_clip(tpl, mesh, clip, n_cams, args.seed)
            frames = len(syn.keypoints)
            row = {"frames": int(frames), "triangulate_mpjpe_mm": tri_mpjpe}
            t0 = time.process_time()
            shape = fit_avatar_shape(tpl, obs, FitConfig(silhouettes=False)).shape
            row["shape_cpu_s"] = time.process_time() - t0
            for n in steps:
                t0 = time.process_time()
                pose = track_sequence(tpl, shape, obs, FitConfig(silhouettes=False, track_steps=n)).pose
                cpu = (time.process_time() - t0) / frames
                m = model_metrics(tpl, shape, pose, syn.truth, cams)
                row[f"steps_{n}"] = {"mpjpe_mm": m["mpjpe_mm"], "pa_mpjpe_mm": m["pa_mpjpe_mm"],
                                     "joint_angle_error_deg": m["joint_angle_error_deg"], "cpu_s_per_frame": cpu}
                print(f"# {clip} {n_cams} cams steps {n}: {row[f'steps_{n}']} (triangulation {tri_mpjpe:.3f})",
                      file=sys.stderr, flush=True)
            out["runs"][f"{clip}_{n_cams}"] = row
    runs = out["runs"].values()
    out["mean"] = {"triangulate_mpjpe_mm": float(np.mean([r["triangulate_mpjpe_mm"] for r in runs])),
                   **{f"steps_{n}_mpjpe_mm": float(np.mean([r[f"steps_{n}"]["mpjpe_mm"] for r in runs]))
                      for n in steps}}
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
