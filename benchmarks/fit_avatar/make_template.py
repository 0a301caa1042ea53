"""Procedurally built rigged glTF templates for fit-avatar's benchmarks: the shared builder.

A body plan (``make_hexapod.py``, ``make_bird.py``, ``make_quadruped.py``,
``make_primate.py``, ``make_lizard.py``, ``make_frog.py``, ``make_kangaroo.py``, ``make_raptor.py``) gives a skeleton (names, parents, rest joint
positions in metres, x = left(+)/right(-), y up, z forward), a tube radius per bone, an animation
clip and its keypoints; this module turns it into a mesh, skinning weights, a .glb, a keypoint map
and a symmetry file:

* every bone (parent joint -> joint, except the bones of the unweighted root) is a tube of
  ``sides`` vertices per ring, ``rings`` rings, tapered towards both ends, with a fan cap at each
  end; each ring repeats its first vertex (a UV seam, as exported meshes have), so the mesh is
  unwelded and the fitter has to weld it and map its results back;
* skinning weights fall off with the distance to each bone segment (Gaussian of width ``sigma``
  metres, plus 0.5 on the bone the vertex was made for), the 4 largest kept.

    python benchmarks/fit_avatar/make_template.py --plan hexapod tests/data/hexapod/hexapod.glb
    python benchmarks/fit_avatar/make_template.py --plan bird benchmarks/fit_avatar/_bird/bird.glb
    python benchmarks/fit_avatar/make_template.py --plan quadruped benchmarks/fit_avatar/_quadruped/quadruped.glb
    python benchmarks/fit_avatar/make_template.py --plan primate benchmarks/fit_avatar/_primate/primate.glb
    python benchmarks/fit_avatar/make_template.py --plan lizard benchmarks/fit_avatar/_lizard/lizard.glb
    python benchmarks/fit_avatar/make_template.py --plan frog benchmarks/fit_avatar/_frog/frog.glb
    python benchmarks/fit_avatar/make_template.py --plan kangaroo benchmarks/fit_avatar/_kangaroo/kangaroo.glb
    python benchmarks/fit_avatar/make_template.py --plan raptor benchmarks/fit_avatar/_raptor/raptor.glb

writes TARGET and, beside it, <stem>_keypoints.yaml and <stem>_symmetry.yaml. Deterministic: same
bytes on every run.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np


def skeleton_arrays(joints: list[tuple[str, str | None, tuple]]):
    """[(name, parent name or None, rest position)] -> (names, parents (J,), positions (J, 3))."""
    names = [n for n, _, _ in joints]
    parents = np.array([-1 if p is None else names.index(p) for _, p, _ in joints])
    pos = np.array([p for _, _, p in joints], float)
    return names, parents, pos


def _meshed(names, parents, j) -> bool:
    """Bone parent(j) -> j gets a tube: not the root's own bones (the root stays unweighted)."""
    p = parents[j]
    return p >= 0 and names[p] != "root"


def tube_mesh(names, parents, pos, radius_of: Callable[[str], float], sides: int = 6, rings: int = 3):
    """Tubes along the bones: (vertices (V, 3), faces (F, 3), bone_of (V,) the owning (parent) joint)."""
    verts, faces, bone_of = [], [], []
    for j, p in enumerate(parents):
        if not _meshed(names, parents, j):
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
        for ring in range(rings):
            t = ring / (rings - 1)
            centre = a + axis * t
            rr = r * (1.0 - 0.25 * abs(2 * t - 1))
            for k in range(sides + 1):          # the last repeats the first: an unwelded seam
                ang = 2 * np.pi * (k % sides) / sides
                verts.append(centre + rr * (np.cos(ang) * e1 + np.sin(ang) * e2))
                bone_of.append(p)
        for ring in range(rings - 1):
            for k in range(sides):
                i0 = base + ring * (sides + 1) + k
                i1, i2, i3 = i0 + 1, i0 + sides + 1, i0 + sides + 2
                faces += [(i0, i2, i1), (i1, i2, i3)]
        # caps: a fan around the ring centre vertex at each end
        for ring, centre in ((0, a), (rings - 1, b)):
            c = len(verts)
            verts.append(centre.copy())
            bone_of.append(p)
            for k in range(sides):
                i0 = base + ring * (sides + 1) + k
                faces.append((c, i0, i0 + 1) if ring else (c, i0 + 1, i0))
    return np.asarray(verts), np.asarray(faces), bone_of


def skin_weights(names, parents, pos, verts: np.ndarray, bone_of, sigma: float = 0.006) -> np.ndarray:
    """(V, J) weights: a Gaussian of the distance to each bone segment, 0.5 more on the vertex's
    own bone, the 4 largest kept, rows summing to 1."""
    seg_a, seg_b, owner = [], [], []
    for j, p in enumerate(parents):
        if _meshed(names, parents, j):
            seg_a.append(pos[p])
            seg_b.append(pos[j])
            owner.append(p)
    seg_a, seg_b, owner = np.asarray(seg_a), np.asarray(seg_b), np.asarray(owner)
    d = seg_b - seg_a
    t = np.clip(((verts[:, None] - seg_a[None]) * d[None]).sum(-1) / (d * d).sum(-1)[None], 0, 1)
    dist = np.linalg.norm(verts[:, None] - (seg_a[None] + t[..., None] * d[None]), axis=-1)
    w_seg = np.exp(-(dist / sigma) ** 2)
    weights = np.zeros((len(verts), len(names)))
    np.add.at(weights.T, owner, w_seg.T)
    weights[np.arange(len(verts)), bone_of] += 0.5
    top = np.argsort(-weights, 1)[:, 4:]
    np.put_along_axis(weights, top, 0.0, 1)
    weights /= weights.sum(1, keepdims=True)
    return weights


def rot(axis: str, angle: np.ndarray) -> np.ndarray:
    """(T,) angles -> (T, 3, 3) rotations about a coordinate axis."""
    c, s = np.cos(angle), np.sin(angle)
    out = np.tile(np.eye(3), (len(angle), 1, 1))
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    out[:, i, i], out[:, i, j], out[:, j, i], out[:, j, j] = c, -s, s, c
    return out


def nearest_vertices(verts: np.ndarray, point, count: int) -> list[int]:
    """Indices of the ``count`` vertices nearest ``point`` (metres), nearest first."""
    return [int(i) for i in np.argsort(np.linalg.norm(verts - np.asarray(point, float), axis=1))[:count]]


@dataclass
class Plan:
    """A body plan: skeleton() -> (names, parents, pos); radius_of(parent joint name) -> metres;
    animate(names, parents, pos) -> (times (T,), local (T, J, 4, 4), root_world (T, 4, 4));
    keypoint_lines(verts) -> the YAML lines under 'keypoints:'; symmetry: the symmetry file's text."""

    skeleton: Callable
    radius_of: Callable[[str], float]
    animate: Callable
    clip: str
    keypoint_lines: Callable[[np.ndarray], list[str]]
    symmetry: str
    sigma: float = 0.006


def build(plan: Plan):
    """(names, parents, pos, vertices, faces, weights) of a plan."""
    names, parents, pos = plan.skeleton()
    verts, faces, bone_of = tube_mesh(names, parents, pos, plan.radius_of)
    return names, parents, pos, verts, faces, skin_weights(names, parents, pos, verts, bone_of, plan.sigma)


def write(plan: Plan, target: str) -> None:
    """Write the plan's .glb at ``target`` and <stem>_keypoints.yaml, <stem>_symmetry.yaml beside it."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from cortexkit.formats.gltf import write_gltf

    names, parents, pos, verts, faces, weights = build(plan)
    bind = np.tile(np.eye(4), (len(names), 1, 1))
    bind[:, :3, 3] = pos
    rest_local = bind.copy()
    for j, p in enumerate(parents):
        if p >= 0:
            rest_local[j, :3, 3] = pos[j] - pos[p]
    times, local, root = plan.animate(names, parents, pos)
    data = write_gltf(target, vertices=verts, faces=faces, weights=weights, joint_names=names,
                      parents=parents, bind_world=bind, rest_local=rest_local, times=times, local=local,
                      root_world=root, clip=plan.clip)
    folder = os.path.dirname(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)
    with open(target, "wb") as handle:
        handle.write(data)
    stem = os.path.splitext(os.path.basename(target))[0]
    lines = [f"template: {os.path.basename(target)}", "keypoints:"] + plan.keypoint_lines(verts)
    with open(os.path.join(folder, f"{stem}_keypoints.yaml"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, f"{stem}_symmetry.yaml"), "w") as handle:
        handle.write(plan.symmetry)


def load_template(template, keypoints=None, symmetry=None):
    """(mesh, Template) of a benchmark template: its .glb in metres with the keypoint map and symmetry
    file ``write`` puts beside it (or the given files), in mm."""
    from pathlib import Path

    import yaml

    from cortexkit.formats.gltf import read_gltf
    from cortexkit.tools.avatar.model import template_from_mesh

    template = Path(template)
    mesh = read_gltf(template)
    kmap = yaml.safe_load(Path(keypoints or template.with_name(f"{template.stem}_keypoints.yaml")).read_text())
    sym = yaml.safe_load(Path(symmetry or template.with_name(f"{template.stem}_symmetry.yaml")).read_text())
    return mesh, template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                                    mesh.rest_world, unit_mm=1000.0, keypoints=kmap, symmetry=sym)


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", choices=["hexapod", "bird", "quadruped", "primate", "lizard", "frog", "kangaroo", "raptor"], required=True)
    ap.add_argument("target")
    args = ap.parse_args()
    if args.plan == "hexapod":
        from make_hexapod import PLAN
    elif args.plan == "bird":
        from make_bird import PLAN
    elif args.plan == "quadruped":
        from make_quadruped import PLAN
    elif args.plan == "primate":
        from make_primate import PLAN
    elif args.plan == "lizard":
        from make_lizard import PLAN
    elif args.plan == "frog":
        from make_frog import PLAN
    elif args.plan == "kangaroo":
        from make_kangaroo import PLAN
    else:
        from make_raptor import PLAN
    write(PLAN, args.target)


if __name__ == "__main__":
    main()
