"""The temporal weight of track, chosen on the Fox's Walk and Run clips (16 ring cameras, 2 px
noise, 20 % dropout, 3 % outliers, one keypoint-only avatar per clip); the hexapod is reported
with the chosen value in hexapod.py. YAML on stdout.

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/study_temporal.py --weights 1,10,100 > benchmarks/fit_avatar/study_temporal.yaml
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import yaml

from cortexkit.formats.gltf import read_gltf
from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape, track_sequence
from cortexkit.tools.avatar.metrics import model_metrics, point_metrics
from cortexkit.tools.avatar.model import template_from_mesh
from cortexkit.tools.avatar.synth import SynthConfig, make_views
from cortexkit.tools.avatar.triangulate import triangulate_frames

import os
FOX = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "avatar" / "fox" / "glTF-Binary" / "Fox.glb"


def load_fox(path=FOX, keypoints=None):
    """The Fox glTF as a template (cm units; ``keypoints``: a keypoint map, default its joints) and its
    mesh (animations)."""
    mesh = read_gltf(path)
    return mesh, template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                                    mesh.rest_world, unit_mm=10.0, keypoints=keypoints)


def fox_clip(tpl, mesh, clip, cams, seed=0, masks=False):
    """One clip seen by a ring of ``cams`` cameras (2 px noise, 20 % dropout, 3 % outliers, masks on request):
    (cameras, synthetic views, observations, our triangulation's MPJPE in mm)."""
    cameras, syn = make_views(tpl, mesh.animations[clip]["world"], 10.0, f"ring:{cams}", None,
                              SynthConfig(masks=masks, seed=seed))
    obs = Observations(cameras, syn.keypoints, syn.confidence, tpl.keypoint_names,
                       *((syn.masks, syn.crops) if masks else ()))
    tri = triangulate_frames(cameras, syn.keypoints.double().numpy(), syn.confidence.double().numpy()).points
    return cameras, syn, obs, point_metrics(tri, syn.truth["keypoints"].double().numpy())["mpjpe_mm"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", default="1,10,100")
    ap.add_argument("--clips", default="Walk,Run")
    ap.add_argument("--cams", type=int, default=16)
    ap.add_argument("--fox", default=str(FOX))
    ap.add_argument("--order", type=int, default=1, help="temporal_order (1 velocity, 2 acceleration)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    mesh, tpl = load_fox(args.fox)
    out = {}
    for clip in args.clips.split(","):
        cams, syn, obs, tri_mpjpe = fox_clip(tpl, mesh, clip, args.cams)
        truth = syn.truth
        row = {"frames": int(len(syn.keypoints)), "triangulate_mpjpe_mm": tri_mpjpe}
        shape = fit_avatar_shape(tpl, obs, FitConfig(silhouettes=False)).shape
        for w in [float(x) for x in args.weights.split(",")]:
            t0 = time.process_time()
            pose = track_sequence(tpl, shape, obs, FitConfig(silhouettes=False, temporal_weight=w, temporal_order=args.order)).pose
            m = model_metrics(tpl, shape, pose, truth, cams)
            row[f"temporal_{w:g}_order_{args.order}"] = {"mpjpe_mm": m["mpjpe_mm"], "vertex_error_mm": m["vertex_error_mm"],
                                      "joint_angle_error_deg": m["joint_angle_error_deg"],
                                      "cpu_s_per_frame": (time.process_time() - t0) / len(syn.keypoints)}
            print(f"# {clip} w={w:g}: {row[f'temporal_{w:g}_order_{args.order}']}", file=sys.stderr, flush=True)
        out[clip] = row
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
