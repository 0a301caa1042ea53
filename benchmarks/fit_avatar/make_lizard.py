"""A procedurally built rigged glTF of a sprawling lizard (a monitor or young crocodile) with a long
tail: fit-avatar's sixth template, held out (never used for choosing a default; see RESULTS.md
section 16).

Body plan (not the Fox's rig, the hexapod's, the bird's, the quadruped's or the primate's): a low,
long, flat body; an unweighted root between the pelvis (carrying the hind legs and a five-bone tail
as long as the trunk and head together) and a spine of two bones (trunk, chest) carrying the front
legs and a short neck with a long flat head and snout; four sprawling legs whose upper bone (upper
arm, thigh) points sideways and whose lower bone (forearm, shank) points down, then hand / foot and
a claw / toe. 33 joints; mesh and skinning from the shared builder (make_template.py: tubes of 6
sides x 3 rings per bone, unwelded seams, weights falling off with the distance to each bone).
Units: metres, about 1.2 m from snout to tail tip, 0.16 m tall, 0.45 m across the feet. One
animation clip, "Crawl": 60 frames at 30 fps of a sprawling walk in diagonal pairs (1 stride per
second): the upper limbs swing forward and back about the vertical and lift in the swing, the
trunk and tail bend side to side in a travelling wave, the head turns against the trunk, the
body creeps forward and turns slowly.

    python benchmarks/fit_avatar/make_template.py --plan lizard benchmarks/fit_avatar/_lizard/lizard.glb

also writes lizard_keypoints.yaml (21 keypoints: 12 joints, 9 vertex sets) and lizard_symmetry.yaml
beside it. Deterministic. The output folder _lizard/ is git-ignored: regenerate it. Unspanned chains
(no keypoint at their inner joint; no bone has keypoints at both ends): chest -> shoulder -> elbow,
pelvis -> hip -> knee, root -> spine -> chest -> neck, neck -> head -> snout_tip, pelvis -> tail1 ->
tail2 -> tail3, tail3 -> tail4 -> tail5 -> tail_tip, elbow -> wrist -> hand, knee -> ankle -> foot.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_template import Plan, nearest_vertices, rot, skeleton_arrays, write  # noqa: E402

SIDES = (("L", 1.0), ("R", -1.0))
PAIRED = ("shoulder", "elbow", "wrist", "hand", "hip", "knee", "ankle", "foot")


def skeleton():
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward."""
    joints = [
        ("root", None, (0, 0.11, 0.0)),
        ("pelvis", "root", (0, 0.11, -0.02)),
        ("tail1", "pelvis", (0, 0.11, -0.13)),
        ("tail2", "tail1", (0, 0.10, -0.26)),
        ("tail3", "tail2", (0, 0.09, -0.39)),
        ("tail4", "tail3", (0, 0.075, -0.51)),
        ("tail5", "tail4", (0, 0.06, -0.61)),
        ("tail_tip", "tail5", (0, 0.045, -0.70)),
        ("spine", "root", (0, 0.11, 0.02)),
        ("chest", "spine", (0, 0.115, 0.20)),
        ("neck", "chest", (0, 0.12, 0.30)),
        ("head", "neck", (0, 0.13, 0.36)),
        ("snout_tip", "head", (0, 0.10, 0.52)),
    ]
    for side, s in SIDES:
        joints += [
            (f"shoulder_{side}", "chest", (s * 0.06, 0.10, 0.24)),
            (f"elbow_{side}", f"shoulder_{side}", (s * 0.15, 0.10, 0.25)),
            (f"wrist_{side}", f"elbow_{side}", (s * 0.17, 0.025, 0.27)),
            (f"hand_{side}", f"wrist_{side}", (s * 0.19, 0.008, 0.30)),
            (f"claw_{side}", f"hand_{side}", (s * 0.21, 0.0, 0.35)),
            (f"hip_{side}", "pelvis", (s * 0.06, 0.10, -0.07)),
            (f"knee_{side}", f"hip_{side}", (s * 0.17, 0.10, -0.06)),
            (f"ankle_{side}", f"knee_{side}", (s * 0.19, 0.025, -0.09)),
            (f"foot_{side}", f"ankle_{side}", (s * 0.21, 0.008, -0.06)),
            (f"toe_{side}", f"foot_{side}", (s * 0.24, 0.0, -0.01)),
        ]
    return skeleton_arrays(joints)


def radius_of(name: str) -> float:
    """Tube radius (m) of the bone that starts at joint ``name``."""
    radii = {"pelvis": 0.055, "spine": 0.065, "chest": 0.05, "neck": 0.045, "head": 0.04,
             "tail1": 0.045, "tail2": 0.036, "tail3": 0.027, "tail4": 0.019, "tail5": 0.013,
             "shoulder": 0.026, "elbow": 0.021, "wrist": 0.016, "hand": 0.011,
             "hip": 0.03, "knee": 0.023, "ankle": 0.017, "foot": 0.012}
    base = name.rpartition("_")[0] if name.endswith(("_L", "_R")) else name
    return radii.get(base, 0.012)


def crawl(names, parents, pos, frames: int = 60, fps: float = 30.0):
    """(times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    Diagonal pairs (left fore with right hind) swing together at 1 stride per second: the upper
    limb swings about the vertical (forward in the swing, back in the stance) and lifts in the
    swing, the lower limb flexes, the hand / foot rolls; the trunk bends side to side with the
    stride, the tail in a wave travelling to its tip; the head turns against the trunk and nods."""
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
            fore = base in ("shoulder", "elbow", "wrist", "hand")
            ph = step + (0.0 if (side == "L") == fore else np.pi)
            swing = np.clip(np.sin(ph), 0, None)               # lift in the swing half
            if base in ("shoulder", "hip"):
                # forward (+z) swing of a sideways bone is a turn about y: -sign for the left side
                turn = rot("y", -sign * 0.45 * np.cos(ph)) @ rot("z", sign * 0.35 * swing)
            elif base in ("elbow", "knee"):
                turn = rot("z", -sign * 0.3 * swing) @ rot("x", 0.2 * np.cos(ph))
            elif base in ("wrist", "ankle"):
                turn = rot("x", 0.4 * swing)
            elif base in ("hand", "foot"):
                turn = rot("x", -0.3 * np.sin(ph))
        elif name == "spine":
            turn = rot("y", 0.18 * np.sin(step))
        elif name == "chest":
            turn = rot("y", -0.12 * np.sin(step)) @ rot("z", 0.05 * np.sin(step))
        elif name == "neck":
            turn = rot("y", -0.15 * np.sin(step) + 0.2 * np.sin(0.4 * step))
        elif name == "head":
            turn = rot("x", 0.12 * np.sin(2 * step + 0.4))
        elif name.startswith("tail") and name != "tail_tip":
            k = int(name[4:])
            turn = rot("y", (0.12 + 0.04 * k) * np.sin(step - 0.7 * k)) @ rot("x", 0.04 * np.sin(2 * step - k))
        elif name == "pelvis":
            turn = rot("z", -0.05 * np.sin(step))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, :3, :3] = rot("y", 0.4 * np.sin(0.25 * step))
    root[:, 1, 3] = 0.005 * np.sin(2 * step)
    root[:, 2, 3] = 0.3 * t
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """12 joints (snout tip, neck base, tail middle, tail tip, elbows, hands, knees, feet) and 9
    vertex sets (eyes, nape, back, rump, tail base, belly, wrists)."""
    lines = ["  snout_tip: snout_tip", "  neck_base: {joint: neck}", "  tail_mid: {joint: tail3}",
             "  tail_tip: tail_tip"]
    for side, _ in SIDES:
        lines += [f"  elbow_{side}: {{joint: elbow_{side}}}", f"  hand_{side}: hand_{side}",
                  f"  knee_{side}: {{joint: knee_{side}}}", f"  foot_{side}: {{joint: foot_{side}}}"]
    for side, s in (("left", 1.0), ("right", -1.0)):
        lines.append(f"  eye_{side}: {{vertices: {nearest_vertices(v, (s * 0.03, 0.16, 0.42), 3)}, "
                     "weights: [1, 1, 1]}")
    lines.append(f"  nape: {{vertices: {nearest_vertices(v, (0, 0.17, 0.31), 3)}}}")
    lines.append(f"  back: {{vertices: {nearest_vertices(v, (0, 0.18, 0.10), 4)}}}")
    lines.append(f"  rump: {{vertices: {nearest_vertices(v, (0, 0.17, -0.07), 4)}}}")
    lines.append(f"  tail_base: {{vertices: {nearest_vertices(v, (0, 0.15, -0.20), 3)}}}")
    lines.append(f"  belly: {{vertices: {nearest_vertices(v, (0, 0.05, 0.08), 4)}}}")
    for side, s in SIDES:
        lines.append(f"  wrist_{side}: {{vertices: {nearest_vertices(v, (s * 0.185, 0.025, 0.27), 3)}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(
    f"  - [{b}_L, {b}_R]\n" for b in PAIRED + ("claw", "toe"))

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=crawl, clip="Crawl",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY, sigma=0.015)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "lizard.glb")
