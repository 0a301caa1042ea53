"""From a fitted avatar and its poses to what a glTF skin needs (metres, BigMaQ's skinning).

The mesh is bound at the rest joints s·J_i (IBM_i = [Q_i | s J_i]⁻¹) with rest vertices
s (v + Δ); the animation carries, per joint, the local rotation Q_parentᵀ M_parentᵀ M_i Q_i and
the bone-scaled local translation Q_parentᵀ s b_i (J_i − J_parent); a parent node carries R_g, t_g.
So W_i · IBM_i = [M_i | p_i − M_i s J_i]: exactly the fitted model in any glTF viewer.
Vertices, faces, weights and colours are written in the input template's own order: the fit
runs on a welded copy and ``Template.source_index`` maps every input vertex back to it.
"""

from __future__ import annotations

import numpy as np
import torch

from cortexkit.tools.avatar.model import Pose, Shape, Template, forward, vertex_offsets
from cortexkit.tools.avatar.rotation import rodrigues


def gltf_arrays(template: Template, shape: Shape, pose: Pose, fps: float) -> dict:
    """Keyword arguments of formats.gltf.write_gltf (metres)."""
    mm = 1e-3
    s = float(shape.scale)
    J = template.n_joints
    q = template.frames.double().numpy()
    rest = template.joints.double().numpy() * s
    bone = np.ones(J)
    groups = template.bone_group.numpy()
    bone[groups >= 0] = shape.bone_scales.double().numpy()[groups[groups >= 0]]
    with torch.no_grad():
        rot = rodrigues(pose.rotations.double() * template.free[None, :, None].double()).numpy()
    T = rot.shape[0]
    bind = np.tile(np.eye(4), (J, 1, 1))
    bind[:, :3, :3], bind[:, :3, 3] = q, rest * mm
    local = np.tile(np.eye(4), (T, J, 1, 1))
    rest_local = np.tile(np.eye(4), (J, 1, 1))
    for i, p in enumerate(template.parents):
        qp = np.eye(3) if p < 0 else q[p]
        offset = rest[i] if p < 0 else bone[i] * (rest[i] - rest[p])
        # W_i = W_p L_i with rot(W_i) = M_i Q_i  =>  rot(L_i) = Q_pᵀ Q_i R(θ_i)
        local[:, i, :3, :3] = qp.T @ q[i] @ rot[:, i]
        local[:, i, :3, 3] = (qp.T @ offset) * mm
        rest_local[i] = local[0, i]
        rest_local[i, :3, :3] = qp.T @ q[i]
    g = rodrigues(pose.global_rot.double()).numpy()
    root = np.tile(np.eye(4), (T, 1, 1))
    root[:, :3, :3], root[:, :3, 3] = g, pose.global_t.double().numpy() * mm
    verts = s * (template.vertices.double() + vertex_offsets(template, shape.offsets.double()))
    # the input mesh's own vertex and face order (the fit ran on the welded mesh)
    return {"vertices": template.to_source(verts).numpy() * mm, "faces": template.output_faces.numpy(),
            "weights": template.to_source(template.weights.double()).numpy(),
            "joint_names": template.joint_names, "parents": np.asarray(template.parents),
            "bind_world": bind, "rest_local": rest_local, "times": np.arange(T) / fps,
            "local": local, "root_world": root}


def posed_meshes(template: Template, shape: Shape, pose: Pose) -> np.ndarray:
    """(F, V_src, 3) posed vertices in mm in the input mesh's vertex order (OBJ export; faces are
    ``template.output_faces``)."""
    with torch.no_grad():
        verts, _, _ = forward(template, shape, pose)
    return template.to_source(verts.double()).numpy()


def rest_mesh(template: Template, shape: Shape) -> torch.Tensor:
    """(V_src, 3) the fitted rest mesh s (v + Δ) in mm, in the input mesh's vertex order."""
    verts = shape.scale * (template.vertices + vertex_offsets(template, shape.offsets))
    return template.to_source(verts.detach().float())
