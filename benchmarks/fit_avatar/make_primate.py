"""A procedurally built rigged glTF of a foraging macaque-like primate: fit-avatar's fifth
template, held out (never used for choosing a default; see RESULTS.md section 14).

Body plan (not the Fox's rig, the hexapod's, the bird's or the quadruped's): an unweighted root
between the pelvis (carrying two crouched legs and a three-bone tail) and an upright spine (lumbar,
chest) carrying two arms (clavicle, upper arm, forearm, hand, fingers) and a neck with a large head,
a muzzle and two ears. 31 joints; mesh and skinning from the shared builder (make_template.py:
tubes of 6 sides x 3 rings per bone, unwelded seams, weights falling off with the distance to each
bone). Units: metres, about 0.67 m tall sitting, arms 0.3 m. One animation clip, "Forage": 60
frames at 30 fps of a crouched monkey reaching with its arms in turn (1 reach per second each),
the trunk leaning and twisting, the head scanning, the legs shifting, the tail swaying, the body
pivoting slowly about the vertical.

    python benchmarks/fit_avatar/make_template.py --plan primate benchmarks/fit_avatar/_primate/primate.glb

also writes primate_keypoints.yaml (21 keypoints: 13 joints, 8 vertex sets) and
primate_symmetry.yaml beside it. Deterministic. The output folder _primate/ is git-ignored:
regenerate it. Unspanned chains (no keypoint at their inner joint): chest -> clavicle -> shoulder
-> elbow, pelvis -> hip -> knee, root -> spine -> chest -> neck, neck -> head -> muzzle,
pelvis -> tail1 -> tail2 -> tail3 -> tail_tip.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_template import Plan, nearest_vertices, rot, skeleton_arrays, write  # noqa: E402

SIDES = (("L", 1.0), ("R", -1.0))
PAIRED = ("clavicle", "shoulder", "elbow", "wrist", "hand", "hip", "knee", "ankle", "foot", "ear")


def skeleton():
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward."""
    joints = [
        ("root", None, (0, 0.30, 0.0)),
        ("pelvis", "root", (0, 0.30, -0.01)),
        ("tail1", "pelvis", (0, 0.29, -0.08)),
        ("tail2", "tail1", (0, 0.23, -0.16)),
        ("tail3", "tail2", (0, 0.16, -0.22)),
        ("tail_tip", "tail3", (0, 0.09, -0.25)),
        ("spine", "root", (0, 0.31, 0.01)),
        ("chest", "spine", (0, 0.45, 0.06)),
        ("neck", "chest", (0, 0.54, 0.08)),
        ("head", "neck", (0, 0.59, 0.10)),
        ("muzzle", "head", (0, 0.59, 0.18)),
    ]
    for side, s in SIDES:
        joints += [
            (f"ear_{side}", "head", (s * 0.035, 0.63, 0.09)),
            (f"ear_tip_{side}", f"ear_{side}", (s * 0.055, 0.65, 0.085)),
            (f"clavicle_{side}", "chest", (s * 0.035, 0.50, 0.07)),
            (f"shoulder_{side}", f"clavicle_{side}", (s * 0.09, 0.50, 0.06)),
            (f"elbow_{side}", f"shoulder_{side}", (s * 0.10, 0.37, 0.10)),
            (f"wrist_{side}", f"elbow_{side}", (s * 0.10, 0.27, 0.19)),
            (f"hand_{side}", f"wrist_{side}", (s * 0.10, 0.24, 0.23)),
            (f"finger_{side}", f"hand_{side}", (s * 0.10, 0.21, 0.27)),
            (f"hip_{side}", "pelvis", (s * 0.06, 0.28, -0.02)),
            (f"knee_{side}", f"hip_{side}", (s * 0.08, 0.17, 0.09)),
            (f"ankle_{side}", f"knee_{side}", (s * 0.08, 0.04, -0.01)),
            (f"foot_{side}", f"ankle_{side}", (s * 0.08, 0.012, 0.05)),
            (f"toe_{side}", f"foot_{side}", (s * 0.08, 0.0, 0.10)),
        ]
    return skeleton_arrays(joints)


def radius_of(name: str) -> float:
    """Tube radius (m) of the bone that starts at joint ``name``."""
    radii = {"pelvis": 0.055, "spine": 0.065, "chest": 0.05, "neck": 0.03, "head": 0.042,
             "tail1": 0.014, "clavicle": 0.025, "shoulder": 0.022, "elbow": 0.017, "wrist": 0.015,
             "hand": 0.011, "hip": 0.03, "knee": 0.021, "ankle": 0.016, "foot": 0.012, "ear": 0.012}
    base = name.rpartition("_")[0] if name.endswith(("_L", "_R")) else name
    if base in radii:
        return radii[base]
    if base.startswith("tail"):
        return 0.010
    return 0.012


def forage(names, parents, pos, frames: int = 60, fps: float = 30.0):
    """(times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    The arms reach forward in turn (half a period apart) at 1 reach per second, the elbow opening
    as the shoulder lifts and the hand flexing at the end of the reach; the legs shift the weight
    slowly; the trunk leans and twists with the reaching arm, the head scans, the ears flick, the
    tail sways; the body pivots slowly about the vertical and creeps forward."""
    t = np.arange(frames) / fps
    step = 2 * np.pi * 1.0 * t
    local = np.tile(np.eye(4), (frames, len(names), 1, 1))
    for j, p in enumerate(parents):
        local[:, j, :3, 3] = pos[j] - (pos[p] if p >= 0 else 0)
        name = names[j]
        turn = np.tile(np.eye(3), (frames, 1, 1))
        base, _, side = name.rpartition("_")
        if base in PAIRED:
            sign = 1.0 if side == "L" else -1.0
            ph = step + (0.0 if side == "L" else np.pi)
            reach = 0.5 * (1 - np.cos(ph))                       # 0 .. 1
            if base == "clavicle":
                turn = rot("z", sign * 0.12 * reach)
            elif base == "shoulder":
                turn = rot("x", -0.9 * reach) @ rot("z", sign * 0.2 * np.sin(ph))
            elif base == "elbow":
                turn = rot("x", 0.6 * (1 - reach) - 0.2)
            elif base == "wrist":
                turn = rot("x", 0.5 * np.sin(ph))
            elif base == "hand":
                turn = rot("x", 0.6 * np.clip(np.sin(ph - 1.0), 0, None))
            elif base == "hip":
                turn = rot("x", 0.15 * np.sin(0.5 * ph)) @ rot("z", sign * 0.08 * np.sin(0.5 * step))
            elif base == "knee":
                turn = rot("x", -0.2 * np.sin(0.5 * ph))
            elif base == "ankle":
                turn = rot("x", 0.15 * np.sin(0.5 * ph))
            elif base == "ear":
                turn = rot("z", sign * 0.25 * np.sin(2.5 * step))
        elif name == "spine":
            turn = rot("x", 0.15 * np.sin(0.5 * step)) @ rot("y", 0.2 * np.sin(step))
        elif name == "chest":
            turn = rot("y", 0.15 * np.sin(step)) @ rot("z", 0.06 * np.sin(step))
        elif name == "neck":
            turn = rot("y", 0.35 * np.sin(0.7 * step))
        elif name == "head":
            turn = rot("x", -0.2 * np.sin(1.3 * step + 0.5))
        elif name == "tail1":
            turn = rot("y", 0.35 * np.sin(0.8 * step)) @ rot("x", 0.15 * np.sin(1.6 * step))
        elif name == "tail2":
            turn = rot("y", 0.3 * np.sin(0.8 * step - 0.8))
        elif name == "tail3":
            turn = rot("y", 0.25 * np.sin(0.8 * step - 1.6))
        elif name == "pelvis":
            turn = rot("z", -0.05 * np.sin(step))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, :3, :3] = rot("y", 0.6 * np.sin(0.25 * step))
    root[:, 1, 3] = 0.01 * np.sin(2 * step)
    root[:, 2, 3] = 0.15 * t
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """13 joints (muzzle, neck base, tail tip, elbows, hands, knees, feet, ear tips) and 8 vertex
    sets (eyes, crown, tail base, shoulders, hips)."""
    lines = ["  muzzle: muzzle", "  neck_base: {joint: neck}", "  tail_tip: tail_tip"]
    for side, _ in SIDES:
        lines += [f"  elbow_{side}: {{joint: elbow_{side}}}", f"  hand_{side}: hand_{side}",
                  f"  knee_{side}: {{joint: knee_{side}}}", f"  foot_{side}: {{joint: foot_{side}}}",
                  f"  ear_tip_{side}: ear_tip_{side}"]
    for side, s in (("left", 1.0), ("right", -1.0)):
        lines.append(f"  eye_{side}: {{vertices: {nearest_vertices(v, (s * 0.025, 0.62, 0.14), 3)}, "
                     "weights: [1, 1, 1]}")
    lines.append(f"  crown: {{vertices: {nearest_vertices(v, (0, 0.64, 0.10), 4)}}}")
    lines.append(f"  tail_base: {{vertices: {nearest_vertices(v, (0, 0.30, -0.09), 3)}}}")
    for side, s in SIDES:
        lines.append(f"  shoulder_{side}: {{vertices: {nearest_vertices(v, (s * 0.105, 0.51, 0.06), 3)}}}")
        lines.append(f"  hip_{side}: {{vertices: {nearest_vertices(v, (s * 0.09, 0.28, -0.02), 3)}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(
    f"  - [{b}_L, {b}_R]\n" for b in PAIRED + ("ear_tip", "finger", "toe"))

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=forage, clip="Forage",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY, sigma=0.015)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "primate.glb")
