"""A procedurally built rigged glTF of a walking theropod (a raptor-like biped): fit-avatar's ninth template,
held out (never used for choosing a default; see RESULTS.md section 22).

Body plan (not the Fox's rig nor any earlier plan's): a horizontal trunk balanced over the hips by a long
stiff tail of four bones; an S-shaped neck of two bones and a long head; small forelimbs held folded (shoulder,
elbow, wrist, hand, a claw); long digitigrade hind legs (hip, knee, ankle, foot, toe tip): the thigh forward,
the shank back, the long metatarsus (ankle -> foot) steep and forward, the toes flat on the ground. Joints are
named where they sit with lower-case ``_l`` / ``_r`` suffixes, so ``ankle_l`` turns the metatarsus and
``foot_l`` the toes, and ``wrist_l`` the hand: mid-limb wrists and ankles whose child joint carries a keypoint
(``hand_l``, ``foot_l``), so the joint-angle metric counts them (the kangaroo's ``foot.L`` had no keypointed
child). 33 joints; mesh and skinning from the shared builder (make_template.py: tubes of 6 sides x 3 rings per
bone, unwelded seams, weights falling off with the distance to each bone). Units: metres, hips 0.75 m high,
about 2.3 m from snout to tail tip. One animation clip, "Walk": 60 frames at 30 fps, a stride of 1.0 s (the two
legs half a cycle apart): stance (the leg sweeps back, the ankle flexes under load then extends at push-off),
swing (the knee and ankle fold, the foot lifts and reaches forward); the trunk rolls and the tail swings
against the stance leg, the neck bobs, the head looks around, the forelimbs twitch.

    python benchmarks/fit_avatar/make_template.py --plan raptor benchmarks/fit_avatar/_raptor/raptor.glb

also writes raptor_keypoints.yaml (18 keypoints: 12 joints, 6 vertex sets: eyes, neck base, back, belly,
hips) and raptor_symmetry.yaml beside it. Deterministic. The output folder _raptor/ is git-ignored:
regenerate it. The toe tips and claw tips carry no keypoint (as on the frog): the foot and hand keypoints lie
on the metatarsus and wrist bones' axes.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_template import Plan, nearest_vertices, rot, skeleton_arrays, write  # noqa: E402

SIDES = (("l", 1.0), ("r", -1.0))
PAIRED = ("shoulder", "elbow", "wrist", "hand", "hip", "knee", "ankle", "foot")
TAIL = ("tail_1", "tail_2", "tail_3", "tail_4")


def skeleton():
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward.
    The rest pose is standing, both feet under the hips."""
    joints = [
        ("root", None, (0, 0.75, 0.0)),
        ("pelvis", "root", (0, 0.75, -0.02)),
        ("tail_1", "pelvis", (0, 0.76, -0.18)),
        ("tail_2", "tail_1", (0, 0.74, -0.50)),
        ("tail_3", "tail_2", (0, 0.70, -0.82)),
        ("tail_4", "tail_3", (0, 0.65, -1.10)),
        ("tail_tip", "tail_4", (0, 0.60, -1.35)),
        ("spine", "root", (0, 0.76, 0.02)),
        ("chest", "spine", (0, 0.80, 0.35)),
        ("neck_1", "chest", (0, 0.86, 0.50)),
        ("neck_2", "neck_1", (0, 1.02, 0.62)),
        ("head", "neck_2", (0, 1.10, 0.70)),
        ("snout_tip", "head", (0, 1.06, 0.98)),
    ]
    for side, s in SIDES:
        joints += [
            (f"shoulder_{side}", "chest", (s * 0.07, 0.74, 0.42)),
            (f"elbow_{side}", f"shoulder_{side}", (s * 0.12, 0.62, 0.40)),
            (f"wrist_{side}", f"elbow_{side}", (s * 0.12, 0.60, 0.55)),
            (f"hand_{side}", f"wrist_{side}", (s * 0.11, 0.57, 0.62)),
            (f"claw_tip_{side}", f"hand_{side}", (s * 0.10, 0.50, 0.68)),
            (f"hip_{side}", "pelvis", (s * 0.11, 0.72, -0.02)),
            (f"knee_{side}", f"hip_{side}", (s * 0.14, 0.42, 0.14)),
            (f"ankle_{side}", f"knee_{side}", (s * 0.13, 0.20, -0.10)),
            (f"foot_{side}", f"ankle_{side}", (s * 0.12, 0.03, -0.02)),
            (f"toe_tip_{side}", f"foot_{side}", (s * 0.12, 0.0, 0.16)),
        ]
    return skeleton_arrays(joints)


def radius_of(name: str) -> float:
    """Tube radius (m) of the bone that starts at joint ``name``: a deep trunk, a tail tapering from the
    hips, a slim neck, thin forelimbs, a heavy thigh and a slender metatarsus."""
    radii = {"pelvis": 0.10, "spine": 0.13, "chest": 0.09, "neck_1": 0.05, "neck_2": 0.045, "head": 0.045,
             "tail_1": 0.09, "tail_2": 0.06, "tail_3": 0.04, "tail_4": 0.025,
             "shoulder": 0.02, "elbow": 0.016, "wrist": 0.012, "hand": 0.01,
             "hip": 0.07, "knee": 0.035, "ankle": 0.022, "foot": 0.025}
    base = name.rpartition("_")[0] if name.endswith(("_l", "_r")) else name
    return radii.get(base, 0.01)


def walk(names, parents, pos, frames: int = 60, fps: float = 30.0, period: float = 1.0):
    """(times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    Phase u of each leg (the right half a cycle behind): stance u < 0.6 (the hip sweeps from +0.45 to -0.35
    rad, the knee and ankle flex under load, the ankle extends at push-off), swing (the knee folds by 0.9 rad,
    the ankle by 1.2, the toes flex, the hip swings forward). Rotations about x (lateral axis)."""
    t = np.arange(frames) / fps
    local = np.tile(np.eye(4), (frames, len(names), 1, 1))
    roll = 0.06 * np.sin(2 * np.pi * t / period)
    for j, p in enumerate(parents):
        local[:, j, :3, 3] = pos[j] - (pos[p] if p >= 0 else 0)
        name = names[j]
        turn = np.tile(np.eye(3), (frames, 1, 1))
        base, _, side = name.rpartition("_")
        if base in PAIRED and side in ("l", "r"):
            sign = 1.0 if side == "l" else -1.0
            u = ((t / period) + (0.0 if side == "l" else 0.5)) % 1.0
            stance = u < 0.6
            us = np.clip(u / 0.6, 0, 1)
            uw = np.clip((u - 0.6) / 0.4, 0, 1)
            hip = np.where(stance, 0.45 - 0.8 * us, -0.35 + 0.8 * (0.5 - 0.5 * np.cos(np.pi * uw)))
            fold = np.where(stance, 0.0, np.sin(np.pi * uw))              # swing fold
            load = np.where(stance, np.sin(np.pi * us), 0.0)              # mid-stance flexion
            push = np.where(stance, np.clip((us - 0.75) / 0.25, 0, 1), 0.0)
            if base == "hip":
                turn = rot("x", -hip) @ rot("z", -sign * 0.05 * load)
            elif base == "knee":
                turn = rot("x", 0.9 * fold + 0.15 * load)
            elif base == "ankle":
                turn = rot("x", -1.2 * fold - 0.25 * load + 0.35 * push)
            elif base == "foot":
                turn = rot("x", 0.8 * fold - 0.4 * push)
            elif base == "shoulder":
                turn = rot("x", 0.1 * np.sin(2 * np.pi * t / period + sign))
            elif base == "elbow":
                turn = rot("x", -0.15 * np.sin(2 * np.pi * 0.7 * t + sign))
            elif base == "wrist":
                turn = rot("x", 0.25 * np.sin(2 * np.pi * 0.9 * t + 2 * sign))
            elif base == "hand":
                turn = rot("x", -0.2 * np.sin(2 * np.pi * 0.9 * t + 2 * sign))
        elif name in TAIL:
            k = TAIL.index(name)
            turn = rot("y", -(0.06 + 0.03 * k) * np.sin(2 * np.pi * t / period)) @ rot("x", 0.03 * np.sin(4 * np.pi * t / period))
        elif name == "spine":
            turn = rot("z", roll)
        elif name == "neck_1":
            turn = rot("x", 0.08 * np.sin(4 * np.pi * t / period))
        elif name == "neck_2":
            turn = rot("x", -0.1 * np.sin(4 * np.pi * t / period + 0.5))
        elif name == "head":
            turn = rot("y", 0.35 * np.sin(2 * np.pi * 0.3 * t)) @ rot("x", 0.1 * np.sin(2 * np.pi * 0.45 * t))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, :3, :3] = rot("y", 0.25 * np.sin(2 * np.pi * 0.25 * t)) @ rot("z", -0.5 * roll)
    root[:, 1, 3] = 0.02 * np.cos(4 * np.pi * t / period)
    root[:, 2, 3] = 1.2 * t                                     # 1.2 m/s
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """12 joints (snout tip, head, elbows, hands, knees, feet, tail middle and tip) and 6 vertex sets (eyes,
    neck base, back, belly, hips)."""
    lines = ["  snout_tip: snout_tip", "  head: {joint: head}", "  tail_mid: {joint: tail_3}",
             "  tail_tip: tail_tip"]
    for side, _ in SIDES:
        lines += [f"  elbow_{side}: {{joint: elbow_{side}}}", f"  hand_{side}: {{joint: hand_{side}}}",
                  f"  knee_{side}: {{joint: knee_{side}}}", f"  foot_{side}: {{joint: foot_{side}}}"]
    for side, s in (("left", 1.0), ("right", -1.0)):
        lines.append(f"  eye_{side}: {{vertices: {nearest_vertices(v, (s * 0.04, 1.12, 0.80), 3)}, "
                     "weights: [1, 1, 1]}")
    lines.append(f"  neck_base: {{vertices: {nearest_vertices(v, (0, 0.92, 0.45), 4)}}}")
    lines.append(f"  back: {{vertices: {nearest_vertices(v, (0, 0.90, 0.15), 4)}}}")
    lines.append(f"  belly: {{vertices: {nearest_vertices(v, (0, 0.64, 0.20), 4)}}}")
    lines.append(f"  hips: {{vertices: {nearest_vertices(v, (0, 0.86, -0.10), 4)}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(
    f"  - [{b}_l, {b}_r]\n" for b in PAIRED + ("claw_tip", "toe_tip"))

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=walk, clip="Walk",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY, sigma=0.025)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "raptor.glb")
