"""A procedurally built rigged glTF of a hopping kangaroo: fit-avatar's eighth template, held out (never used
for choosing a default; see RESULTS.md section 20).

Body plan (not the Fox's rig nor any earlier plan's): joint names in the Rigify (Blender) convention, with
``.L`` / ``.R`` suffixes, where a joint is named after the bone that starts at it, so ``foot.L`` is the
ankle (it turns the long pes) and ``toe.L`` the ball of the foot (it turns the toe); an upright trunk
(pelvis, spine, chest, neck, head with two ears), small forelimbs (shoulder, upper arm, forearm, hand,
fingers), long hind legs folded in a Z (thigh forward, shin back, a long foot forward along the ground)
plus a toe, and a thick tail of four bones that counterbalances each hop. 35 joints; mesh and skinning
from the shared builder (make_template.py: tubes of 6 sides x 3 rings per bone, unwelded seams, weights
falling off with the distance to each bone). Units: metres, about 0.95 m tall sitting, 1.1 m of tail.
One animation clip, "Hop": 60 frames at 30 fps, hops of 0.8 s: crouch, push-off (the hind legs unfold,
the feet plantar-flex, the trunk pitches forward, the tail rises), flight (the legs swing forward and
fold), landing (the legs fold under the body, the tail drops); the forelimbs stay tucked, the head bobs
and the body turns slowly.

    python benchmarks/fit_avatar/make_template.py --plan kangaroo benchmarks/fit_avatar/_kangaroo/kangaroo.glb

also writes kangaroo_keypoints.yaml (20 keypoints: 15 joints, 5 vertex sets: eyes, withers, belly, rump)
and kangaroo_symmetry.yaml beside it. Deterministic. The output folder _kangaroo/ is git-ignored:
regenerate it.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_template import Plan, nearest_vertices, rot, skeleton_arrays, write  # noqa: E402

SIDES = (("L", 1.0), ("R", -1.0))
PAIRED = ("shoulder", "upper_arm", "forearm", "hand", "thigh", "shin", "foot", "toe", "ear")
TAIL = ("tail.001", "tail.002", "tail.003", "tail.004")


def skeleton():
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward.
    The rest pose is the sitting crouch, heels on the ground."""
    joints = [
        ("root", None, (0, 0.45, 0.0)),
        ("pelvis", "root", (0, 0.45, -0.02)),
        ("tail.001", "pelvis", (0, 0.40, -0.15)),
        ("tail.002", "tail.001", (0, 0.30, -0.40)),
        ("tail.003", "tail.002", (0, 0.17, -0.65)),
        ("tail.004", "tail.003", (0, 0.08, -0.88)),
        ("tail_tip", "tail.004", (0, 0.03, -1.08)),
        ("spine", "root", (0, 0.47, 0.02)),
        ("chest", "spine", (0, 0.70, 0.12)),
        ("neck", "chest", (0, 0.82, 0.16)),
        ("head", "neck", (0, 0.93, 0.20)),
        ("snout_tip", "head", (0, 0.90, 0.38)),
    ]
    for side, s in SIDES:
        joints += [
            (f"ear.{side}", "head", (s * 0.04, 0.99, 0.18)),
            (f"ear_tip.{side}", f"ear.{side}", (s * 0.07, 1.11, 0.13)),
            (f"shoulder.{side}", "chest", (s * 0.04, 0.74, 0.15)),
            (f"upper_arm.{side}", f"shoulder.{side}", (s * 0.10, 0.71, 0.17)),
            (f"forearm.{side}", f"upper_arm.{side}", (s * 0.11, 0.59, 0.21)),
            (f"hand.{side}", f"forearm.{side}", (s * 0.10, 0.49, 0.25)),
            (f"fingers.{side}", f"hand.{side}", (s * 0.10, 0.44, 0.29)),
            (f"thigh.{side}", "pelvis", (s * 0.10, 0.42, -0.04)),
            (f"shin.{side}", f"thigh.{side}", (s * 0.14, 0.30, 0.16)),
            (f"foot.{side}", f"shin.{side}", (s * 0.13, 0.08, -0.14)),
            (f"toe.{side}", f"foot.{side}", (s * 0.13, 0.02, 0.18)),
            (f"toe_tip.{side}", f"toe.{side}", (s * 0.13, 0.0, 0.30)),
        ]
    return skeleton_arrays(joints)


def radius_of(name: str) -> float:
    """Tube radius (m) of the bone that starts at joint ``name``: a deep trunk, a thick tapering tail,
    thin forelimbs, a heavy thigh and a long slim foot."""
    radii = {"pelvis": 0.10, "spine": 0.11, "chest": 0.08, "neck": 0.05, "head": 0.05,
             "tail.001": 0.07, "tail.002": 0.05, "tail.003": 0.035, "tail.004": 0.022,
             "ear": 0.012, "shoulder": 0.025, "upper_arm": 0.018, "forearm": 0.014, "hand": 0.012,
             "thigh": 0.06, "shin": 0.03, "foot": 0.022, "toe": 0.018}
    base = name.rpartition(".")[0] if name.endswith((".L", ".R")) else name
    return radii.get(base, 0.01)


def _smooth(x):
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def hop(names, parents, pos, frames: int = 60, fps: float = 30.0, period: float = 0.8):
    """(times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    Phase u in [0, 1) of a 0.8 s hop: crouch (u < 0.15), push-off (0.15-0.4: the legs unfold to e = 1, the
    feet plantar-flex, the trunk pitches forward, the tail rises), flight (0.4-0.75: the legs swing forward
    and refold to e = 0.2), landing (0.75-0.9: e back to 0, the tail drops), crouch. Rotations about x open
    the leg's Z: thigh +1.1 e, shin -1.7 e, foot +1.6 e, toe -0.9 e (radians)."""
    t = np.arange(frames) / fps
    u = (t / period) % 1.0
    e = np.where(u < 0.4, _smooth((u - 0.15) / 0.25), np.where(u < 0.75, 1 - 0.8 * _smooth((u - 0.4) / 0.35),
                 0.2 * (1 - _smooth((u - 0.75) / 0.15))))
    swing = np.where((u > 0.4) & (u < 0.8), np.sin(np.pi * (u - 0.4) / 0.4), 0.0)   # legs forward in flight
    local = np.tile(np.eye(4), (frames, len(names), 1, 1))
    for j, p in enumerate(parents):
        local[:, j, :3, 3] = pos[j] - (pos[p] if p >= 0 else 0)
        name = names[j]
        turn = np.tile(np.eye(3), (frames, 1, 1))
        base, _, side = name.rpartition(".")
        if base in PAIRED and side in ("L", "R"):
            sign = 1.0 if side == "L" else -1.0
            ee = np.interp(t + 0.02 * sign, t, e)               # the legs almost in step
            if base == "thigh":
                turn = rot("x", 1.1 * ee - 0.6 * swing) @ rot("z", -sign * 0.1 * ee)
            elif base == "shin":
                turn = rot("x", -1.7 * ee)
            elif base == "foot":
                turn = rot("x", 1.6 * ee)
            elif base == "toe":
                turn = rot("x", -0.9 * ee + 0.4 * swing)
            elif base == "upper_arm":
                turn = rot("x", -0.3 * e) @ rot("z", sign * 0.1 * swing)
            elif base == "forearm":
                turn = rot("x", -0.4 * swing)
            elif base == "hand":
                turn = rot("x", 0.3 * swing)
            elif base == "ear":
                turn = rot("x", 0.2 * np.sin(2 * np.pi * 0.7 * t + sign))
        elif name in TAIL:
            k = TAIL.index(name)
            turn = rot("x", -(0.25 + 0.05 * k) * (e - 0.5 * swing)) @ rot("y", 0.08 * np.sin(2 * np.pi * 0.4 * t))
        elif name == "spine":
            turn = rot("x", 0.45 * e)
        elif name == "pelvis":
            turn = rot("x", -0.2 * e)
        elif name == "neck":
            turn = rot("x", -0.3 * e)
        elif name == "head":
            turn = rot("x", -0.15 * e + 0.1 * swing) @ rot("y", 0.2 * np.sin(2 * np.pi * 0.3 * t))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    hops = np.floor(t / period)
    travel = hops + _smooth((u - 0.2) / 0.6)                  # 0.6 m forward per hop
    root[:, :3, :3] = rot("y", 0.3 * np.sin(2 * np.pi * 0.25 * t))
    root[:, 1, 3] = 0.2 * e + 0.15 * np.clip(np.sin(np.pi * (u - 0.35) / 0.45), 0, None) * ((u > 0.35) & (u < 0.8))
    root[:, 2, 3] = 0.6 * travel
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """15 joints (snout tip, ear tips, elbows, hands, knees, heels, toe tips, tail middle and tip) and
    5 vertex sets (eyes, withers, belly, rump)."""
    lines = ["  snout_tip: snout_tip", "  tail_mid: {joint: tail.003}", "  tail_tip: tail_tip"]
    for side, _ in SIDES:
        lines += [f"  ear_tip_{side}: ear_tip.{side}", f"  elbow_{side}: {{joint: forearm.{side}}}",
                  f"  paw_{side}: {{joint: hand.{side}}}", f"  knee_{side}: {{joint: shin.{side}}}",
                  f"  heel_{side}: {{joint: foot.{side}}}", f"  toe_{side}: {{joint: toe_tip.{side}}}"]
    for side, s in (("left", 1.0), ("right", -1.0)):
        lines.append(f"  eye_{side}: {{vertices: {nearest_vertices(v, (s * 0.035, 0.96, 0.27), 3)}, "
                     "weights: [1, 1, 1]}")
    lines.append(f"  withers: {{vertices: {nearest_vertices(v, (0, 0.78, 0.06), 4)}}}")
    lines.append(f"  belly: {{vertices: {nearest_vertices(v, (0, 0.50, 0.14), 4)}}}")
    lines.append(f"  rump: {{vertices: {nearest_vertices(v, (0, 0.50, -0.12), 4)}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(
    f"  - [{b}.L, {b}.R]\n" for b in PAIRED + ("fingers", "ear_tip", "toe_tip"))

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=hop, clip="Hop",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY, sigma=0.02)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "kangaroo.glb")
