"""Per-keypoint markers (shape --keypoint-offsets), chosen on the Fox (the choosing set): each clip
seen by each ring of cameras (2 px noise, 20 % dropout, 3 % outliers, no masks), one keypoint-only
avatar per clip, rig and marker weight (0 = off), then track (default 240 steps) against the same
views and triangulation. The hexapod (held out) is run with ``hexapod.py --keypoint-offsets``. YAML
on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/study_markers.py --weights 0,1000 > benchmarks/fit_avatar/study_markers.yaml

``--vertex-keypoints N`` (stop 42): the Fox variant whose keypoints are vertex sets: each default
keypoint (a joint carrying skinning weight) becomes the equal-weight set of the N template
vertices nearest its joint at rest, so the synthetic 2D come from those vertex sets (which move with
the hidden individual's offsets) and the keypoints are no longer the model's joints.
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


def fox_vertex_keypoints(mesh, tpl, count: int) -> dict:
    """A keypoint map of the Fox: each default keypoint (a joint) -> the ``count`` input-mesh vertices
    nearest that joint at rest, equal weights."""
    joints = mesh.rest_world[:, :3, 3]
    out = {}
    for name in tpl.keypoint_names:
        j = list(mesh.joint_names).index(name)
        near = np.argsort(np.linalg.norm(mesh.vertices - joints[j], axis=1))[:count]
        out[name] = {"vertices": [int(i) for i in near]}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", default="0,1000", help="--keypoint-offsets weights, comma-separated (0 = off); "
                    "W:mesh frees the markers in the mesh stage only")
    ap.add_argument("--clips", default="Walk,Run,Survey")
    ap.add_argument("--cams", default="16,6", help="ring sizes, comma-separated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fox", default=str(FOX))
    ap.add_argument("--vertex-keypoints", type=int, default=0, help="N > 0: each keypoint is the set of the N "
                    "vertices nearest its joint (the Fox variant with vertex-set keypoints)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    weights = args.weights.split(",")
    mesh, tpl = load_fox(args.fox)
    if args.vertex_keypoints > 0:
        mesh, tpl = load_fox(args.fox, fox_vertex_keypoints(mesh, tpl, args.vertex_keypoints))
    out = {"seed": args.seed, "weights": weights, "vertex_keypoints": args.vertex_keypoints, "runs": {}}
    for n_cams in [int(c) for c in args.cams.split(",")]:
        for clip in args.clips.split(","):
            cams, syn, obs, tri_mpjpe = fox_clip(tpl, mesh, clip, n_cams, args.seed)
            frames = len(syn.keypoints)
            row = {"frames": int(frames), "triangulate_mpjpe_mm": tri_mpjpe}
            for item in weights:
                weight, _, where = item.partition(":")
                w = item.replace(":", "_")
                t0 = time.process_time()
                shape = fit_avatar_shape(tpl, obs, FitConfig(silhouettes=False, keypoint_offsets=float(weight),
                                                             markers_in_bones=where != "mesh")).shape
                shape_cpu = time.process_time() - t0
                t0 = time.process_time()
                pose = track_sequence(tpl, shape, obs, FitConfig(silhouettes=False)).pose
                cpu = (time.process_time() - t0) / frames
                m = model_metrics(tpl, shape, pose, syn.truth, cams)
                markers = shape.markers.norm(dim=-1) if shape.markers is not None else torch.zeros(1)
                row[f"offsets_{w}"] = {
                    "mpjpe_mm": m["mpjpe_mm"], "pa_mpjpe_mm": m["pa_mpjpe_mm"],
                    "joint_angle_error_deg": m["joint_angle_error_deg"],
                    "bone_scale_error": m["bone_scale_error"], "scale_error": m["scale_error"],
                    "marker_mm_mean": float(markers.mean()), "marker_mm_max": float(markers.max()),
                    "shape_cpu_s": shape_cpu, "track_cpu_s_per_frame": cpu}
                print(f"# {clip} {n_cams} cams offsets {w}: {row[f'offsets_{w}']} (triangulation "
                      f"{tri_mpjpe:.3f})", file=sys.stderr, flush=True)
            out["runs"][f"{clip}_{n_cams}"] = row
    runs = out["runs"].values()
    out["mean"] = {"triangulate_mpjpe_mm": float(np.mean([r["triangulate_mpjpe_mm"] for r in runs])),
                   **{f"offsets_{w}_mpjpe_mm": float(np.mean([r[f"offsets_{w}"]["mpjpe_mm"] for r in runs]))
                      for w in (item.replace(":", "_") for item in weights)}}
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
