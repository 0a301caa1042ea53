"""A procedurally built rigged glTF of a walking quadruped with a tail: fit-avatar's fourth
template, held out (never used for choosing a default; see RESULTS.md section 11).

Body plan (not the Fox's rig, the hexapod's or the bird's): an unweighted root between the
pelvis (carrying the hind legs and a three-bone tail) and the chest (carrying the front legs and
a two-bone neck with the head, the snout and two ears); front legs of scapula, shoulder, elbow,
wrist, paw; hind legs of hip, knee, hock, paw. 37 joints; mesh and skinning from the shared
builder (make_template.py: tubes of 6 sides x 3 rings per bone, unwelded seams, weights falling
off with the distance to each bone). Units: metres, about 0.75 m from snout to tail tip, 0.4 m
tall. One animation clip, "Trot": 60 frames at 30 fps of a walk in diagonal pairs (1.5 strides
per second) with the head nodding, the ears flicking and the tail swaying.

    python benchmarks/fit_avatar/make_quadruped.py benchmarks/fit_avatar/_quadruped/quadruped.glb
    (same as: python benchmarks/fit_avatar/make_template.py --plan quadruped benchmarks/fit_avatar/_quadruped/quadruped.glb)

also writes quadruped_keypoints.yaml (21 keypoints: 13 joints, 8 vertex sets) and
quadruped_symmetry.yaml beside it. Deterministic. The output folder _quadruped/ is git-ignored:
regenerate it. Unspanned chains (no keypoint at their inner joint): chest -> scapula -> shoulder
-> elbow, pelvis -> hip -> knee, neck1 -> neck2 -> head, tail1 -> tail2 -> tail3 -> tail_tip.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_template import Plan, nearest_vertices, rot, skeleton_arrays, write  # noqa: E402

SIDES = (("L", 1.0), ("R", -1.0))
PAIRED = ("scapula", "shoulder", "elbow", "wrist", "fpaw", "hip", "knee", "hock", "hpaw", "ear")


def skeleton():
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward."""
    joints = [
        ("root", None, (0, 0.40, 0.0)),
        ("pelvis", "root", (0, 0.40, -0.02)),
        ("tail1", "pelvis", (0, 0.41, -0.20)),
        ("tail2", "tail1", (0, 0.40, -0.30)),
        ("tail3", "tail2", (0, 0.37, -0.39)),
        ("tail_tip", "tail3", (0, 0.33, -0.47)),
        ("chest", "root", (0, 0.40, 0.02)),
        ("neck1", "chest", (0, 0.43, 0.20)),
        ("neck2", "neck1", (0, 0.50, 0.25)),
        ("head", "neck2", (0, 0.55, 0.29)),
        ("snout_tip", "head", (0, 0.52, 0.40)),
    ]
    for side, s in SIDES:
        joints += [
            (f"ear_{side}", "head", (s * 0.03, 0.58, 0.29)),
            (f"ear_tip_{side}", f"ear_{side}", (s * 0.05, 0.63, 0.27)),
            (f"scapula_{side}", "chest", (s * 0.05, 0.42, 0.15)),
            (f"shoulder_{side}", f"scapula_{side}", (s * 0.07, 0.33, 0.17)),
            (f"elbow_{side}", f"shoulder_{side}", (s * 0.07, 0.22, 0.14)),
            (f"wrist_{side}", f"elbow_{side}", (s * 0.07, 0.07, 0.15)),
            (f"fpaw_{side}", f"wrist_{side}", (s * 0.07, 0.015, 0.16)),
            (f"ftoe_{side}", f"fpaw_{side}", (s * 0.07, 0.0, 0.20)),
            (f"hip_{side}", "pelvis", (s * 0.06, 0.39, -0.15)),
            (f"knee_{side}", f"hip_{side}", (s * 0.07, 0.25, -0.10)),
            (f"hock_{side}", f"knee_{side}", (s * 0.07, 0.12, -0.19)),
            (f"hpaw_{side}", f"hock_{side}", (s * 0.07, 0.015, -0.17)),
            (f"htoe_{side}", f"hpaw_{side}", (s * 0.07, 0.0, -0.13)),
        ]
    return skeleton_arrays(joints)


def radius_of(name: str) -> float:
    """Tube radius (m) of the bone that starts at joint ``name``."""
    if name in ("pelvis", "chest"):
        return 0.075
    if name.startswith("neck"):
        return 0.035
    if name == "head":
        return 0.035
    if name == "tail1":
        return 0.018
    if name.startswith("tail"):
        return 0.012
    if name.startswith(("scapula", "hip")):
        return 0.03
    if name.startswith(("shoulder", "knee")):
        return 0.022
    if name.startswith("ear"):
        return 0.01
    return 0.014


def trot(names, parents, pos, frames: int = 60, fps: float = 30.0):
    """(times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    Diagonal pairs swing together (left fore with right hind) at 1.5 strides per second, the
    elbow / knee and wrist / hock flexing in the swing; the head nods, the neck turns, the ears
    flick and the tail sways; the body moves forward along z with a bob and a heading wobble."""
    t = np.arange(frames) / fps
    step = 2 * np.pi * 1.5 * t
    local = np.tile(np.eye(4), (frames, len(names), 1, 1))
    for j, p in enumerate(parents):
        local[:, j, :3, 3] = pos[j] - (pos[p] if p >= 0 else 0)
        name = names[j]
        turn = np.tile(np.eye(3), (frames, 1, 1))
        base, _, side = name.rpartition("_")
        if base in PAIRED:
            sign = 1.0 if side == "L" else -1.0
            fore = base in ("scapula", "shoulder", "elbow", "wrist", "fpaw")
            # diagonal pairs: L fore with R hind
            ph = step + (0.0 if (side == "L") == fore else np.pi)
            swing = np.clip(np.cos(ph), 0, None)
            if base == "scapula":
                turn = rot("x", 0.15 * np.sin(ph))
            elif base == "shoulder":
                turn = rot("x", 0.35 * np.sin(ph))
            elif base == "elbow":
                turn = rot("x", -0.5 * swing)
            elif base == "wrist":
                turn = rot("x", 0.6 * swing)
            elif base == "hip":
                turn = rot("x", 0.4 * np.sin(ph))
            elif base == "knee":
                turn = rot("x", 0.45 * swing)
            elif base == "hock":
                turn = rot("x", -0.5 * swing)
            elif base == "hpaw" or base == "fpaw":
                turn = rot("x", 0.3 * np.sin(ph))
            elif base == "ear":
                turn = rot("z", sign * 0.3 * np.sin(3 * step))
        elif name == "neck1":
            turn = rot("y", 0.2 * np.sin(0.5 * step))
        elif name == "neck2":
            turn = rot("x", 0.12 * np.sin(2 * step))
        elif name == "head":
            turn = rot("x", -0.15 * np.sin(2 * step + 0.7))
        elif name == "tail1":
            turn = rot("y", 0.3 * np.sin(step)) @ rot("x", 0.1 * np.sin(2 * step))
        elif name == "tail2":
            turn = rot("y", 0.25 * np.sin(step - 0.8))
        elif name == "tail3":
            turn = rot("y", 0.2 * np.sin(step - 1.6))
        elif name == "chest":
            turn = rot("z", 0.04 * np.sin(step))
        elif name == "pelvis":
            turn = rot("z", -0.04 * np.sin(step))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, :3, :3] = rot("y", 0.1 * np.sin(0.25 * step))
    root[:, 1, 3] = 0.01 * np.sin(2 * step)
    root[:, 2, 3] = 0.6 * t
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """13 joints (snout, neck base, tail tip, elbows, front paws, hocks, hind paws, ear tips) and 8
    vertex sets (eyes, withers, rump, tail base, belly, wrists)."""
    lines = ["  snout_tip: snout_tip", "  neck_base: {joint: neck1}", "  tail_tip: tail_tip"]
    for side, _ in SIDES:
        lines += [f"  elbow_{side}: {{joint: elbow_{side}}}", f"  front_paw_{side}: fpaw_{side}",
                  f"  hock_{side}: hock_{side}", f"  hind_paw_{side}: {{joint: hpaw_{side}}}",
                  f"  ear_tip_{side}: ear_tip_{side}"]
    for side, s in (("left", 1.0), ("right", -1.0)):
        lines.append(f"  eye_{side}: {{vertices: {nearest_vertices(v, (s * 0.03, 0.56, 0.34), 3)}, "
                     "weights: [1, 1, 1]}")
    lines.append(f"  withers: {{vertices: {nearest_vertices(v, (0, 0.48, 0.12), 4)}}}")
    lines.append(f"  rump: {{vertices: {nearest_vertices(v, (0, 0.48, -0.12), 4)}}}")
    lines.append(f"  tail_base: {{vertices: {nearest_vertices(v, (0, 0.42, -0.22), 3)}}}")
    lines.append(f"  belly: {{vertices: {nearest_vertices(v, (0, 0.32, 0.0), 4)}}}")
    for side, s in SIDES:
        lines.append(f"  wrist_{side}: {{vertices: {nearest_vertices(v, (s * 0.085, 0.07, 0.15), 3)}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(
    f"  - [{b}_L, {b}_R]\n" for b in PAIRED + ("ear_tip", "ftoe", "htoe"))

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=trot, clip="Trot",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY, sigma=0.015)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "quadruped.glb")
