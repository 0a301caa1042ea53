"""A procedurally built rigged glTF of a six-legged animal: fit-avatar's non-Fox template.

Body plan (a different one from the Fox's quadruped): an unweighted root at the body centre
with two children, the abdomen chain (lower body, 3 bones) and the thorax chain (upper body,
3 bones) that carries a two-bone neck and the head; three pairs of legs (coxa, femur, tibia)
on the thorax segments. Every bone is a tube of ``SIDES`` vertices per ring; each ring repeats its
first vertex (a UV seam, as exported meshes have), so the mesh is unwelded and the fitter has to
weld it and map its results back. Skinning weights fall off with the distance to each bone
segment (the 4 largest kept). Units: metres (glTF), about 0.3 m long. One animation clip,
"Walk": 60 frames of a tripod gait at 30 fps.

    python benchmarks/fit_avatar/make_hexapod.py tests/data/hexapod/hexapod.glb

also writes hexapod_keypoints.yaml (joints and vertex sets, under a nested 'keypoints:' key) and
hexapod_symmetry.yaml beside it. Deterministic: same bytes on every run.
"""

from __future__ import annotations

import os
import sys

import numpy as np

SIDES, RINGS = 6, 3


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


def build():
    names, parents, pos = skeleton()
    verts, faces, bone_of = [], [], []
    for j, p in enumerate(parents):
        if p < 0 or names[p] == "root":
            continue
        a, b = pos[p], pos[j]
        axis = b - a
        length = np.linalg.norm(axis)
        u = axis / length
        ref = np.array([0, 1.0, 0]) if abs(u[1]) < 0.9 else np.array([1.0, 0, 0])
        e1 = np.cross(u, ref)
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(u, e1)
        r = radius_of(names[p])
        base = len(verts)
        for ring in range(RINGS):
            t = ring / (RINGS - 1)
            centre = a + axis * t
            rr = r * (1.0 - 0.25 * abs(2 * t - 1))
            for k in range(SIDES + 1):          # the last repeats the first: an unwelded seam
                ang = 2 * np.pi * (k % SIDES) / SIDES
                verts.append(centre + rr * (np.cos(ang) * e1 + np.sin(ang) * e2))
                bone_of.append(p)
        for ring in range(RINGS - 1):
            for k in range(SIDES):
                i0 = base + ring * (SIDES + 1) + k
                i1, i2, i3 = i0 + 1, i0 + SIDES + 1, i0 + SIDES + 2
                faces += [(i0, i2, i1), (i1, i2, i3)]
        # caps: a fan around the ring centre vertex at each end
        for ring, centre in ((0, a), (RINGS - 1, b)):
            c = len(verts)
            verts.append(centre.copy())
            bone_of.append(p)
            for k in range(SIDES):
                i0 = base + ring * (SIDES + 1) + k
                faces.append((c, i0, i0 + 1) if ring else (c, i0 + 1, i0))
    verts = np.asarray(verts)
    # weights: distance to each bone segment (parent joint -> joint), softly
    seg_a, seg_b, owner = [], [], []
    for j, p in enumerate(parents):
        if p >= 0 and names[p] != "root":
            seg_a.append(pos[p])
            seg_b.append(pos[j])
            owner.append(p)
    seg_a, seg_b, owner = np.asarray(seg_a), np.asarray(seg_b), np.asarray(owner)
    d = seg_b - seg_a
    t = np.clip(((verts[:, None] - seg_a[None]) * d[None]).sum(-1) / (d * d).sum(-1)[None], 0, 1)
    dist = np.linalg.norm(verts[:, None] - (seg_a[None] + t[..., None] * d[None]), axis=-1)
    w_seg = np.exp(-(dist / 0.006) ** 2)
    weights = np.zeros((len(verts), len(names)))
    np.add.at(weights.T, owner, w_seg.T)
    weights[np.arange(len(verts)), bone_of] += 0.5
    top = np.argsort(-weights, 1)[:, 4:]
    np.put_along_axis(weights, top, 0.0, 1)
    weights /= weights.sum(1, keepdims=True)
    return names, parents, pos, verts, np.asarray(faces), weights


def _rot(axis: str, angle: np.ndarray) -> np.ndarray:
    """(T,) angles -> (T, 3, 3) rotations about a coordinate axis."""
    c, s = np.cos(angle), np.sin(angle)
    out = np.tile(np.eye(3), (len(angle), 1, 1))
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    out[:, i, i], out[:, i, j], out[:, j, i], out[:, j, j] = c, -s, s, c
    return out


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
        rot = np.tile(np.eye(3), (frames, 1, 1))
        if name[:-3] in ("coxa", "femur", "tibia") or name.startswith(("coxa", "femur", "tibia")):
            seg, side = int(name[-3]), name[-1]
            sign = 1.0 if side == "L" else -1.0
            tripod = 0.0 if (seg + (side == "R")) % 2 else np.pi
            ph = phase + tripod
            if name.startswith("coxa"):
                rot = _rot("y", 0.35 * np.sin(ph))
            elif name.startswith("femur"):
                rot = _rot("z", sign * 0.35 * np.clip(np.cos(ph), 0, None))
            else:
                rot = _rot("z", -sign * 0.25 * np.clip(np.cos(ph), 0, None))
        elif name.startswith("abdomen") and name != "abdomen_tip":
            k = int(name[-1])
            rot = _rot("x", 0.08 * np.sin(phase + k)) @ _rot("y", 0.1 * np.sin(0.5 * phase + k))
        elif name in ("neck1", "neck2", "head"):
            rot = _rot("y", 0.2 * np.sin(0.5 * phase)) @ _rot("x", 0.1 * np.sin(phase))
        elif name in ("thorax2", "thorax3"):
            rot = _rot("y", 0.05 * np.sin(0.5 * phase))
        local[:, j, :3, :3] = rot
    root = np.tile(np.eye(4), (frames, 1, 1))
    root[:, :3, :3] = _rot("y", 0.15 * np.sin(0.3 * phase))
    root[:, 2, 3] = 0.15 * t
    return t, local, root


def write(target: str) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from cortexkit.formats.gltf import write_gltf

    names, parents, pos, verts, faces, weights = build()
    bind = np.tile(np.eye(4), (len(names), 1, 1))
    bind[:, :3, 3] = pos
    rest_local = bind.copy()
    for j, p in enumerate(parents):
        if p >= 0:
            rest_local[j, :3, 3] = pos[j] - pos[p]
    times, local, root = walk(names, parents, pos)
    data = write_gltf(target, vertices=verts, faces=faces, weights=weights, joint_names=names,
                      parents=parents, bind_world=bind, rest_local=rest_local, times=times, local=local,
                      root_world=root, clip="Walk")
    with open(target, "wb") as handle:
        handle.write(data)
    folder = os.path.dirname(os.path.abspath(target))
    # keypoints: leg tips and the abdomen tip as joints, eyes and the back as vertex sets
    v = verts
    eye = {side: [int(i) for i in np.argsort(np.linalg.norm(v - np.array([sx * 0.009, 0.08, 0.165]), axis=1))[:3]]
           for side, sx in (("left", 1), ("right", -1))}
    back = [int(i) for i in np.argsort(np.linalg.norm(v - np.array([0, 0.08, 0.0]), axis=1))[:4]]
    lines = ["template: hexapod.glb", "keypoints:"]
    for name in ("head_tip", "neck1", "thorax1", "thorax3", "abdomen2", "abdomen_tip"):
        lines.append(f"  {name}: {name}")
    for seg in (1, 2, 3):
        for side in ("L", "R"):
            lines.append(f"  knee{seg}_{side}: {{joint: tibia{seg}_{side}}}")
            lines.append(f"  foot{seg}_{side}: foot{seg}_{side}")
    for side in ("left", "right"):
        lines.append(f"  eye_{side}: {{vertices: {eye[side]}, weights: [1, 1, 1]}}")
    lines.append(f"  back: {{vertices: {back}}}")
    with open(os.path.join(folder, "hexapod_keypoints.yaml"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, "hexapod_symmetry.yaml"), "w") as handle:
        handle.write("axis: x\njoint_pairs:\n" + "".join(
            f"  - [{b}{s}_L, {b}{s}_R]\n" for s in (1, 2, 3) for b in ("coxa", "femur", "tibia")))


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "hexapod.glb")
