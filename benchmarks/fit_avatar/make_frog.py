"""A procedurally built rigged glTF of a hopping frog: fit-avatar's seventh template, held out (never used
for choosing a default; see RESULTS.md section 19).

Body plan (not the Fox's rig, the hexapod's, the bird's, the quadruped's, the primate's or the lizard's):
a squat, wide trunk of two spine bones and no tail, an unweighted root between the pelvis (a rear trunk
bone ending at the sacrum, which carries the hind legs) and the spine (a front trunk bone ending at the
chest, which carries the forelimbs and a short wide head with a flat snout); short forelimbs (upper arm,
forearm, hand, fingers); long hind legs folded in three segments (thigh forward, shank back, tarsus
forward again: a Z at rest, as a sitting frog folds them) plus a wide webbed foot. So thin folded limbs
against a wide body. 27 joints; mesh and skinning from the shared builder (make_template.py: tubes of 6
sides x 3 rings per bone, unwelded seams, weights falling off with the distance to each bone). Units:
metres, about 0.26 m from snout to vent (a large frog), 0.13 m tall sitting, 0.55 m from snout to toe
with the hind legs stretched. One animation clip, "Hop": 60 frames at 30 fps, two hops of one second:
crouch, extend (the hind legs unfold, the trunk pitches up), flight (the body rises and travels forward,
the legs trail and start to fold, the forelimbs reach forward), land (the forelimbs take the body, the
legs fold back under it); the body turns slowly between hops.

    python benchmarks/fit_avatar/make_template.py --plan frog benchmarks/fit_avatar/_frog/frog.glb

also writes frog_keypoints.yaml (17 keypoints: 9 joints, 8 vertex sets: eyes, back, rump, vent, throat,
heels) and frog_symmetry.yaml beside it. Deterministic. The output folder _frog/ is git-ignored:
regenerate it. No bone has keypoints at both ends (as on the primate and the lizard); unspanned chains:
root -> spine -> chest -> head -> snout_tip, root -> pelvis -> sacrum -> hip -> knee,
chest -> shoulder -> elbow, elbow -> wrist -> hand, knee -> ankle -> foot.
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
    """(names, parents, rest joint positions (J, 3) in metres). x = left(+)/right(-), y up, z forward.
    The rest pose is the crouch (sitting), the hind legs folded under the body."""
    joints = [
        ("root", None, (0, 0.07, 0.0)),
        ("pelvis", "root", (0, 0.07, -0.005)),
        ("sacrum", "pelvis", (0, 0.065, -0.08)),
        ("spine", "root", (0, 0.07, 0.005)),
        ("chest", "spine", (0, 0.075, 0.07)),
        ("head", "chest", (0, 0.08, 0.10)),
        ("snout_tip", "head", (0, 0.07, 0.18)),
    ]
    for side, s in SIDES:
        joints += [
            (f"shoulder_{side}", "chest", (s * 0.04, 0.06, 0.07)),
            (f"elbow_{side}", f"shoulder_{side}", (s * 0.08, 0.045, 0.08)),
            (f"wrist_{side}", f"elbow_{side}", (s * 0.085, 0.01, 0.10)),
            (f"hand_{side}", f"wrist_{side}", (s * 0.09, 0.003, 0.12)),
            (f"finger_{side}", f"hand_{side}", (s * 0.10, 0.0, 0.145)),
            (f"hip_{side}", "sacrum", (s * 0.035, 0.06, -0.08)),
            (f"knee_{side}", f"hip_{side}", (s * 0.09, 0.04, 0.0)),
            (f"ankle_{side}", f"knee_{side}", (s * 0.07, 0.02, -0.09)),
            (f"foot_{side}", f"ankle_{side}", (s * 0.09, 0.008, -0.02)),
            (f"toe_{side}", f"foot_{side}", (s * 0.11, 0.0, 0.05)),
        ]
    return skeleton_arrays(joints)


def radius_of(name: str) -> float:
    """Tube radius (m) of the bone that starts at joint ``name``: a wide trunk and head, thin limbs,
    a wider (webbed) foot than tarsus."""
    radii = {"pelvis": 0.05, "sacrum": 0.03, "spine": 0.06, "chest": 0.05, "head": 0.045,
             "shoulder": 0.013, "elbow": 0.010, "wrist": 0.008, "hand": 0.007,
             "hip": 0.022, "knee": 0.016, "ankle": 0.011, "foot": 0.015}
    base = name.rpartition("_")[0] if name.endswith(("_L", "_R")) else name
    return radii.get(base, 0.008)


def _smooth(x):
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def hop(names, parents, pos, frames: int = 60, fps: float = 30.0):
    """(times (T,), local (T, J, 4, 4) joint local transforms, root_world (T, 4, 4)).

    One hop per second, phase u in [0, 1): crouch (u < 0.2), extend (0.2-0.4: the hind legs unfold to
    e = 1, the trunk pitches up), flight (0.4-0.7: the body rises and travels, the legs fold to e = 0.3,
    the forelimbs reach forward), land (0.7-0.85: the legs fold back to e = 0, the forelimbs take the
    body), crouch. Rotations about x (the body's lateral axis) open the Z of the hind leg: hip +2.0 e,
    knee -2.3 e, ankle +2.6 e, foot +0.4 e (radians)."""
    t = np.arange(frames) / fps
    u = (t * 1.0) % 1.0
    e = np.where(u < 0.4, _smooth((u - 0.2) / 0.2), np.where(u < 0.7, 1 - 0.7 * _smooth((u - 0.4) / 0.3),
                 0.3 * (1 - _smooth((u - 0.7) / 0.15))))
    reach = np.where(u < 0.4, 0.0, np.where(u < 0.7, _smooth((u - 0.4) / 0.2), 1 - _smooth((u - 0.7) / 0.2)))
    land = np.exp(-((u - 0.8) / 0.06) ** 2)                     # the forelimbs absorb the landing
    local = np.tile(np.eye(4), (frames, len(names), 1, 1))
    for j, p in enumerate(parents):
        local[:, j, :3, 3] = pos[j] - (pos[p] if p >= 0 else 0)
        name = names[j]
        turn = np.tile(np.eye(3), (frames, 1, 1))
        base, _, side = name.rpartition("_")
        if base in PAIRED:
            sign = 1.0 if side == "L" else -1.0
            lag = 0.03 * sign                                  # the legs a little out of step
            ee = np.interp(t + lag, t, e)
            if base == "hip":
                turn = rot("x", 2.0 * ee) @ rot("z", -sign * 0.25 * ee)
            elif base == "knee":
                turn = rot("x", -2.3 * ee)
            elif base == "ankle":
                turn = rot("x", 2.6 * ee)
            elif base == "foot":
                turn = rot("x", 0.4 * ee)
            elif base == "shoulder":
                turn = rot("x", -0.7 * reach + 0.3 * land) @ rot("z", sign * 0.2 * land)
            elif base == "elbow":
                turn = rot("x", -0.5 * reach - 0.4 * land)
            elif base == "wrist":
                turn = rot("x", 0.3 * reach + 0.3 * land)
            elif base == "hand":
                turn = rot("x", -0.2 * reach)
        elif name == "spine":
            turn = rot("x", -0.35 * e + 0.15 * land)
        elif name == "pelvis":
            turn = rot("x", 0.25 * e)
        elif name == "head":
            turn = rot("x", 0.2 * e - 0.15 * land) @ rot("y", 0.15 * np.sin(2 * np.pi * 0.5 * t))
        local[:, j, :3, :3] = turn
    root = np.tile(np.eye(4), (frames, 1, 1))
    hops = np.floor(t * 1.0)
    travel = hops + _smooth((u - 0.25) / 0.5)                   # 0.25 m forward per hop
    root[:, :3, :3] = rot("y", 0.35 * np.sin(2 * np.pi * 0.2 * t))
    # the unfolding legs lift the body (0.15 m at e = 1), the flight adds an arc
    root[:, 1, 3] = 0.15 * e + 0.06 * np.clip(np.sin(np.pi * (u - 0.35) / 0.4), 0, None) * ((u > 0.35) & (u < 0.75))
    root[:, 2, 3] = 0.25 * travel
    return t, local, root


def keypoint_lines(v: np.ndarray) -> list[str]:
    """9 joints (snout tip, elbows, hands, knees, feet) and 8 vertex sets (eyes, back, rump, vent,
    throat, heels)."""
    lines = ["  snout_tip: snout_tip"]
    for side, _ in SIDES:
        lines += [f"  elbow_{side}: {{joint: elbow_{side}}}", f"  hand_{side}: hand_{side}",
                  f"  knee_{side}: {{joint: knee_{side}}}", f"  foot_{side}: {{joint: foot_{side}}}"]
    for side, s in (("left", 1.0), ("right", -1.0)):
        lines.append(f"  eye_{side}: {{vertices: {nearest_vertices(v, (s * 0.03, 0.12, 0.13), 3)}, "
                     "weights: [1, 1, 1]}")
    lines.append(f"  back: {{vertices: {nearest_vertices(v, (0, 0.13, 0.04), 4)}}}")
    lines.append(f"  rump: {{vertices: {nearest_vertices(v, (0, 0.11, -0.05), 4)}}}")
    lines.append(f"  vent: {{vertices: {nearest_vertices(v, (0, 0.065, -0.09), 3)}}}")
    lines.append(f"  throat: {{vertices: {nearest_vertices(v, (0, 0.035, 0.11), 3)}}}")
    for side, s in SIDES:
        lines.append(f"  heel_{side}: {{vertices: {nearest_vertices(v, (s * 0.07, 0.02, -0.095), 3)}}}")
    return lines


SYMMETRY = "axis: x\njoint_pairs:\n" + "".join(
    f"  - [{b}_L, {b}_R]\n" for b in PAIRED + ("finger", "toe"))

PLAN = Plan(skeleton=skeleton, radius_of=radius_of, animate=hop, clip="Hop",
            keypoint_lines=keypoint_lines, symmetry=SYMMETRY, sigma=0.012)


if __name__ == "__main__":
    write(PLAN, sys.argv[1] if len(sys.argv) > 1 else "frog.glb")
