"""The template and its forward model (BigMaQ's linear blend skinning with bone scales).

Per frame: axis-angle θ_i for every free joint (others identity), a global rotation R_g and
translation t_g; per subject: a global scale s, per-bone-group scales b (left/right share a group)
and rest-space vertex offsets Δ shared between mirror vertices (x negated for the partner).

    M_i = M_parent(i) · Q_i R(θ_i) Q_iᵀ               (θ in the joint's rest frame Q_i)
    p_i = p_parent(i) + M_parent(i) · s b_i (J_i − J_parent(i)),   p_root = s J_root
    v'  = Σ_i w_vi (M_i (s (v + Δ_v) − s J_i) + p_i)   (skinned relative to the rest joints s J_i)
    v'' = R_g v' + t_g,   joints'' = R_g p_i + t_g

With Q_i = I this is BigMaQ's kinematic tree exactly (bone scales move the joint frames, the rest
mesh is not pre-scaled by them, so long bones stretch the skin between joints).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from cortexkit.tools.avatar.rotation import rodrigues

_SIDE = re.compile(r"(left|right|(?<![a-z])[lr](?![a-z]))", re.IGNORECASE)
EXTREMITY = re.compile(r"hand|foot|paw|finger|toe|wrist|ankle", re.IGNORECASE)
# the same names without the two that name a limb's middle joint on some rigs (a frog's ankle turns its tarsus)
EXTREMITY_DISTAL = re.compile(r"hand|foot|paw|finger|toe", re.IGNORECASE)
EXTREMITY_RULES = ("names", "names-distal", "limb-ends", "limb-ends+twist")
# the default since 2026-12-07 (RESULTS section 22; "names" before): x100 on each limb's last free joint,
# x100 on the twist only of the mid-limb joints names marks (a frog's ankle)
EXTREMITY_DEFAULT = "limb-ends+twist"


def extremity_joints(rule: str, joint_names: list[str], parents: list[int], free: np.ndarray,
                     joints: np.ndarray, mirror_axis: int = 0) -> np.ndarray:
    """(J,) bool: the joints whose angular motion the track's temporal term weights by
    ``FitConfig.extremity_factor`` (BigMaQ's ``selection_scalar`` on its four end effectors, the
    LeftHand, RightHand, LeftFoot, RightFoot joints: the last posed joint of each limb).

    ``names``: joint names matching :data:`EXTREMITY` (hand, foot, paw, finger, toe, wrist, ankle).
    ``names-distal``: :data:`EXTREMITY_DISTAL` (the same without wrist and ankle).
    ``limb-ends``: structural, names unused: a limb starts at a free joint off the mirror plane
    whose parent lies on it (rest positions ``joints`` (J, 3), ``mirror_axis``); it is followed
    while its joint has exactly one free child; the joint where it ends (no free child, or a
    branch such as a hand's fingers) is the limb's end and is marked when the limb has at least
    two free joints (an ear of one bone is not a limb)."""
    n = len(joint_names)
    if rule == "names":
        return np.array([bool(EXTREMITY.search(x)) for x in joint_names])
    if rule == "names-distal":
        return np.array([bool(EXTREMITY_DISTAL.search(x)) for x in joint_names])
    if rule not in ("limb-ends", "limb-ends+twist"):   # the latter's full-factor marks (+ twist axes)
        raise ValueError(f"unknown extremity rule '{rule}' (rules: {', '.join(EXTREMITY_RULES)})")
    free = np.asarray(free, bool)
    joints = np.asarray(joints, np.float64)
    tol = 1e-2 * float(np.ptp(joints, 0).max()) if n > 1 else 0.0
    off_plane = np.abs(joints[:, mirror_axis]) > tol
    free_children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(parents):
        if p >= 0 and free[i]:
            free_children[p].append(i)
    marked = np.zeros(n, bool)
    for start in range(n):
        p = parents[start]
        if not free[start] or not off_plane[start] or (p >= 0 and off_plane[p]):
            continue
        end, length = start, 1
        while len(free_children[end]) == 1:
            end, length = free_children[end][0], length + 1
        if length >= 2:
            marked[end] = True
    return marked


def extremity_twist_axes(rule: str, joint_names: list[str], parents: list[int], free: np.ndarray,
                         joints: np.ndarray, frames: np.ndarray, mirror_axis: int = 0) -> np.ndarray | None:
    """(J, 3) unit bone axes, or None: the joints whose angular acceleration's TWIST component (about
    the bone from the joint to its child) the track's temporal term weights by
    ``FitConfig.extremity_twist_factor``, the swing keeping weight 1.

    ``limb-ends+twist`` (RESULTS section 22): the joints ``names`` marks that ``limb-ends`` does not
    (the mid-limb wrists and ankles), which have a child joint: a keypoint at that child lies on the
    bone's axis and cannot see the twist. The axis is the rest bone to the child (the one free child
    if there is one, else the first child), in the joint's rest frame ``frames`` (J, 3, 3) (the frame
    the pose's axis-angle acts in); rows of unmarked joints are zero. Other rules: None (no twist
    marks; an avatar without them tracks as before)."""
    if rule != "limb-ends+twist":
        return None
    names = extremity_joints("names", joint_names, parents, free, joints, mirror_axis)
    ends = extremity_joints("limb-ends", joint_names, parents, free, joints, mirror_axis)
    free = np.asarray(free, bool)
    joints = np.asarray(joints, np.float64)
    frames = np.asarray(frames, np.float64)
    axes = np.zeros((len(joint_names), 3))
    for j in np.nonzero(names & ~ends & free)[0]:
        children = [c for c, p in enumerate(parents) if p == j]
        free_children = [c for c in children if free[c]]
        pick = free_children[0] if len(free_children) == 1 else (children[0] if children else None)
        if pick is None:
            continue
        bone = joints[pick] - joints[j]
        if np.linalg.norm(bone) <= 0:
            continue
        axes[j] = frames[j].T @ (bone / np.linalg.norm(bone))
    return axes


def extremity_marks(rule: str, joint_names: list[str], parents: list[int], free: np.ndarray,
                    joints: np.ndarray, frames: np.ndarray, mirror_axis: int = 0):
    """((J,) bool full-factor marks, (J, 3) twist axes or None) of a rule in :data:`EXTREMITY_RULES`
    (``limb-ends+twist``: limb-ends' marks plus :func:`extremity_twist_axes`)."""
    if rule == "limb-ends+twist":
        marks = extremity_joints("limb-ends", joint_names, parents, free, joints, mirror_axis)
        return marks, extremity_twist_axes(rule, joint_names, parents, free, joints, frames, mirror_axis)
    return extremity_joints(rule, joint_names, parents, free, joints, mirror_axis), None


@dataclass
class Template:
    """A rigged template in millimetres. Shapes: vertices (V, 3), faces (F, 3), weights (V, J),
    parents (J,) (-1 = root, parents come first), joints (J, 3) rest positions, frames (J, 3, 3)
    rest orientations, free (J,) bool, limits (J, 2, 3) lower/upper axis-angle box, bone_group (J,)
    (-1 = scale fixed to 1), offset_index (V,) (-1 = no offset), offset_mirror (V, 3) (+1/−1/0
    per component), keypoints_joint (K, J) and keypoints_vertex (K, V) weights, extremity (J,) bool,
    edges (E, 2). The fit works on the welded mesh (V vertices); ``source_index`` (V_src,) and
    ``source_faces`` (F_src, 3) give the input's own vertex and face order back on output."""

    vertices: torch.Tensor
    faces: torch.Tensor
    weights: torch.Tensor
    parents: list[int]
    joints: torch.Tensor
    frames: torch.Tensor
    joint_names: list[str]
    free: torch.Tensor
    limits: torch.Tensor
    bone_group: torch.Tensor
    group_names: list[str]
    offset_index: torch.Tensor
    offset_mirror: torch.Tensor
    keypoint_names: list[str]
    keypoints_joint: torch.Tensor
    keypoints_vertex: torch.Tensor
    extremity: torch.Tensor
    edges: torch.Tensor
    n_offsets: int = 0
    meta: dict = field(default_factory=dict)
    source_index: torch.Tensor | None = None   # (V_src,) the welded vertex of each input vertex
    source_faces: torch.Tensor | None = None   # (F_src, 3) the input's faces, input vertex indices
    # (J, 3) unit bone axes (joint rest frame) whose twist the temporal term weights; None = none
    extremity_twist: torch.Tensor | None = None

    def to_source(self, values: torch.Tensor) -> torch.Tensor:
        """Per-vertex values (..., V, d) -> the same in the input mesh's vertex order (..., V_src, d)."""
        return values if self.source_index is None else values[..., self.source_index, :]

    @property
    def output_faces(self) -> torch.Tensor:
        """(F_src, 3) the input's faces in its own order (indices into :meth:`to_source` rows)."""
        return self.faces if self.source_faces is None else self.source_faces

    @property
    def n_joints(self) -> int:
        return len(self.parents)

    @property
    def n_groups(self) -> int:
        return len(self.group_names)

    def select_keypoints(self, names: list[str]) -> "Template":
        """The template with its keypoints restricted to and ordered as ``names``."""
        idx = [self.keypoint_names.index(n) for n in names]
        return replace(self, keypoint_names=list(names), keypoints_joint=self.keypoints_joint[idx],
                       keypoints_vertex=self.keypoints_vertex[idx])


@dataclass
class Shape:
    """Subject shape: scale (), bone_scales (G,), offsets (P, 3) in mm; optional keypoint markers
    (K, 3) mm with their keypoint names: each keypoint's offset from the template's joint / vertex
    set, in the rest frame of the bone that carries it (:func:`marker_joints`), so it rides
    rigidly with that bone (a keypoint the hidden individual has off the template's vertices)."""

    scale: torch.Tensor
    bone_scales: torch.Tensor
    offsets: torch.Tensor
    markers: torch.Tensor | None = None
    marker_names: list[str] | None = None

    @staticmethod
    def neutral(template: Template, dtype=torch.float32) -> "Shape":
        return Shape(torch.ones((), dtype=dtype), torch.ones(template.n_groups, dtype=dtype),
                     torch.zeros(template.n_offsets, 3, dtype=dtype))


@dataclass
class Pose:
    """Per-frame pose: rotations (N, J, 3) axis-angle (zero where not free), global_rot (N, 3),
    global_t (N, 3) mm."""

    rotations: torch.Tensor
    global_rot: torch.Tensor
    global_t: torch.Tensor

    @staticmethod
    def zeros(n: int, template: Template, dtype=torch.float32) -> "Pose":
        return Pose(torch.zeros(n, template.n_joints, 3, dtype=dtype),
                    torch.zeros(n, 3, dtype=dtype), torch.zeros(n, 3, dtype=dtype))


def vertex_offsets(template: Template, offsets: torch.Tensor) -> torch.Tensor:
    """(P, 3) free offsets -> (V, 3) per-vertex offsets (mirror partners share, x negated)."""
    idx = template.offset_index
    full = torch.zeros(len(idx), 3, dtype=offsets.dtype)
    if offsets.numel() == 0:
        return full
    valid = idx >= 0
    full[valid] = offsets[idx[valid]] * template.offset_mirror[valid].to(offsets.dtype)
    return full


def marker_joints(template: Template) -> torch.Tensor:
    """(K,) the bone that carries each keypoint: the joint with the largest weight among its
    joint weights plus its vertex set's skinning weights (a joint keypoint: that joint)."""
    score = template.keypoints_joint.abs().double() + template.keypoints_vertex.abs().double() @ template.weights.double()
    return score.argmax(1)


def keypoint_markers(template: Template, shape: Shape) -> torch.Tensor | None:
    """The shape's markers (K, 3) mm in the order of ``template.keypoint_names`` (zeros for a
    keypoint the shape has no marker for), or None when the shape has none."""
    if shape.markers is None:
        return None
    names = shape.marker_names
    if names is None or list(names) == list(template.keypoint_names):
        if len(shape.markers) != len(template.keypoint_names):
            raise ValueError(f"{len(shape.markers)} keypoint markers for {len(template.keypoint_names)} keypoints")
        return shape.markers
    index = {n: i for i, n in enumerate(names)}
    rows = [index.get(n, -1) for n in template.keypoint_names]
    out = shape.markers.new_zeros(len(rows), 3)
    have = [k for k, r in enumerate(rows) if r >= 0]
    if have:
        out = out.index_copy(0, torch.tensor(have), shape.markers[[rows[k] for k in have]])
    return out


def forward(template: Template, shape: Shape, pose: Pose, *, with_vertices: bool = True):
    """The posed model. Returns (vertices (N, V, 3) or None, joints (N, J, 3), keypoints (N, K, 3))."""
    dtype = pose.rotations.dtype
    n = pose.rotations.shape[0]
    s = shape.scale
    groups = template.bone_group
    bone = torch.ones(template.n_joints, dtype=dtype)
    if template.n_groups:
        bone = torch.where(groups >= 0, shape.bone_scales[groups.clamp(min=0)], bone)
    q = template.frames.to(dtype)
    rot = rodrigues(pose.rotations * template.free[None, :, None].to(dtype))
    local = q[None] @ rot @ q.transpose(-1, -2)[None]
    rest = template.joints.to(dtype)
    mats, pos = [], []
    for i, p in enumerate(template.parents):
        if p < 0:
            mats.append(local[:, i])
            pos.append((s * rest[i]).expand(n, 3))
        else:
            mats.append(mats[p] @ local[:, i])
            pos.append(pos[p] + torch.einsum("nab,b->na", mats[p], s * bone[i] * (rest[i] - rest[p])))
    m = torch.stack(mats, 1)   # (N, J, 3, 3)
    p_joint = torch.stack(pos, 1)  # (N, J, 3)
    g = rodrigues(pose.global_rot)  # (N, 3, 3)
    joints_world = torch.einsum("nab,njb->nja", g, p_joint) + pose.global_t[:, None]
    verts_world = None
    if with_vertices or template.keypoints_vertex.abs().sum() > 0:
        u = s * (template.vertices.to(dtype) + vertex_offsets(template, shape.offsets))  # (V, 3)
        rel = u[None, None] - (s * rest)[None, :, None]   # (1, J, V, 3)
        w = template.weights.to(dtype)
        # Σ_i w_vi (M_i rel_iv + p_i) without materialising (N, J, V, 3) more than once
        per = torch.einsum("njab,jvb->njva", m, rel[0]) + p_joint[:, :, None]
        skinned = torch.einsum("vj,njva->nva", w, per)
        verts_world = torch.einsum("nab,nvb->nva", g, skinned) + pose.global_t[:, None]
    keypoints = torch.einsum("kj,nja->nka", template.keypoints_joint.to(dtype), joints_world)
    if verts_world is not None and template.keypoints_vertex.abs().sum() > 0:
        keypoints = keypoints + torch.einsum("kv,nva->nka", template.keypoints_vertex.to(dtype), verts_world)
    markers = keypoint_markers(template, shape)
    if markers is not None:   # rest-frame offsets carried by the bone's world rotation R_g M_j
        bone_rot = g[:, None] @ m[:, marker_joints(template)]          # (N, K, 3, 3)
        keypoints = keypoints + torch.einsum("nkab,kb->nka", bone_rot, markers.to(dtype))
    return (verts_world if with_vertices else None), joints_world, keypoints


def joint_world_transforms(template: Template, shape: Shape, pose: Pose) -> tuple[torch.Tensor, torch.Tensor]:
    """World rotations of the skinning frames (N, J, 3, 3) (R_g M_i) and joint positions (N, J, 3)."""
    dtype = pose.rotations.dtype
    q = template.frames.to(dtype)
    rot = rodrigues(pose.rotations * template.free[None, :, None].to(dtype))
    local = q[None] @ rot @ q.transpose(-1, -2)[None]
    mats = []
    for i, p in enumerate(template.parents):
        mats.append(local[:, i] if p < 0 else mats[p] @ local[:, i])
    g = rodrigues(pose.global_rot)
    _, joints, _ = forward(template, shape, pose, with_vertices=False)
    return g[:, None] @ torch.stack(mats, 1), joints


# ---------------------------------------------------------------------------------------------
# building a template from a skinned mesh

def _weld(vertices: np.ndarray, faces: np.ndarray, weights: np.ndarray, tol: float):
    """Merge vertices at the same position with the same weights (glTF meshes are often unwelded
    at UV seams).

    Welded vertices keep the order of their first occurrence, so a mesh with nothing to merge
    comes back unchanged (same vertex order, same faces). Returns (vertices, faces, weights,
    inverse (V_src,) the welded index of every input vertex)."""
    # position and skinning weights: a seam duplicate has both equal; two parts that only touch
    # (a cap centre on a joint) keep their own vertices and weights
    key = np.concatenate([np.round(vertices / tol), np.round(weights * 1e4)], 1).astype(np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")          # unique rows in first-occurrence order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    inverse = rank[inverse]
    first = first[order]
    faces = inverse[faces]
    faces = faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])]
    return vertices[first], faces, weights[first], inverse


def side_free_name(name: str) -> str:
    """The joint name with its side removed, so Left/Right joints share a bone-scale group."""
    base = re.sub(r"[_.-]?\d+$", "", name)   # drop trailing indices (b_LeftLeg01_015 -> b_LeftLeg01)
    return _SIDE.sub("", base).strip("_.- ").lower()


def _mirror(vertices: np.ndarray, axis: int, tol: float, excluded: np.ndarray,
            pairs: np.ndarray | None = None):
    """Pair each vertex with its mirror image across the plane x_axis = 0 (or take the given
    ``pairs`` (n, 2) of welded indices instead of searching).

    Returns offset_index (V,) and offset_mirror (V, 3) and the number of free offsets."""
    if pairs is None:
        from scipy.spatial import cKDTree

        flipped = vertices.copy()
        flipped[:, axis] *= -1
        dist, partner = cKDTree(vertices).query(flipped)
        ok = (dist < tol) & (partner[partner] == np.arange(len(vertices)))
        partner = np.where(ok, partner, -1)
    else:
        partner = -np.ones(len(vertices), np.int64)
        for i, j in pairs:
            partner[i], partner[j] = j, i
    index = -np.ones(len(vertices), np.int64)
    mirror = np.ones((len(vertices), 3))
    count = 0
    for v in range(len(vertices)):
        if excluded[v] or index[v] >= 0:
            continue
        j = partner[v]
        if j >= 0 and j != v and not excluded[j] and index[j] < 0:
            index[v], index[j] = count, count
            mirror[j, axis] = -1.0
        else:
            index[v] = count
            if pairs is None and abs(vertices[v, axis]) < tol:
                mirror[v, axis] = 0.0  # on the plane: stays on it
        count += 1
    return index, mirror, count


KEYPOINT_MAP_HELP = ("a keypoint map is name: JOINT, name: {joint: JOINT}, or name: {vertices: [i, ...], "
                     "weights: [w, ...]} (input vertex indices), optionally under a top-level 'keypoints:' key")


def parse_keypoint_map(spec, joint_names: list[str], n_vertices: int) -> dict:
    """A keypoint map (YAML already loaded) -> {name: ("joint", j) | ("vertices", ids, weights)}.

    Accepted: ``{name: JOINT}``, ``{name: {joint: JOINT}}``, ``{name: {vertices: [...],
    weights: [...]}}`` (weights default to equal; indices of the input mesh), each either at the
    top level or under a ``keypoints:`` section (other top-level keys are then ignored). Every
    wrong entry is named in one ValueError."""
    if isinstance(spec, dict) and isinstance(spec.get("keypoints"), dict):
        spec = spec["keypoints"]
    if not isinstance(spec, dict) or not spec:
        raise ValueError(f"the keypoint map is not a mapping of names: {KEYPOINT_MAP_HELP}")
    out, errors = {}, []
    for name, entry in spec.items():
        where = f"keypoint '{name}'"
        if isinstance(entry, dict) and set(entry) == {"joint"}:
            entry = entry["joint"]
        if isinstance(entry, str):
            if entry not in joint_names:
                errors.append(f"{where} names an unknown joint '{entry}'")
            else:
                out[str(name)] = ("joint", joint_names.index(entry))
            continue
        if isinstance(entry, dict) and "vertices" in entry and set(entry) <= {"vertices", "weights"}:
            ids = entry["vertices"]
            ids = [ids] if isinstance(ids, int) else ids
            if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool)
                                                                for i in ids):
                errors.append(f"{where}: 'vertices' must be a non-empty list of vertex indices")
                continue
            bad = [i for i in ids if not 0 <= i < n_vertices]
            if bad:
                errors.append(f"{where}: vertex index {bad[0]} outside the template's {n_vertices} vertices")
                continue
            w = entry.get("weights", [1.0] * len(ids))
            if (not isinstance(w, list) or len(w) != len(ids)
                    or not all(isinstance(x, (int, float)) and x >= 0 for x in w) or sum(w) <= 0):
                errors.append(f"{where}: 'weights' must be {len(ids)} non-negative numbers, not all zero")
                continue
            out[str(name)] = ("vertices", np.asarray(ids, np.int64), np.asarray(w, float))
            continue
        errors.append(f"{where}: {entry!r} is neither a joint name, {{joint: NAME}} nor "
                      "{vertices: [...], weights: [...]}")
    if errors:
        raise ValueError("; ".join(errors) + f" ({KEYPOINT_MAP_HELP})")
    return out


SYMMETRY_KEYS = {"axis", "vertex_pairs", "excluded_vertices", "joint_pairs", "bone_groups"}


def parse_symmetry(spec, joint_names: list[str], n_vertices: int) -> dict:
    """A symmetry file (YAML already loaded) -> checked dict with keys ``axis`` (0/1/2),
    ``vertex_pairs`` (n, 2) input indices or None, ``excluded_vertices`` (m,) input indices,
    ``joint_pairs`` [(i, j)] or None, ``bone_groups`` [[i, ...]]. Every wrong entry is named
    in one ValueError."""
    if not isinstance(spec, dict):
        raise ValueError(f"the symmetry file is not a mapping (keys: {', '.join(sorted(SYMMETRY_KEYS))})")
    errors = [f"unknown key '{k}' (keys: {', '.join(sorted(SYMMETRY_KEYS))})" for k in spec if k not in SYMMETRY_KEYS]
    axis = spec.get("axis", "x")
    axes = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}
    if axis not in axes:
        errors.append(f"axis {axis!r}: expected x, y or z")
    out = {"axis": axes.get(axis, 0), "vertex_pairs": None, "excluded_vertices": np.zeros(0, np.int64),
           "joint_pairs": None, "bone_groups": []}

    def vertex_list(key, width):
        value = spec.get(key)
        if value is None:
            return None
        arr = np.asarray(value)
        if arr.dtype.kind not in "iu" or (width and (arr.ndim != 2 or arr.shape[1] != width)) or \
                (not width and arr.ndim != 1):
            errors.append(f"{key}: expected a list of {'pairs of ' if width else ''}vertex indices")
            return None
        if arr.size and (arr.min() < 0 or arr.max() >= n_vertices):
            errors.append(f"{key}: vertex index {int(arr.max() if arr.max() >= n_vertices else arr.min())} "
                          f"outside the template's {n_vertices} vertices")
            return None
        return arr.astype(np.int64)

    out["vertex_pairs"] = vertex_list("vertex_pairs", 2)
    excluded = vertex_list("excluded_vertices", 0)
    if excluded is not None:
        out["excluded_vertices"] = excluded

    def joints_of(key, group, size=None):
        if not isinstance(group, list) or (size and len(group) != size) or not group:
            errors.append(f"{key}: {group!r} is not a list of {size or 'some'} joint names")
            return None
        unknown = [g for g in group if g not in joint_names]
        if unknown:
            errors.append(f"{key}: unknown joint '{unknown[0]}'")
            return None
        return [joint_names.index(g) for g in group]

    if spec.get("joint_pairs") is not None:
        pairs = [joints_of("joint_pairs", g, 2) for g in (spec["joint_pairs"] or [])]
        out["joint_pairs"] = [tuple(p) for p in pairs if p is not None]
    out["bone_groups"] = [g for g in (joints_of("bone_groups", g) for g in (spec.get("bone_groups") or []))
                          if g is not None]
    if errors:
        raise ValueError("symmetry file: " + "; ".join(errors))
    return out


def bone_groups(joint_names: list[str], parents: list[int], joints: np.ndarray, free: np.ndarray,
                weighted_below: np.ndarray, tol: float, axis: int = 0,
                joint_pairs: list[tuple[int, int]] | None = None,
                groups: list[list[int]] | None = None) -> tuple[np.ndarray, list[str]]:
    """One scale per bone, shared only by symmetric pairs and by ``groups`` the user asks for.

    A bone is joint i with its parent p (non-zero length, skin below it or a moving parent, so
    leaf joints such as foot tips count). It is left out only
    where its scale is a pure translation: the single scaled child of a joint that does not
    move by itself (a root above the skin). Symmetric pairs: ``joint_pairs`` when given, else
    joints whose names differ only by side (left/right, l/r) and whose rest positions mirror
    across the plane x_axis = 0 (within ``tol``). Returns (bone_group (J,), group names)."""
    n = len(parents)
    candidate = np.array([parents[i] >= 0 and (weighted_below[i] or free[parents[i]])
                          and np.linalg.norm(joints[i] - joints[parents[i]]) > tol * 1e-3 for i in range(n)])
    children = np.zeros(n, np.int64)
    for i in range(n):
        if candidate[i]:
            children[parents[i]] += 1
    scaled = np.array([candidate[i] and (free[parents[i]] or children[parents[i]] >= 2) for i in range(n)])
    parent_of = list(range(n))          # union-find over joints

    def find(i):
        while parent_of[i] != i:
            parent_of[i] = parent_of[parent_of[i]]
            i = parent_of[i]
        return i

    def union(i, j):
        parent_of[find(j)] = find(i)

    if joint_pairs is None:
        joint_pairs = []
        for i in range(n):
            for j in range(i + 1, n):
                if not (scaled[i] and scaled[j]) or side_free_name(joint_names[i]) != side_free_name(joint_names[j]):
                    continue
                if joint_names[i].lower() == joint_names[j].lower():
                    continue
                mirrored = joints[j].copy()
                mirrored[axis] *= -1
                if np.linalg.norm(joints[i] - mirrored) < tol and abs(joints[i][axis]) > tol * 0.5:
                    joint_pairs.append((i, j))
    for i, j in joint_pairs:
        union(i, j)
    for g in groups or []:
        for j in g[1:]:
            union(g[0], j)
    bone_group = -np.ones(n, np.int64)
    names: list[str] = []
    roots: dict[int, int] = {}
    for i in range(n):
        if not scaled[i]:
            continue
        r = find(i)
        if r not in roots:
            roots[r] = len(names)
            members = [joint_names[k] for k in range(n) if scaled[k] and find(k) == r]
            names.append("+".join(members))
        bone_group[i] = roots[r]
    return bone_group, names


def template_from_mesh(vertices: np.ndarray, faces: np.ndarray, weights: np.ndarray,
                       joint_names: list[str], parents: np.ndarray, rest_world: np.ndarray, *,
                       unit_mm: float, keypoints: dict | None = None, limits: dict | None = None,
                       mirror_axis: int = 0, exclude_offsets: str | None = None,
                       weld: bool = True, symmetry: dict | None = None,
                       extremities: str = EXTREMITY_DEFAULT) -> Template:
    """Build a :class:`Template` (mm) from skinned-mesh arrays in the file's units.

    ``keypoints``: a keypoint map (:func:`parse_keypoint_map`); by default every joint that
    carries skinning weight is a keypoint of its own name.
    ``limits``: joint name -> [[lo x, y, z], [hi x, y, z]] (radians); default ±π.
    ``exclude_offsets``: a regular expression of joint names whose dominantly skinned vertices
    get no offset (BigMaQ excludes the hands).
    ``symmetry``: a symmetry file (:func:`parse_symmetry`): mirror axis, vertex pairs sharing an
    offset, excluded vertices, bone pairs sharing a scale, extra bone groups.
    ``extremities``: which joints the track's temporal term weights by ``extremity_factor``, and
    whose twist alone by ``extremity_twist_factor`` (:func:`extremity_marks`' rule; default
    ``limb-ends+twist``, RESULTS section 22; ``names`` is the rule before 2026-12-07).
    Vertices at one position are welded for the fit; the input's vertex and face order is kept
    in ``source_index`` / ``source_faces``."""
    vertices = np.asarray(vertices, np.float64) * unit_mm
    faces = np.asarray(faces, np.int64)
    n_source = len(vertices)
    rest_world = np.asarray(rest_world, np.float64).copy()
    rest_world[:, :3, 3] *= unit_mm
    diag = float(np.linalg.norm(np.ptp(vertices, 0)))
    sym = parse_symmetry(symmetry, list(joint_names), n_source) if symmetry is not None else None
    if sym is not None:
        mirror_axis = sym["axis"]
    source_faces = faces.copy()
    welded_from = np.arange(n_source)
    if weld:
        vertices, faces, weights, welded_from = _weld(vertices, faces, weights, 1e-6 * diag)
    n_joints = len(joint_names)
    parents = [int(p) for p in parents]
    joints = rest_world[:, :3, 3]
    frames = []
    for mat in rest_world[:, :3, :3]:
        u, _, vt = np.linalg.svd(mat)  # orthonormalise (bind matrices may carry scale)
        frames.append(u @ vt)
    frames = np.stack(frames)
    carries = weights.sum(0) > 1e-8
    has_weighted_below = carries.copy()
    for i in reversed(range(n_joints)):
        if parents[i] >= 0 and has_weighted_below[i]:
            has_weighted_below[parents[i]] = True
    # joints above the first weighted joint only duplicate the global transform
    free = has_weighted_below.copy()
    for i in range(n_joints):
        chain_root = parents[i] < 0 or not free[parents[i]]
        if chain_root and not carries[i]:
            free[i] = False
    lim = np.tile(np.array([[-np.pi] * 3, [np.pi] * 3]), (n_joints, 1, 1))
    for name, box in (limits or {}).items():
        if name not in joint_names:
            raise ValueError(f"joint limits name an unknown joint '{name}' (joints: {', '.join(joint_names)})")
        lim[joint_names.index(name)] = np.asarray(box, float).reshape(2, 3)
    bone_group, group_names = bone_groups(
        list(joint_names), parents, joints, free, has_weighted_below, 0.02 * diag, mirror_axis,
        None if sym is None else sym["joint_pairs"], None if sym is None else sym["bone_groups"])
    excluded = np.zeros(len(vertices), bool)
    if exclude_offsets:
        pattern = re.compile(exclude_offsets, re.IGNORECASE)
        hit = np.array([bool(pattern.search(n)) for n in joint_names])
        excluded = weights[:, hit].sum(1) > 0.5
    pairs = None
    if sym is not None:
        excluded[welded_from[sym["excluded_vertices"]]] = True
        if sym["vertex_pairs"] is not None:
            pairs = welded_from[sym["vertex_pairs"]]
            pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    index, mirror, count = _mirror(vertices, mirror_axis, 1e-3 * diag, excluded, pairs)
    if keypoints is None:
        keypoints = {joint_names[j]: joint_names[j] for j in range(n_joints) if carries[j]}
    kp_map = parse_keypoint_map(keypoints, list(joint_names), n_source)
    kp_names = list(kp_map)
    kj = np.zeros((len(kp_names), n_joints))
    kv = np.zeros((len(kp_names), len(vertices)))
    for k, name in enumerate(kp_names):
        entry = kp_map[name]
        if entry[0] == "joint":
            kj[k, entry[1]] = 1.0
        else:
            np.add.at(kv[k], welded_from[entry[1]], entry[2] / entry[2].sum())
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    edges = np.unique(np.sort(edges, 1), axis=0)
    t = lambda a, d=torch.float32: torch.as_tensor(np.asarray(a), dtype=d)  # noqa: E731
    marks, twist = extremity_marks(extremities, list(joint_names), parents, free, joints, frames, mirror_axis)
    return Template(
        vertices=t(vertices), faces=t(faces, torch.int64), weights=t(weights), parents=parents,
        joints=t(joints), frames=t(frames), joint_names=list(joint_names), free=t(free, torch.bool),
        limits=t(lim), bone_group=t(bone_group, torch.int64), group_names=group_names,
        offset_index=t(index, torch.int64), offset_mirror=t(mirror), keypoint_names=kp_names,
        keypoints_joint=t(kj), keypoints_vertex=t(kv),
        extremity=t(marks, torch.bool), extremity_twist=None if twist is None else t(twist),
        edges=t(edges, torch.int64), n_offsets=int(count), meta={"mirror_axis": mirror_axis},
        source_index=t(welded_from, torch.int64), source_faces=t(source_faces, torch.int64))


# ---------------------------------------------------------------------------------------------
# template <-> tensors (the avatar artifact)

TEMPLATE_TENSORS = ("vertices", "faces", "weights", "joints", "frames", "free", "limits",
                    "bone_group", "offset_index", "offset_mirror", "keypoints_joint",
                    "keypoints_vertex", "extremity", "edges")


def template_to_tensors(template: Template) -> tuple[dict, dict]:
    tensors = {f"template.{k}": getattr(template, k) for k in TEMPLATE_TENSORS}
    tensors["template.parents"] = torch.as_tensor(template.parents, dtype=torch.int64)
    tensors["template.free"] = template.free.to(torch.uint8)
    tensors["template.extremity"] = template.extremity.to(torch.uint8)
    tensors["template.source_index"] = (torch.arange(len(template.vertices)) if template.source_index is None
                                        else template.source_index)
    tensors["template.source_faces"] = template.output_faces
    if template.extremity_twist is not None:
        tensors["template.extremity_twist"] = template.extremity_twist
    meta = {"joint_names": template.joint_names, "group_names": template.group_names,
            "keypoint_names": template.keypoint_names, "n_offsets": template.n_offsets,
            "template_meta": template.meta}
    return tensors, meta


def template_from_tensors(tensors: dict, meta: dict) -> Template:
    get = {k: tensors[f"template.{k}"] for k in TEMPLATE_TENSORS}
    get["free"] = get["free"].bool()
    get["extremity"] = get["extremity"].bool()
    return Template(parents=[int(p) for p in tensors["template.parents"]],
                    joint_names=list(meta["joint_names"]), group_names=list(meta["group_names"]),
                    keypoint_names=list(meta["keypoint_names"]), n_offsets=int(meta["n_offsets"]),
                    meta=dict(meta.get("template_meta") or {}),
                    source_index=tensors.get("template.source_index"),
                    source_faces=tensors.get("template.source_faces"),
                    extremity_twist=tensors.get("template.extremity_twist"), **get)
