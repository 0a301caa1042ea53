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


@dataclass
class Template:
    """A rigged template in millimetres. Shapes: vertices (V, 3), faces (F, 3), weights (V, J),
    parents (J,) (-1 = root, parents come first), joints (J, 3) rest positions, frames (J, 3, 3)
    rest orientations, free (J,) bool, limits (J, 2, 3) lower/upper axis-angle box, bone_group (J,)
    (-1 = scale fixed to 1), offset_index (V,) (-1 = no offset), offset_mirror (V, 3) (+1/−1/0
    per component), keypoints_joint (K, J) and keypoints_vertex (K, V) weights, extremity (J,) bool,
    edges (E, 2)."""

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
    """Subject shape: scale (), bone_scales (G,), offsets (P, 3) in mm."""

    scale: torch.Tensor
    bone_scales: torch.Tensor
    offsets: torch.Tensor

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
    """Merge vertices at the same position (glTF meshes are often unwelded at UV seams)."""
    key = np.round(vertices / tol).astype(np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    faces = inverse[faces]
    faces = faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])]
    return vertices[first], faces, weights[first], inverse


def side_free_name(name: str) -> str:
    """The joint name with its side removed, so Left/Right joints share a bone-scale group."""
    base = re.sub(r"[_.-]?\d+$", "", name)   # drop trailing indices (b_LeftLeg01_015 -> b_LeftLeg01)
    return _SIDE.sub("", base).strip("_.- ").lower()


def _mirror(vertices: np.ndarray, axis: int, tol: float, excluded: np.ndarray):
    """Pair each vertex with its mirror image across the plane x_axis = 0.

    Returns offset_index (V,) and offset_mirror (V, 3) and the number of free offsets."""
    from scipy.spatial import cKDTree

    flipped = vertices.copy()
    flipped[:, axis] *= -1
    dist, partner = cKDTree(vertices).query(flipped)
    index = -np.ones(len(vertices), np.int64)
    mirror = np.ones((len(vertices), 3))
    count = 0
    for v in range(len(vertices)):
        if excluded[v] or index[v] >= 0:
            continue
        j = partner[v]
        if dist[v] < tol and j != v and partner[j] == v and not excluded[j] and index[j] < 0:
            index[v], index[j] = count, count
            mirror[j, axis] = -1.0
        else:
            index[v] = count
            if abs(vertices[v, axis]) < tol:
                mirror[v, axis] = 0.0  # on the plane: stays on it
        count += 1
    return index, mirror, count


def template_from_mesh(vertices: np.ndarray, faces: np.ndarray, weights: np.ndarray,
                       joint_names: list[str], parents: np.ndarray, rest_world: np.ndarray, *,
                       unit_mm: float, keypoints: dict | None = None, limits: dict | None = None,
                       mirror_axis: int = 0, exclude_offsets: str | None = None,
                       weld: bool = True) -> Template:
    """Build a :class:`Template` (mm) from skinned-mesh arrays in the file's units.

    ``keypoints``: name -> joint name, or name -> {"vertices": [...], "weights": [...]}; by
    default every joint that carries skinning weight is a keypoint of its own name.
    ``limits``: joint name -> [[lo x, y, z], [hi x, y, z]] (radians); default ±π.
    ``exclude_offsets``: a regular expression of joint names whose dominantly skinned vertices
    get no offset (BigMaQ excludes the hands)."""
    vertices = np.asarray(vertices, np.float64) * unit_mm
    rest_world = np.asarray(rest_world, np.float64).copy()
    rest_world[:, :3, 3] *= unit_mm
    diag = float(np.linalg.norm(np.ptp(vertices, 0)))
    welded_from = None
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
    group_names, bone_group = [], -np.ones(n_joints, np.int64)
    for i, p in enumerate(parents):
        if p < 0 or not free[p] or np.linalg.norm(joints[i] - joints[p]) < 1e-6 * diag or not has_weighted_below[i]:
            continue
        key = side_free_name(joint_names[i])
        if key not in group_names:
            group_names.append(key)
        bone_group[i] = group_names.index(key)
    excluded = np.zeros(len(vertices), bool)
    if exclude_offsets:
        pattern = re.compile(exclude_offsets, re.IGNORECASE)
        hit = np.array([bool(pattern.search(n)) for n in joint_names])
        excluded = weights[:, hit].sum(1) > 0.5
    index, mirror, count = _mirror(vertices, mirror_axis, 1e-3 * diag, excluded)
    if keypoints is None:
        keypoints = {joint_names[j]: joint_names[j] for j in range(n_joints) if carries[j]}
    kp_names = list(keypoints)
    kj = np.zeros((len(kp_names), n_joints))
    kv = np.zeros((len(kp_names), len(vertices)))
    for k, name in enumerate(kp_names):
        spec = keypoints[name]
        if isinstance(spec, str):
            if spec not in joint_names:
                raise ValueError(f"keypoint '{name}' names an unknown joint '{spec}'")
            kj[k, joint_names.index(spec)] = 1.0
        elif isinstance(spec, dict) and "vertices" in spec:
            ids = np.asarray(spec["vertices"], np.int64)
            if welded_from is not None:
                ids = welded_from[ids]
            w = np.asarray(spec.get("weights", np.ones(len(ids))), float)
            if ids.min() < 0 or ids.max() >= len(vertices):
                raise ValueError(f"keypoint '{name}': vertex index out of range")
            np.add.at(kv[k], ids, w / w.sum())
        else:
            raise ValueError(f"keypoint '{name}': expected a joint name or {{vertices: [...], weights: [...]}}")
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    edges = np.unique(np.sort(edges, 1), axis=0)
    t = lambda a, d=torch.float32: torch.as_tensor(np.asarray(a), dtype=d)  # noqa: E731
    return Template(
        vertices=t(vertices), faces=t(faces, torch.int64), weights=t(weights), parents=parents,
        joints=t(joints), frames=t(frames), joint_names=list(joint_names), free=t(free, torch.bool),
        limits=t(lim), bone_group=t(bone_group, torch.int64), group_names=group_names,
        offset_index=t(index, torch.int64), offset_mirror=t(mirror), keypoint_names=kp_names,
        keypoints_joint=t(kj), keypoints_vertex=t(kv),
        extremity=t([bool(EXTREMITY.search(n)) for n in joint_names], torch.bool),
        edges=t(edges, torch.int64), n_offsets=int(count), meta={"mirror_axis": mirror_axis})


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
                    meta=dict(meta.get("template_meta") or {}), **get)
