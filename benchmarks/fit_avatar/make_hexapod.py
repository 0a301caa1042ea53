"""A procedurally built rigged glTF of a six-legged animal: fit-avatar's non-Fox template.

Body plan (a different one from the Fox's quadruped): an unweighted root at the body centre
with two children, the abdomen chain (lower body, 3 bones) and the thorax chain (upper body,
3 bones) that carries a two-bone neck and the head; three pairs of legs (coxa, femur, tibia)
on the thorax segments. Mesh and skinning: the shared builder (make_template.py: tubes of 6
sides x 3 rings per bone with unwelded UV seams, weights falling off with the distance to each
bone segment, the 4 largest kept). Units: metres (glTF), about 0.3 m long. One animation clip,
"Walk": 60 frames of a tripod gait at 30 fps.

    python benchmarks/fit_avatar/make_hexapod.py tests/data/hexapod/hexapod.glb
    (same as: python benchmarks/fit_avatar/make_template.py --plan hexapod tests/data/hexapod/hexapod.glb)

also writes hexapod_keypoints.yaml (joints and vertex sets, under a nested 'keypoints:' key) and
hexapod_symmetry.yaml beside it. Deterministic: same bytes on every run.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_template import Plan, nearest_vertices, rot, write  # noqa: E402
from make_template import build as build_plan  # noqa: E402


def skeleton():
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward."""
    joints = [("root", -1, (0, 0.06, 0.0))]

    def add(name, parent, pos):
        joints.append((name, [n for n, _, _ in joints].index(parent), pos))

    add("abdomen1", "root", (0, 0.062, -0.03))
    add("abdomen2", "abdomen1", (0, 0.066, -0.08))
    add("abdomen3", "abdomen2", (0, 0.064, -0.13))
    add("abdomen_tip", "abdomen3", (0, 0.058, -0.17))
    add("thorax1", "root", (0, 0.062, 0.03))
    add("thorax2", "thorax1", (0, 0.064, 0.06))
    add("thorax3", "thorax2", (0, 0.066, 0.09))
    add("neck1", "thorax3", (0, 0.07, 0.11))
    add("neck2", "neck1", (0, 0.075, 0.13))
    add("head", "neck2", (0, 0.078, 0.15))
    add("head_tip", "head", (0, 0.074, 0.19))
    for seg, (parent, z) in enumerate((("thorax1", 0.03), ("thorax2", 0.06), ("thorax3", 0.09)), start=1):
        for side, sign in (("L", 1.0), ("R", -1.0)):
            add(f"coxa{seg}_{side}", parent, (sign * 0.015, 0.06, z))
            add(f"femur{seg}_{side}", f"coxa{seg}_{side}", (sign * 0.035, 0.065, z + 0.005 * (seg - 2)))
            add(f"tibia{seg}_{side}", f"femur{seg}_{side}", (sign * 0.075, 0.075, z + 0.012 * (seg - 2)))
            add(f"foot{seg}_{side}", f"tibia{seg}_{side}", (sign * 0.10, 0.0, z + 0.02 * (seg - 2)))
    names = [n for n, _, _ in joints]
    parents = np.array([p for _, p, _ in joints])
    pos = np.array([p for _, _, p in joints], float)
    return names, parents, pos


def radius_of(name: str) -> float:
    if name.startswith(("abdomen", "thorax")):
        return 0.016
    if name.startswith(("neck", "head")):
        return 0.009
    return 0.004


def walk(names, parents, pos, frames: int = 60, fps: float = 30.0):
    """A tripod gait: (times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    Legs 1L, 2R, 3L swing together, half a cycle from 1R, 2L, 3R (1.5 steps per second); the
    abdomen and neck sway; the body walks forward along z with a slight heading wobble."""
    t = np.arange(frames) / fps
    phase = 2 * np.pi * 1.5 * t
    local = np.tile(np.eye(4), (frames, len(names), 1, 1))
    for j, p in enumerate(parents):
        local[:, j, :3, 3] = pos[j] - (pos[p] if p >= 0 else 0)
        name = names[j]
        turn = np.tile(np.eye(3), (frames, 1, 1))
        if name[:-3] in ("coxa", "femur", "tibia") or name.startswith(("coxa", "femur", "tibia")):
            seg, side = int(name[-3]), name[-1]
            sign = 1.0 if side == "L" else -1.0
            tripod = 0.0 if (seg + (side == "R")) % 2 else np.pi
            ph = phase + tripod
            if name.startswith("coxa"):
                turn = rot("y", 0.35 * np.sin(ph))
            elif name.startswith("femur"):
                turn = rot("z", sign * 0.35 * np.clip(np.cos(ph), 0, None))
            else:
                turn = rot("z", -sign * 0.25 * np.clip(np.cos(ph), 0, None))
        elif name.startswith("abdomen") and name != "abdomen_tip":
            k = int(name[-1])
            turn = rot("x", 0.08 * np.sin(phase + k)) @ rot("y", 0.1 * np.sin(0.5 * phase + k))
        elif name in ("neck1", "neck2", "head"):
            turn = rot("y", 0.2 * np.sin(0.5 * phase)) @ rot("x", 0.1 * np.sin(phase))
        elif name in ("thorax2", "thorax3"):
            turn = rot("y", 0.05 * np.sin(0.5 * phase))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, :3, :3] = rot("y", 0.15 * np.sin(0.3 * phase))
    root[:, 2, 3] = 0.15 * t
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """Leg tips and the abdomen tip as joints, eyes and the back as vertex sets."""
    eye = {side: nearest_vertices(v, (sx * 0.009, 0.08, 0.165), 3) for side, sx in (("left", 1), ("right", -1))}
    back = nearest_vertices(v, (0, 0.08, 0.0), 4)
    lines = []
    for name in ("head_tip", "neck1", "thorax1", "thorax3", "abdomen2", "abdomen_tip"):
        lines.append(f"  {name}: {name}")
    for seg in (1, 2, 3):
        for side in ("L", "R"):
            lines.append(f"  knee{seg}_{side}: {{joint: tibia{seg}_{side}}}")
            lines.append(f"  foot{seg}_{side}: foot{seg}_{side}")
    for side in ("left", "right"):
        lines.append(f"  eye_{side}: {{vertices: {eye[side]}, weights: [1, 1, 1]}}")
    lines.append(f"  back: {{vertices: {back}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(
    f"  - [{b}{s}_L, {b}{s}_R]\n" for s in (1, 2, 3) for b in ("coxa", "femur", "tibia"))

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=walk, clip="Walk",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY)


def build():
    """(names, parents, pos, vertices, faces, weights)."""
    return build_plan(PLAN)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "hexapod.glb")
