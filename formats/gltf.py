"""glTF 2.0 skinned meshes in and out (pygltflib for the container, accessors decoded here).

:func:`read_gltf` returns a :class:`SkinnedMesh` in the file's units: rest vertices, triangles,
joints in topological order (parents before children) with their rest world transforms (the
inverses of the inverse bind matrices), dense skinning weights from JOINTS_0/WEIGHTS_0, and every
animation clip sampled to per-frame world transforms of the joints. :func:`write_gltf` writes a
skinned mesh with an animation clip (a .glb or a .gltf with an embedded buffer) that Blender and
three.js open; the skinning matrices it implies are ``W_j(t) @ IBM_j`` as in the reader.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field

import numpy as np

from cortexkit.formats.errors import CortexError

_COMPONENT = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32,
              5126: np.float32}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


@dataclass
class SkinnedMesh:
    """A skinned mesh. Shapes: vertices (V, 3), faces (F, 3) int, weights (V, J), parents (J,)
    (-1 = root), rest_world (J, 4, 4) rest world transforms of the joints; animations: clip name
    -> dict(times (T,), world (T, J, 4, 4) joint world transforms)."""

    vertices: np.ndarray
    faces: np.ndarray
    weights: np.ndarray
    joint_names: list[str]
    parents: np.ndarray
    rest_world: np.ndarray
    animations: dict[str, dict] = field(default_factory=dict)


def _load(path: str | os.PathLike):
    import pygltflib

    try:
        gltf = pygltflib.GLTF2().load(str(path))
    except FileNotFoundError:
        raise CortexError(f"{path}: no such file") from None
    except Exception as exc:  # noqa: BLE001 - pygltflib raises many kinds on bad bytes
        raise CortexError(f"{path}: not a glTF 2.0 file ({type(exc).__name__}: {exc})") from None
    if gltf is None:
        raise CortexError(f"{path}: not a glTF 2.0 file")
    return gltf


def _buffer_bytes(gltf, index: int, base_dir: str) -> bytes:
    buffer = gltf.buffers[index]
    if buffer.uri is None:
        return gltf.binary_blob()
    if buffer.uri.startswith("data:"):
        return base64.b64decode(buffer.uri.split(",", 1)[1])
    with open(os.path.join(base_dir, buffer.uri), "rb") as handle:
        return handle.read()


def _accessor(gltf, index: int, base_dir: str, cache: dict) -> np.ndarray:
    acc = gltf.accessors[index]
    dtype = np.dtype(_COMPONENT[acc.componentType])
    width = _WIDTH[acc.type]
    view = gltf.bufferViews[acc.bufferView]
    if view.buffer not in cache:
        cache[view.buffer] = _buffer_bytes(gltf, view.buffer, base_dir)
    data = cache[view.buffer]
    start = (view.byteOffset or 0) + (acc.byteOffset or 0)
    stride = view.byteStride or dtype.itemsize * width
    if start + stride * (acc.count - 1) + dtype.itemsize * width > len(data):
        raise CortexError(f"accessor {index} runs past the end of its buffer (truncated file?)")
    rows = np.lib.stride_tricks.as_strided(
        np.frombuffer(data, dtype=np.uint8, offset=start),
        shape=(acc.count, dtype.itemsize * width), strides=(stride, 1)).copy()
    out = rows.view(dtype).reshape(acc.count, width)
    if acc.normalized and dtype.kind in "iu":
        out = out.astype(np.float64) / np.iinfo(dtype).max
    return out


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions x, y, z, w (glTF order) -> (..., 3, 3) rotation matrices."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices -> (..., 4) unit quaternions x, y, z, w."""
    from scipy.spatial.transform import Rotation

    shape = m.shape[:-2]
    return Rotation.from_matrix(m.reshape(-1, 3, 3)).as_quat().reshape(*shape, 4)


def _node_local(node) -> np.ndarray:
    if node.matrix is not None:
        return np.asarray(node.matrix, dtype=np.float64).reshape(4, 4).T
    out = np.eye(4)
    scale = np.asarray(node.scale if node.scale is not None else [1, 1, 1], dtype=np.float64)
    rot = quat_to_matrix(np.asarray(node.rotation, dtype=np.float64)) if node.rotation else np.eye(3)
    out[:3, :3] = rot * scale
    if node.translation is not None:
        out[:3, 3] = node.translation
    return out


def _sample(times: np.ndarray, values: np.ndarray, at: np.ndarray, rotation: bool) -> np.ndarray:
    """LINEAR/STEP keyframes sampled at ``at`` (clamped); rotations by normalised lerp along the
    shorter arc (the keys are dense, so nlerp and slerp agree to well under a degree)."""
    idx = np.clip(np.searchsorted(times, at, side="right") - 1, 0, len(times) - 1)
    nxt = np.minimum(idx + 1, len(times) - 1)
    span = np.where(nxt > idx, times[nxt] - times[idx], 1.0)
    u = np.clip((at - times[idx]) / span, 0.0, 1.0)[:, None]
    a, b = values[idx], values[nxt]
    if rotation:
        b = np.where((a * b).sum(-1, keepdims=True) < 0, -b, b)
        out = (1 - u) * a + u * b
        return out / np.linalg.norm(out, axis=-1, keepdims=True)
    return (1 - u) * a + u * b


def read_gltf(path: str | os.PathLike, *, fps: float = 30.0) -> SkinnedMesh:
    """Read the first skinned primitive of a .glb/.gltf; clips sampled at ``fps``."""
    gltf = _load(path)
    base_dir = os.path.dirname(os.path.abspath(str(path)))
    cache: dict = {}
    if not gltf.skins:
        raise CortexError(f"{path}: the glTF has no skin (a rigged, skinned mesh is needed)")
    skin_index, prim = None, None
    for node in gltf.nodes:
        if node.mesh is not None and node.skin is not None:
            for candidate in gltf.meshes[node.mesh].primitives:
                if candidate.attributes.JOINTS_0 is not None and candidate.attributes.WEIGHTS_0 is not None:
                    skin_index, prim = node.skin, candidate
                    break
        if prim is not None:
            break
    if prim is None:
        raise CortexError(f"{path}: no mesh primitive with JOINTS_0/WEIGHTS_0 bound to a skin")
    skin = gltf.skins[skin_index]
    joint_nodes = list(skin.joints)
    node_parent = {c: i for i, n in enumerate(gltf.nodes) for c in (n.children or [])}
    n_joints = len(joint_nodes)
    if skin.inverseBindMatrices is not None:
        ibm = _accessor(gltf, skin.inverseBindMatrices, base_dir, cache).astype(np.float64)
        ibm = ibm.reshape(n_joints, 4, 4).transpose(0, 2, 1)  # column-major in the file
    else:
        ibm = np.tile(np.eye(4), (n_joints, 1, 1))

    def joint_parent(node_id: int) -> int:
        up = node_parent.get(node_id)
        while up is not None and up not in joint_nodes:
            up = node_parent.get(up)
        return -1 if up is None else joint_nodes.index(up)

    parent_of = [joint_parent(n) for n in joint_nodes]
    order, placed = [], set()
    while len(order) < n_joints:  # topological order: parents first
        progressed = False
        for j in range(n_joints):
            if j not in placed and (parent_of[j] < 0 or parent_of[j] in placed):
                order.append(j)
                placed.add(j)
                progressed = True
        if not progressed:
            raise CortexError(f"{path}: the skin's joints form a cycle")
    new_index = {old: new for new, old in enumerate(order)}
    parents = np.array([new_index[parent_of[j]] if parent_of[j] >= 0 else -1 for j in order])
    names = [gltf.nodes[joint_nodes[j]].name or f"joint{j}" for j in order]
    ibm = ibm[order]
    rest_world = np.linalg.inv(ibm)

    positions = _accessor(gltf, prim.attributes.POSITION, base_dir, cache).astype(np.float64)
    if prim.indices is not None:
        faces = _accessor(gltf, prim.indices, base_dir, cache).reshape(-1, 3).astype(np.int64)
    else:
        faces = np.arange(len(positions)).reshape(-1, 3)
    if prim.mode not in (None, 4):
        raise CortexError(f"{path}: only triangle primitives are supported (mode {prim.mode})")
    joints = _accessor(gltf, prim.attributes.JOINTS_0, base_dir, cache).astype(np.int64)
    wts = _accessor(gltf, prim.attributes.WEIGHTS_0, base_dir, cache).astype(np.float64)
    if joints.max() >= n_joints:
        raise CortexError(f"{path}: JOINTS_0 refers to joint {joints.max()} of a {n_joints}-joint skin")
    weights = np.zeros((len(positions), n_joints))
    remap = np.array([new_index[j] for j in range(n_joints)])
    np.add.at(weights, (np.repeat(np.arange(len(positions)), 4), remap[joints.reshape(-1)]),
              wts.reshape(-1))
    total = weights.sum(1, keepdims=True)
    if np.any(total <= 0):
        raise CortexError(f"{path}: {int((total <= 0).sum())} vertices have no skinning weight")
    weights /= total

    animations = {}
    locals_rest = [_node_local(n) for n in gltf.nodes]
    for k, anim in enumerate(gltf.animations or []):
        tracks, end = {}, 0.0
        for channel in anim.channels:
            if channel.target.node is None or channel.target.path not in ("rotation", "translation", "scale"):
                continue
            sampler = anim.samplers[channel.sampler]
            t = _accessor(gltf, sampler.input, base_dir, cache)[:, 0].astype(np.float64)
            v = _accessor(gltf, sampler.output, base_dir, cache).astype(np.float64)
            if sampler.interpolation == "CUBICSPLINE":
                v = v.reshape(len(t), 3, -1)[:, 1]
            tracks[(channel.target.node, channel.target.path)] = (t, v)
            end = max(end, float(t[-1]))
        at = np.arange(0.0, end + 1e-9, 1.0 / fps) if end > 0 else np.zeros(1)
        animations[anim.name or f"clip{k}"] = {
            "times": at, "world": _animate_joints(gltf, locals_rest, tracks, at, node_parent,
                                                  [joint_nodes[j] for j in order])}
    return SkinnedMesh(positions, faces, weights, names, parents, rest_world, animations)


def _animate_joints(gltf, locals_rest, tracks, at, node_parent, joint_nodes) -> np.ndarray:
    """(T, J, 4, 4) world transforms of the joints at times ``at``."""
    n = len(gltf.nodes)
    local = np.tile(np.stack(locals_rest)[None], (len(at), 1, 1, 1))
    for node_id in {node for node, _ in tracks}:
        node = gltf.nodes[node_id]
        trs = {"translation": np.asarray(node.translation or [0, 0, 0], float),
               "rotation": np.asarray(node.rotation or [0, 0, 0, 1], float),
               "scale": np.asarray(node.scale or [1, 1, 1], float)}
        per = {}
        for path in trs:
            if (node_id, path) in tracks:
                t, v = tracks[(node_id, path)]
                per[path] = _sample(t, v, at, path == "rotation")
            else:
                per[path] = np.tile(trs[path], (len(at), 1))
        mat = np.tile(np.eye(4), (len(at), 1, 1))
        mat[:, :3, :3] = quat_to_matrix(per["rotation"]) * per["scale"][:, None, :]
        mat[:, :3, 3] = per["translation"]
        local[:, node_id] = mat
    world = np.zeros_like(local)
    done = np.zeros(n, bool)

    def solve(i):
        if done[i]:
            return
        p = node_parent.get(i)
        if p is None:
            world[:, i] = local[:, i]
        else:
            solve(p)
            world[:, i] = world[:, p] @ local[:, i]
        done[i] = True

    for j in joint_nodes:
        solve(j)
    return world[:, joint_nodes]


def write_gltf(target: str | os.PathLike, *, vertices: np.ndarray, faces: np.ndarray,
               weights: np.ndarray, joint_names: list[str], parents: np.ndarray,
               bind_world: np.ndarray, rest_local: np.ndarray, times: np.ndarray | None = None,
               local: np.ndarray | None = None, root_world: np.ndarray | None = None,
               colors: np.ndarray | None = None, clip: str = "fit") -> bytes:
    """The bytes of a .glb (or .gltf when ``target`` ends in .gltf) skinned mesh.

    Shapes: vertices (V, 3) in metres, faces (F, 3), weights (V, J) (the 4 largest per vertex
    are kept), parents (J,), bind_world (J, 4, 4) joint world transforms the mesh is bound at
    (IBM = inverse), rest_local (J, 4, 4) node transforms shown at rest; animation: times (T,),
    local (T, J, 4, 4) joint local transforms (rotation + translation channels), root_world
    (T, 4, 4) the transform of a parent node carrying the global rotation and translation;
    colors (V, 3) in [0, 1] as COLOR_0.
    """
    import pygltflib

    chunks: list[bytes] = []
    views, accessors = [], []

    def add(array: np.ndarray, kind: str, component: int, target_kind=None, minmax=False) -> int:
        data = np.ascontiguousarray(array)
        offset = sum(len(c) for c in chunks)
        raw = data.tobytes()
        chunks.append(raw + b"\0" * (-len(raw) % 4))
        views.append(pygltflib.BufferView(buffer=0, byteOffset=offset, byteLength=len(raw),
                                          target=target_kind))
        acc = pygltflib.Accessor(bufferView=len(views) - 1, componentType=component,
                                 count=len(data), type=kind)
        if minmax:
            flat = data.reshape(len(data), -1)
            acc.min, acc.max = flat.min(0).tolist(), flat.max(0).tolist()
        accessors.append(acc)
        return len(accessors) - 1

    n_joints = len(joint_names)
    top = np.argsort(-weights, axis=1)[:, :4]
    top_w = np.take_along_axis(weights, top, 1)
    top_w = top_w / top_w.sum(1, keepdims=True)
    attrs = pygltflib.Attributes(
        POSITION=add(vertices.astype(np.float32), "VEC3", 5126, 34962, minmax=True),
        JOINTS_0=add(top.astype(np.uint16), "VEC4", 5123, 34962),
        WEIGHTS_0=add(top_w.astype(np.float32), "VEC4", 5126, 34962))
    if colors is not None:
        attrs.COLOR_0 = add(np.clip(colors, 0, 1).astype(np.float32), "VEC3", 5126, 34962)
    indices = add(faces.reshape(-1).astype(np.uint32), "SCALAR", 5125, 34963)
    ibm = np.linalg.inv(bind_world).transpose(0, 2, 1).reshape(n_joints, 16)
    ibm_acc = add(ibm.astype(np.float32), "MAT4", 5126)

    # nodes: 0 = avatar (global transform), 1 = mesh, 2.. = joints
    def trs(mat):
        scale = np.linalg.norm(mat[:3, :3], axis=0)
        quat = matrix_to_quat(mat[:3, :3] / scale)
        return mat[:3, 3].tolist(), quat.tolist()

    nodes = [pygltflib.Node(name="avatar", children=[]), pygltflib.Node(name="mesh", mesh=0, skin=0)]
    for j, name in enumerate(joint_names):
        t, q = trs(rest_local[j])
        nodes.append(pygltflib.Node(name=name, translation=t, rotation=q, children=[]))
    for j, p in enumerate(parents):
        (nodes[0] if p < 0 else nodes[2 + p]).children.append(2 + j)
    animations = []
    if times is not None:
        samplers, channels = [], []
        t_acc = add(np.asarray(times, np.float32)[:, None], "SCALAR", 5126, minmax=True)

        def channel(node: int, path: str, values: np.ndarray):
            kind = "VEC4" if path == "rotation" else "VEC3"
            out = add(values.astype(np.float32), kind, 5126)
            samplers.append(pygltflib.AnimationSampler(input=t_acc, output=out,
                                                       interpolation="LINEAR"))
            channels.append(pygltflib.AnimationChannel(
                sampler=len(samplers) - 1, target=pygltflib.AnimationChannelTarget(node=node, path=path)))

        for j in range(n_joints):
            channel(2 + j, "rotation", _continuous(matrix_to_quat(local[:, j, :3, :3])))
            channel(2 + j, "translation", local[:, j, :3, 3])
        if root_world is not None:
            channel(0, "rotation", _continuous(matrix_to_quat(root_world[:, :3, :3])))
            channel(0, "translation", root_world[:, :3, 3])
        animations.append(pygltflib.Animation(name=clip, samplers=samplers, channels=channels))
    blob = b"".join(chunks)
    gltf = pygltflib.GLTF2(
        asset=pygltflib.Asset(version="2.0", generator="cortexkit fit-avatar"),
        scene=0, scenes=[pygltflib.Scene(nodes=[0, 1])], nodes=nodes,
        meshes=[pygltflib.Mesh(primitives=[pygltflib.Primitive(attributes=attrs, indices=indices)])],
        skins=[pygltflib.Skin(joints=list(range(2, 2 + n_joints)), inverseBindMatrices=ibm_acc,
                              skeleton=2)],
        accessors=accessors, bufferViews=views, animations=animations,
        buffers=[pygltflib.Buffer(byteLength=len(blob))])
    if str(target).lower().endswith(".gltf"):
        gltf.buffers[0].uri = "data:application/octet-stream;base64," + base64.b64encode(blob).decode()
        return gltf.gltf_to_json().encode("utf-8")
    gltf.set_binary_blob(blob)
    return b"".join(gltf.save_to_bytes())


def _continuous(quats: np.ndarray) -> np.ndarray:
    """(T, 4) quaternions with signs flipped so consecutive keys take the shorter arc."""
    out = quats.copy()
    for t in range(1, len(out)):
        if np.dot(out[t], out[t - 1]) < 0:
            out[t] = -out[t]
    return out


def write_obj(vertices: np.ndarray, faces: np.ndarray, colors: np.ndarray | None = None) -> bytes:
    """Wavefront OBJ bytes of one mesh (vertices (V, 3), faces (F, 3) 0-based, colours (V, 3))."""
    lines = []
    for i, v in enumerate(vertices):
        extra = "" if colors is None else " %.4f %.4f %.4f" % tuple(colors[i])
        lines.append("v %.6f %.6f %.6f%s" % (v[0], v[1], v[2], extra))
    lines += ["f %d %d %d" % tuple(f + 1) for f in faces]
    return ("\n".join(lines) + "\n").encode()
