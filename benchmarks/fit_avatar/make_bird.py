"""A procedurally built rigged glTF of a walking, wing-flapping bird: fit-avatar's third template,
held out (never used for choosing a default; see RESULTS.md, "Study: markers auto (stop 42)").

Body plan (neither the Fox's quadruped nor the hexapod's): an unweighted root between the back
(pelvis, carrying the two legs and a two-bone tail) and the chest (carrying the two wings and a
three-bone neck with the head and beak); legs of hip, knee, ankle, foot with a front and a back toe;
wings of shoulder, elbow, wrist and wing tip. 30 joints; mesh and skinning from the shared builder
(make_template.py: tubes of 6 sides x 3 rings per bone, unwelded seams, weights falling off with
the distance to each bone). Units: metres, about 0.45 m tall. One animation clip, "WalkFlap": 60
frames at 30 fps of an alternating walk (1.2 strides per second) with the wings flapping (2 Hz),
the neck bobbing and the tail swaying.

    python benchmarks/fit_avatar/make_bird.py benchmarks/fit_avatar/_bird/bird.glb
    (same as: python benchmarks/fit_avatar/make_template.py --plan bird benchmarks/fit_avatar/_bird/bird.glb)

also writes bird_keypoints.yaml (22 keypoints: 13 joints, 9 vertex sets) and bird_symmetry.yaml
beside it. Deterministic. The output folder _bird/ is git-ignored: regenerate it.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_template import Plan, nearest_vertices, rot, skeleton_arrays, write  # noqa: E402

SIDES = (("L", 1.0), ("R", -1.0))
PAIRED = ("shoulder", "elbow", "wrist", "wing_tip", "hip", "knee", "ankle", "foot", "toe_front", "toe_back")


def skeleton():
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward."""
    joints = [
        ("root", None, (0, 0.30, 0.0)),
        ("back", "root", (0, 0.30, -0.01)),
        ("tail1", "back", (0, 0.31, -0.10)),
        ("tail2", "tail1", (0, 0.33, -0.17)),
        ("tail_tip", "tail2", (0, 0.35, -0.24)),
        ("chest", "root", (0, 0.30, 0.01)),
        ("neck1", "chest", (0, 0.32, 0.09)),
        ("neck2", "neck1", (0, 0.39, 0.12)),
        ("head", "neck2", (0, 0.45, 0.13)),
        ("beak_tip", "head", (0, 0.445, 0.20)),
    ]
    for side, s in SIDES:
        joints += [
            (f"shoulder_{side}", "chest", (s * 0.035, 0.32, 0.05)),
            (f"elbow_{side}", f"shoulder_{side}", (s * 0.09, 0.33, 0.03)),
            (f"wrist_{side}", f"elbow_{side}", (s * 0.15, 0.335, 0.0)),
            (f"wing_tip_{side}", f"wrist_{side}", (s * 0.24, 0.32, -0.06)),
            (f"hip_{side}", "back", (s * 0.03, 0.28, -0.01)),
            (f"knee_{side}", f"hip_{side}", (s * 0.04, 0.22, 0.02)),
            (f"ankle_{side}", f"knee_{side}", (s * 0.035, 0.13, -0.02)),
            (f"foot_{side}", f"ankle_{side}", (s * 0.035, 0.02, 0.0)),
            (f"toe_front_{side}", f"foot_{side}", (s * 0.04, 0.0, 0.05)),
            (f"toe_back_{side}", f"foot_{side}", (s * 0.035, 0.0, -0.03)),
        ]
    return skeleton_arrays(joints)


def radius_of(name: str) -> float:
    """Tube radius (m) of the bone that starts at joint ``name``."""
    if name in ("back", "chest"):
        return 0.042
    if name == "tail1":
        return 0.02
    if name == "head":
        return 0.016
    if name.startswith(("tail", "neck")):
        return 0.012
    if name.startswith(("shoulder", "hip")):
        return 0.011
    if name.startswith(("elbow", "knee")):
        return 0.007
    return 0.004


def walk_flap(names, parents, pos, frames: int = 60, fps: float = 30.0):
    """(times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    Legs swing about x half a cycle apart (1.2 strides per second, knee and ankle flexing in the
    swing), the wings flap about z (2 Hz, elbow and wrist lagging), the neck bobs and turns, the
    tail sways; the body walks forward along z with a slight bob and heading wobble."""
    t = np.arange(frames) / fps
    step = 2 * np.pi * 1.2 * t
    flap = 2 * np.pi * 2.0 * t
    local = np.tile(np.eye(4), (frames, len(names), 1, 1))
    for j, p in enumerate(parents):
        local[:, j, :3, 3] = pos[j] - (pos[p] if p >= 0 else 0)
        name = names[j]
        turn = np.tile(np.eye(3), (frames, 1, 1))
        base, _, side = name.rpartition("_")
        if base in PAIRED:
            sign = 1.0 if side == "L" else -1.0
            ph = step + (0.0 if side == "L" else np.pi)
            swing = np.clip(np.cos(ph), 0, None)
            if base == "hip":
                turn = rot("x", 0.35 * np.sin(ph))
            elif base == "knee":
                turn = rot("x", 0.4 * swing)
            elif base == "ankle":
                turn = rot("x", -0.45 * swing)
            elif base == "foot":
                turn = rot("x", 0.25 * np.sin(ph))
            elif base == "shoulder":
                turn = rot("z", sign * 0.6 * np.sin(flap)) @ rot("y", sign * 0.15 * np.cos(flap))
            elif base == "elbow":
                turn = rot("z", sign * 0.3 * np.sin(flap - 0.6))
            elif base == "wrist":
                turn = rot("z", sign * 0.2 * np.sin(flap - 1.2))
        elif name == "neck1":
            turn = rot("x", 0.15 * np.sin(2 * step))
        elif name == "neck2":
            turn = rot("y", 0.25 * np.sin(0.5 * step)) @ rot("x", -0.1 * np.sin(2 * step))
        elif name == "head":
            turn = rot("x", -0.12 * np.sin(2 * step + 0.5))
        elif name == "tail1":
            turn = rot("y", 0.15 * np.sin(step))
        elif name == "tail2":
            turn = rot("x", 0.12 * np.sin(step + 1.0))
        elif name == "chest":
            turn = rot("x", 0.05 * np.sin(2 * step))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, :3, :3] = rot("y", 0.12 * np.sin(0.3 * step))
    root[:, 1, 3] = 0.008 * np.sin(2 * step)
    root[:, 2, 3] = 0.25 * t
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """13 joints (beak, neck base, tail tip, elbows, wing tips, knees, ankles, front toes) and 9
    vertex sets (eyes, crown, back, breast, wrists, hips)."""
    lines = ["  beak_tip: beak_tip", "  neck_base: {joint: neck1}", "  tail_tip: tail_tip"]
    for side, _ in SIDES:
        lines += [f"  elbow_{side}: elbow_{side}", f"  wing_tip_{side}: wing_tip_{side}",
                  f"  knee_{side}: {{joint: knee_{side}}}", f"  ankle_{side}: ankle_{side}",
                  f"  toe_{side}: {{joint: toe_front_{side}}}"]
    for side, s in (("left", 1.0), ("right", -1.0)):
        lines.append(f"  eye_{side}: {{vertices: {nearest_vertices(v, (s * 0.015, 0.455, 0.15), 3)}, "
                     "weights: [1, 1, 1]}")
    lines.append(f"  crown: {{vertices: {nearest_vertices(v, (0, 0.47, 0.14), 3)}}}")
    lines.append(f"  back: {{vertices: {nearest_vertices(v, (0, 0.35, -0.04), 4)}}}")
    lines.append(f"  breast: {{vertices: {nearest_vertices(v, (0, 0.27, 0.06), 4)}}}")
    for side, s in SIDES:
        lines.append(f"  wrist_{side}: {{vertices: {nearest_vertices(v, (s * 0.15, 0.345, 0.0), 3)}}}")
        lines.append(f"  hip_{side}: {{vertices: {nearest_vertices(v, (s * 0.06, 0.28, -0.01), 3)}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(f"  - [{b}_L, {b}_R]\n" for b in PAIRED)

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=walk_flap, clip="WalkFlap",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY, sigma=0.01)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "bird.glb")
