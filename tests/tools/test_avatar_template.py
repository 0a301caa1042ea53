"""The template as the user made it (issue 34): vertex and face order kept through the weld, every
bone its own scale (symmetric pairs and requested groups only), the keypoint-map and symmetry
schemas with one error naming every wrong entry. On the procedural hexapod (tests/data/hexapod)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

HEX = Path(__file__).resolve().parents[1] / "data" / "hexapod"


@pytest.fixture(scope="module")
def mesh():
    from cortexkit.formats.gltf import read_gltf

    return read_gltf(HEX / "hexapod.glb")


def build(mesh, **kw):
    from cortexkit.tools.avatar.model import template_from_mesh

    return template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                              mesh.rest_world, unit_mm=1000.0, **kw)


def test_weld_keeps_the_input_order_and_maps_back(mesh):
    tpl = build(mesh)
    assert len(tpl.vertices) < len(mesh.vertices)           # the seams were welded for the fit
    np.testing.assert_allclose(tpl.to_source(tpl.vertices).numpy(), mesh.vertices * 1000.0, atol=1e-3)
    np.testing.assert_array_equal(tpl.output_faces.numpy(), mesh.faces)
    # welded vertices keep their first occurrence's order: increasing first input index
    first = np.array([np.nonzero(tpl.source_index.numpy() == i)[0][0] for i in range(len(tpl.vertices))])
    assert (np.diff(first) > 0).all()
    # a mesh with nothing to weld comes back in exactly its own order
    keep = np.unique(tpl.source_index.numpy(), return_index=True)[1]
    faces = np.searchsorted(np.sort(keep), keep[tpl.faces.numpy()])
    plain = build(type(mesh)(mesh.vertices[np.sort(keep)], faces, mesh.weights[np.sort(keep)],
                             mesh.joint_names, mesh.parents, mesh.rest_world))
    np.testing.assert_array_equal(plain.source_index.numpy(), np.arange(len(keep)))
    np.testing.assert_array_equal(plain.faces.numpy(), faces)


def test_every_bone_gets_a_scale_root_children_included_pairs_share(mesh):
    tpl = build(mesh)
    group = dict(zip(tpl.joint_names, tpl.bone_group.tolist()))
    # the root is unweighted: its two children (lower and upper body) still get their own scale
    assert group["abdomen1"] >= 0 and group["thorax1"] >= 0 and group["abdomen1"] != group["thorax1"]
    # two neck bones: two scales (no name-based merging of numbered bones)
    assert group["neck1"] != group["neck2"] and min(group["neck1"], group["neck2"]) >= 0
    # left/right mirror pairs share, nothing else does
    assert group["femur2_L"] == group["femur2_R"] and group["femur2_L"] != group["femur1_L"]
    scaled = [n for n, g in group.items() if g >= 0]
    assert len(scaled) == len(tpl.joint_names) - 1            # every joint but the root ends a bone
    sizes = np.bincount([g for g in group.values() if g >= 0])
    assert set(sizes.tolist()) == {1, 2} and tpl.n_groups == 23
    # groups only on request: a symmetry file's bone_groups merge, joint_pairs replace the search
    sym = {"bone_groups": [["neck1", "neck2"]], "joint_pairs": [["coxa1_L", "coxa1_R"]]}
    asked = build(mesh, symmetry=sym)
    g2 = dict(zip(asked.joint_names, asked.bone_group.tolist()))
    assert g2["neck1"] == g2["neck2"] and g2["coxa1_L"] == g2["coxa1_R"] and g2["femur1_L"] != g2["femur1_R"]


def test_keypoint_map_schema_nested_joint_entries_and_vertex_sets(mesh):
    from cortexkit.tools.avatar.model import Pose, Shape, forward

    spec = yaml.safe_load((HEX / "hexapod_keypoints.yaml").read_text())
    tpl = build(mesh, keypoints=spec)     # nested 'keypoints:' beside a 'template:' key
    assert tpl.keypoint_names[:2] == ["head_tip", "neck1"] and "eye_left" in tpl.keypoint_names
    _, _, kp = forward(tpl, Shape.neutral(tpl), Pose.zeros(1, tpl))
    knee = tpl.keypoint_names.index("knee2_L")
    np.testing.assert_allclose(kp[0, knee].numpy(), tpl.joints[tpl.joint_names.index("tibia2_L")].numpy(), atol=1e-3)
    eye = spec["keypoints"]["eye_left"]["vertices"]        # input vertex indices, through the weld
    np.testing.assert_allclose(kp[0, tpl.keypoint_names.index("eye_left")].numpy(),
                               mesh.vertices[eye].mean(0) * 1000.0, atol=1e-3)
    bad = {"keypoints": {"a": "nope", "b": {"joint": "head"}, "c": {"vertices": [99999]}, "d": 3,
                         "e": {"vertices": [1, 2], "weights": [1]}}}
    with pytest.raises(ValueError) as err:
        build(mesh, keypoints=bad)
    text = str(err.value)
    assert "\n" not in text
    for fragment in ("'a' names an unknown joint 'nope'", "'c': vertex index 99999", "'d': 3 is neither",
                     "'e': 'weights' must be 2"):
        assert fragment in text, text
    assert "'b'" not in text


def test_symmetry_file_vertex_pairs_and_errors(mesh):
    tpl = build(mesh)
    pairs = [[0, 7]]     # two input vertices that are no mirror images: paired only because asked
    sym = build(mesh, symmetry={"axis": "x", "vertex_pairs": pairs, "excluded_vertices": [1]})
    i, j = (int(sym.source_index[v]) for v in pairs[0])
    assert sym.offset_index[i] == sym.offset_index[j] >= 0 and int(sym.offset_index[sym.source_index[1]]) == -1
    assert sym.n_offsets > tpl.n_offsets      # the automatic mirror search is replaced, not added to
    with pytest.raises(ValueError) as err:
        build(mesh, symmetry={"axis": "w", "joint_pairs": [["coxa1_L", "nope"]], "pairs": 1})
    for fragment in ("unknown key 'pairs'", "axis 'w'", "unknown joint 'nope'"):
        assert fragment in str(err.value)


def test_offsets_shape_the_output_in_input_order(mesh):
    """The fitted rest mesh (avatar mesh.vertices, export) is s (v + Δ) of the welded vertex
    each input vertex was merged into."""
    from cortexkit.tools.avatar.export import rest_mesh
    from cortexkit.tools.avatar.model import Shape

    tpl = build(mesh)
    shape = Shape(torch.tensor(1.1), torch.ones(tpl.n_groups), torch.randn(tpl.n_offsets, 3))
    out = rest_mesh(tpl, shape).numpy()
    from cortexkit.tools.avatar.model import vertex_offsets

    welded = (1.1 * (tpl.vertices + vertex_offsets(tpl, shape.offsets))).numpy()
    np.testing.assert_allclose(out, welded[tpl.source_index.numpy()], atol=1e-4)
    assert out.shape == (len(mesh.vertices), 3)


def test_robust_residuals_drop_the_outliers_and_nothing_else(mesh):
    """Detections moved 20-80 px (10 % of them) are dropped by their distance to the robust
    triangulation; 2 px noise is never dropped; the fit plays no part in the decision."""
    from cortexkit.tools.avatar.fit import Observations, reject_outliers
    from cortexkit.tools.avatar.synth import SynthConfig, make_views
    from cortexkit.tools.avatar.triangulate import triangulate_frames

    tpl = build(mesh, keypoints=yaml.safe_load((HEX / "hexapod_keypoints.yaml").read_text()))
    cfg = SynthConfig(noise=2.0, dropout=0.1, outliers=0.1, masks=False, seed=5)
    cams, syn = make_views(tpl, mesh.animations["Walk"]["world"][:6], 1000.0, "ring:8", None, cfg)
    obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names)
    points = triangulate_frames(cams, syn.keypoints.double().numpy(), syn.confidence.double().numpy()).points
    kept = reject_outliers(obs, points, 10.0).confidence > 0
    shift = (syn.keypoints - syn.clean).norm(dim=-1)
    seen = syn.confidence > 0
    outlier, inlier = seen & (shift > 15), seen & (shift < 10)
    assert outlier.sum() > 20
    assert (~kept[outlier]).float().mean() > 0.9          # the outliers go
    assert kept[inlier].float().mean() > 0.995            # the noisy inliers stay
    assert torch.equal(reject_outliers(obs, points, 0.0).confidence, obs.confidence)


def test_silhouette_crop_follows_the_subjects_pixel_size():
    """A subject 30 px across renders at 40 px (30 x 1.3 margin, 8 px steps), a large one at the
    cap, a tiny one at the floor; frames or cameras with fewer than 2 detections do not count."""
    from cortexkit.tools.avatar.fit import subject_crop_size

    def views(side):
        kp = torch.tensor([[[[100.0, 100.0], [100.0 + side, 100.0 + side / 2], [100.0, 100.0 + side]]]])
        return kp, torch.ones(1, 1, 3)

    assert subject_crop_size(*views(30.0)) == 40
    assert subject_crop_size(*views(400.0)) == 64 and subject_crop_size(*views(400.0), largest=96) == 96
    assert subject_crop_size(*views(5.0)) == 16
    kp, conf = views(30.0)
    conf[..., 1:] = 0
    assert subject_crop_size(kp, conf) == 64      # nothing to measure: the cap


def test_acceleration_temporal_term_is_zero_for_steady_motion(mesh):
    """temporal_order 2 penalises changes of angular velocity: a joint turning at a constant rate
    about a fixed axis, and a body moving at a constant speed, cost nothing; order 1 (BigMaQ's
    velocity term) charges them; a jerk costs under both."""
    from cortexkit.tools.avatar.fit import FitConfig, prior_terms
    from cortexkit.tools.avatar.model import Pose, Shape

    tpl = build(mesh)
    T = 6
    pose = Pose.zeros(T, tpl, dtype=torch.float64)
    j = tpl.joint_names.index("femur2_L")
    pose.rotations[:, j, 2] = 0.1 * torch.arange(T) + 0.05
    pose.global_t[:, 2] = 3.0 * torch.arange(T)
    shape = Shape.neutral(tpl, dtype=torch.float64)

    def temporal(p, order):
        return float(prior_terms(tpl, shape, p, FitConfig(temporal_order=order), 300.0, 1.0, True)[3])

    assert temporal(pose, 2) < 1e-12 < temporal(pose, 1)
    pose.rotations[3, j, 2] += 0.2
    assert temporal(pose, 2) > 1e-4


def test_extremity_rules_on_a_small_tree_and_the_hexapod(mesh):
    """model.extremity_joints (RESULTS section 20): names marks the regex (wrist and ankle included),
    names-distal drops wrist and ankle, limb-ends marks by structure alone the last free joint of each
    limb (a chain leaving the mirror plane, followed while it has one free child; a hand that branches
    into fingers ends it; a one-bone ear is no limb); the template carries the chosen marks."""
    import numpy as np

    from cortexkit.tools.avatar.model import extremity_joints

    # trunk on the plane x = 0; a left arm shoulder-elbow-wrist-hand whose hand branches into two
    # fingers; a left leg hip-knee-ankle-foot-toe (toe a leaf, not free); a one-bone ear; a tail
    names = ["root", "spine", "head", "ear_L", "shoulder_L", "elbow_L", "wrist_L", "hand_L", "f1_L", "f2_L",
             "hip_L", "knee_L", "ankle_L", "foot_L", "toe_L", "tail", "tail_tip"]
    parents = [-1, 0, 1, 2, 1, 4, 5, 6, 7, 7, 0, 10, 11, 12, 13, 0, 15]
    x = [0, 0, 0, 3, 5, 8, 9, 9, 9, 10, 4, 5, 5, 5, 5, 0, 0]
    joints = np.stack([np.array(x, float), np.arange(17.0), np.zeros(17)], 1)
    free = np.array([n not in ("root", "toe_L", "tail_tip") for n in names])

    def marked(rule):
        return [n for n, m in zip(names, extremity_joints(rule, names, parents, free, joints, 0)) if m]

    assert marked("names") == ["wrist_L", "hand_L", "ankle_L", "foot_L", "toe_L"]
    assert marked("names-distal") == ["hand_L", "foot_L", "toe_L"]
    assert marked("limb-ends") == ["hand_L", "foot_L"]
    renamed = [f"j{i}" for i in range(len(names))]             # structure only: names do not matter
    assert np.array_equal(extremity_joints("limb-ends", renamed, parents, free, joints, 0),
                          extremity_joints("limb-ends", names, parents, free, joints, 0))
    with pytest.raises(ValueError, match="unknown extremity rule"):
        extremity_joints("paws", names, parents, free, joints, 0)
    # the hexapod: names marks only its leaf feet (not free), limb-ends the six tibiae; the default
    # (limb-ends+twist, RESULTS section 22) the tibiae, no twist (its feet are leaves)
    names_rule, ends, default = build(mesh, extremities="names"), build(mesh, extremities="limb-ends"), build(mesh)
    free_marked = lambda t: {n for n, m, f in zip(t.joint_names, t.extremity.tolist(), t.free.tolist()) if m and f}  # noqa: E731
    assert free_marked(names_rule) == set()
    assert free_marked(ends) == free_marked(default) == {f"tibia{i}_{s}" for i in (1, 2, 3) for s in "LR"}
    assert not default.extremity_twist.abs().sum() and names_rule.extremity_twist is None


def test_twist_marks_on_a_small_tree_and_the_stored_avatar(mesh):
    """model.extremity_marks('limb-ends+twist') (RESULTS section 22): limb-ends' marks keep the full
    factor; the joints names marks and limb-ends does not (the mid-limb wrist and ankle) get the unit
    bone to their child, in the joint's rest frame (a rotated frame rotates the axis back); a leaf has
    no bone; other rules have no twist marks. The axes travel through the avatar's tensors, and an
    avatar without them reads back as none."""
    from cortexkit.tools.avatar.model import (extremity_marks, template_from_tensors, template_to_tensors)

    names = ["root", "spine", "shoulder_L", "elbow_L", "wrist_L", "hand_L", "hip_L", "knee_L", "ankle_L",
             "foot_L", "toe_L"]
    parents = [-1, 0, 1, 2, 3, 4, 0, 6, 7, 8, 9]
    joints = np.array([[0, 0, 0], [0, 1, 0], [1, 1, 0], [2, 1, 0], [3, 1, 0], [3, 2, 0], [1, 0, 0],
                       [1, -1, 0], [1, -2, 0], [1, -2, 2], [1, -2, 3]], float)
    free = np.array([n not in ("root", "toe_L") for n in names])
    frames = np.tile(np.eye(3), (len(names), 1, 1))
    quarter = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])   # 90 deg about z
    frames[names.index("wrist_L")] = quarter
    marks, axes = extremity_marks("limb-ends+twist", names, parents, free, joints, frames, 0)
    assert [n for n, m in zip(names, marks) if m] == ["hand_L", "foot_L"]
    assert [n for n, a in zip(names, axes) if np.abs(a).sum() > 0] == ["wrist_L", "ankle_L"]
    # wrist -> hand is +y in the world; the wrist's frame turns x to y, so in its frame the bone is +x
    np.testing.assert_allclose(axes[names.index("wrist_L")], [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(axes[names.index("ankle_L")], [0.0, 0.0, 1.0], atol=1e-12)   # ankle -> foot: +z
    for rule in ("names", "names-distal", "limb-ends"):
        assert extremity_marks(rule, names, parents, free, joints, frames, 0)[1] is None
    # through the avatar's tensors: stored when present, absent (None) otherwise
    tpl = build(mesh)                                   # the default rule, limb-ends+twist
    from cortexkit.cli.fit_avatar import EXTREMITY_DEFAULT, EXTREMITY_RULES   # the command's copy (no torch)
    from cortexkit.tools.avatar import model

    assert (EXTREMITY_RULES, EXTREMITY_DEFAULT) == (model.EXTREMITY_RULES, model.EXTREMITY_DEFAULT)
    assert tpl.extremity_twist is not None and tpl.extremity_twist.shape == (len(tpl.joint_names), 3)
    twist = tpl.extremity_twist.clone()
    twist[tpl.joint_names.index("femur2_L")] = torch.tensor([0.0, 0.6, 0.8])
    from dataclasses import replace

    tensors, meta = template_to_tensors(replace(tpl, extremity_twist=twist))
    assert torch.equal(template_from_tensors(tensors, meta).extremity_twist, twist)
    tensors, meta = template_to_tensors(build(mesh, extremities="names"))
    assert "template.extremity_twist" not in tensors
    assert template_from_tensors(tensors, meta).extremity_twist is None


def test_twist_factor_charges_a_pure_twist_about_the_bone_and_not_a_swing(mesh):
    """The temporal term's twist marks in closed form: a joint accelerating (alpha per frame^2) about a
    fixed axis has angular acceleration alpha along that axis. About its bone to the child (a pure
    twist: the child joint does not move), the mark adds (factor - 1) alpha^2 / (free joints) to the
    term; about an axis across the bone (a pure swing: the child moves) it adds nothing. Unmarked, or
    with factor 1, the term is today's to the bit."""
    from dataclasses import replace

    from cortexkit.tools.avatar.fit import FitConfig, prior_terms
    from cortexkit.tools.avatar.model import Pose, Shape, forward

    tpl = build(mesh)
    j, child = tpl.joint_names.index("femur2_L"), tpl.joint_names.index("tibia2_L")
    bone = (tpl.joints[child] - tpl.joints[j]).double()
    axis = tpl.frames[j].double().T @ (bone / bone.norm())            # the bone in the joint's rest frame
    across = torch.linalg.cross(axis, torch.tensor([0.3, -0.2, 0.9], dtype=torch.float64))
    across = across / across.norm()
    twist = torch.zeros(len(tpl.joint_names), 3)
    twist[j] = axis.float()
    marked = replace(tpl, extremity_twist=twist)
    shape = Shape.neutral(tpl, dtype=torch.float64)
    T, alpha = 7, 0.04
    n_free = float(tpl.free.sum())

    def posed(about):
        pose = Pose.zeros(T, tpl, dtype=torch.float64)
        # from 0.2 rad, not 0: angular_velocity's axis is undefined at the zero rotation
        pose.rotations[:, j] = (0.2 + 0.5 * alpha * torch.arange(T, dtype=torch.float64) ** 2)[:, None] * about
        return pose

    def temporal(template, pose, **kw):
        return float(prior_terms(template, shape, pose, FitConfig(**kw), 300.0, 1.0, True)[3])

    with torch.no_grad():
        rest = forward(tpl, shape, Pose.zeros(T, tpl, dtype=torch.float64), with_vertices=False)[1][:, child]
        assert torch.allclose(forward(tpl, shape, posed(axis), with_vertices=False)[1][:, child], rest, atol=1e-6)
        assert (forward(tpl, shape, posed(across), with_vertices=False)[1][:, child] - rest).norm(dim=-1).max() > 1.0
    for factor in (100.0, 10.0):
        plain, with_twist = temporal(tpl, posed(axis)), temporal(marked, posed(axis), extremity_twist_factor=factor)
        assert with_twist - plain == pytest.approx((factor - 1) * alpha ** 2 / n_free, rel=1e-6)
        assert temporal(marked, posed(across), extremity_twist_factor=factor) == pytest.approx(
            temporal(tpl, posed(across)), rel=1e-9, abs=1e-15)
    assert temporal(marked, posed(axis), extremity_twist_factor=1.0) == temporal(tpl, posed(axis))
    # order 1 (velocity): the same projection on the velocity
    v1, v1t = temporal(tpl, posed(axis), temporal_order=1), temporal(marked, posed(axis), temporal_order=1)
    assert v1t > 50 * v1 > 0


def test_keypoint_markers_ride_rigidly_on_the_keypoints_bone(mesh):
    """A marker (per-keypoint offset, rest frame of the keypoint's bone) moves a posed keypoint by
    R_g M_j m in closed form: the bone's rotation, nothing else; other bones leave it alone."""
    from cortexkit.tools.avatar.model import Pose, Shape, forward, marker_joints
    from cortexkit.tools.avatar.rotation import rodrigues

    spec = yaml.safe_load((HEX / "hexapod_keypoints.yaml").read_text())
    tpl = build(mesh, keypoints=spec)
    K = len(tpl.keypoint_names)
    dominant = marker_joints(tpl)
    eye, knee = tpl.keypoint_names.index("eye_left"), tpl.keypoint_names.index("knee2_L")
    assert tpl.joint_names[int(dominant[eye])] == "head"          # the eye vertices are skinned to the head
    assert tpl.joint_names[int(dominant[knee])] == "tibia2_L"     # a joint keypoint: its own joint
    torch.manual_seed(0)
    markers = torch.randn(K, 3) * 5.0
    plain = Shape(torch.tensor(1.2), torch.ones(tpl.n_groups) * 1.05, torch.zeros(tpl.n_offsets, 3))
    marked = Shape(plain.scale, plain.bone_scales, plain.offsets, markers, list(tpl.keypoint_names))
    pose = Pose.zeros(1, tpl)
    head, tibia, other = (tpl.joint_names.index(n) for n in ("head", "tibia2_L", "tibia1_R"))
    theta = torch.tensor([[0.3, -0.5, 0.8]])
    pose.rotations[0, head] = theta[0]
    pose.rotations[0, tibia] = torch.tensor([0.0, 0.0, 1.1])
    pose.rotations[0, other] = torch.tensor([0.9, 0.2, 0.0])     # moves neither keypoint's bone
    pose.global_rot[0] = torch.tensor([0.2, 0.1, -0.4])
    pose.global_t[0] = torch.tensor([10.0, -20.0, 30.0])
    _, _, kp0 = forward(tpl, plain, pose)
    _, _, kp1 = forward(tpl, marked, pose)
    g = rodrigues(pose.global_rot)[0]

    def chain(j):       # M_j = Π over the chain root..j of Q_i R(θ_i) Q_iᵀ (only free joints rotate)
        m = torch.eye(3)
        path = []
        while j >= 0:
            path.append(j)
            j = tpl.parents[j]
        for i in reversed(path):
            q = tpl.frames[i]
            r = rodrigues((pose.rotations[0, i] * tpl.free[i].float())[None])[0]
            m = m @ q @ r @ q.T
        return m

    for k in (eye, knee):
        expect = g @ chain(int(dominant[k])) @ markers[k]
        np.testing.assert_allclose((kp1 - kp0)[0, k].numpy(), expect.numpy(), atol=1e-4)
    # the head's rotation turns the eye's marker: not a fixed world offset
    assert float((kp1 - kp0)[0, eye].sub(g @ markers[eye]).norm()) > 1.0
    # markers are kept by name when the keypoints are selected / reordered (the views' order)
    names = ["knee2_L", "eye_left"]
    _, _, kp2 = forward(tpl.select_keypoints(names), marked, pose)
    np.testing.assert_allclose(kp2[0].numpy(), kp1[0, [knee, eye]].numpy(), atol=1e-5)


def test_silhouette_term_same_with_the_written_backward_and_with_autograd(mesh):
    """FitConfig.silhouette_grad_all switches the rasteriser's backward (autograd over every pair,
    the reference) against the default written one over the pairs that count: on the hexapod's
    own masks (16 cameras, 6 rendering) the silhouette term is the same and so is its gradient
    with respect to the vertices, to within 1 % of its largest component."""
    from cortexkit.tools.avatar.fit import FitConfig, Observations, image_terms
    from cortexkit.tools.avatar.synth import SynthConfig, make_views

    tpl = build(mesh, keypoints=yaml.safe_load((HEX / "hexapod_keypoints.yaml").read_text()))
    cams, syn = make_views(tpl, mesh.animations["Walk"]["world"][:2], 1000.0, "ring:16", None,
                           SynthConfig(noise=0.0, dropout=0.0, outliers=0.0, crop=32, masks=True, seed=1))
    obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
    use = torch.ones(2, len(cams), dtype=torch.bool)
    out = []
    for grad_all in (True, False):
        verts = syn.truth["vertices"].float().clone().requires_grad_(True)
        config = FitConfig(gate=1e9, silhouette_grad_all=grad_all)
        # the true vertices 1 % too large: an outline that does not match, a gradient to compare
        _, l_sil, _ = image_terms(tpl, verts * 1.01, syn.truth["keypoints"].float(), obs, use, config, True,
                                  torch.ones(len(tpl.keypoint_names)))
        l_sil.sum().backward()
        out.append((l_sil.detach(), verts.grad))
    (s_ref, g_ref), (s_new, g_new) = out
    assert float(s_ref.min()) > 0 and torch.allclose(s_new, s_ref, rtol=1e-5)
    assert float((g_new - g_ref).abs().max() / g_ref.abs().max()) < 1e-2


def _masked_hexapod_walk(mesh, *, frames, ring, noise, seed):
    """The hexapod (keypoints, symmetry) walking, seen by a ring of cameras with masks at 32 px, no dropout or
    outliers -> (template, cameras, observations)."""
    from cortexkit.tools.avatar.fit import Observations
    from cortexkit.tools.avatar.synth import SynthConfig, make_views

    tpl = build(mesh, keypoints=yaml.safe_load((HEX / "hexapod_keypoints.yaml").read_text()),
                symmetry=yaml.safe_load((HEX / "hexapod_symmetry.yaml").read_text()))
    cfg = SynthConfig(noise=noise, dropout=0.0, outliers=0.0, masks=True, crop=32, seed=seed)
    cams, syn = make_views(tpl, mesh.animations["Walk"]["world"][:frames], 1000.0, f"ring:{ring}", None, cfg)
    return tpl, cams, Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)



def test_bones_split_moves_only_the_unspanned_bones_with_silhouettes(mesh):
    """FitConfig.bones_split (the study of RESULTS section 11): with masks, the bones stage fits
    keypoints only (scale and bones equal the keypoint-only run's) and the split stage after it moves
    only the bone groups no keypoint pair spans (the hexapod's coxa, femur, neck2 ...); the global
    scale and the spanned groups (knee to foot, thorax3 to neck1) stay; without masks the flag changes nothing."""
    from cortexkit.tools.avatar.fit import FitConfig, fit_avatar_shape, spanned_groups

    tpl, cams, obs = _masked_hexapod_walk(mesh, frames=2, ring=4, noise=0.0, seed=3)
    spanned = spanned_groups(tpl)
    names = [n for n, s in zip(tpl.group_names, spanned.tolist()) if s]
    assert "neck1" in names and any(n.startswith("foot") for n in names)           # thorax3-neck1, knee-foot
    assert not any(n.startswith(("coxa", "femur", "tibia", "neck2", "head")) for n in names)

    def shape(steps, **kw):  # one mesh step (offsets only: neither scale nor bones) ends each run
        config = FitConfig(shape_steps=(0, 0, steps, 1), crop=32, gate=1e6, **kw)
        return fit_avatar_shape(tpl, obs, config, n_keyframes=2).shape

    keypoint_only = shape(4, silhouettes=False)
    split = shape(4, bones_split=True)
    assert float(split.scale) == float(keypoint_only.scale)
    assert torch.equal(split.bone_scales[spanned], keypoint_only.bone_scales[spanned])
    assert float((split.bone_scales[~spanned] - keypoint_only.bone_scales[~spanned]).abs().max()) > 1e-4
    assert torch.equal(shape(4, bones_split=True, silhouettes=False).bone_scales, keypoint_only.bone_scales)


def test_masks_in_mesh_bones_frees_the_bones_in_the_mesh_stage_and_spanned_holds_the_rest(mesh):
    """FitConfig.masks_in (RESULTS section 24): "mesh" and "mesh-bones" keep silhouettes out of the bones stage
    (its bones are the keypoint-only fit's); after it "mesh" leaves scale and bone scales as they are while
    "mesh-bones" moves them with the offsets against the silhouettes. "spanned,mesh": in the bones stage the
    silhouette term moves only the spanned bone groups (with no keypoint or prior pull the others stay at 1
    exactly, while "bones,mesh" moves them); an unknown value is refused."""
    from cortexkit.tools.avatar.fit import FitConfig, fit_avatar_shape, spanned_groups

    tpl, cams, obs = _masked_hexapod_walk(mesh, frames=2, ring=4, noise=0.0, seed=3)
    spanned = spanned_groups(tpl)

    def shape(steps, **kw):
        config = FitConfig(shape_steps=steps, crop=32, gate=1e6, sigma_bias=0.0, **kw)
        return fit_avatar_shape(tpl, obs, config, n_keyframes=2).shape

    keypoint_only = shape((0, 0, 4, 3), silhouettes=False)
    mesh_only = shape((0, 0, 4, 3), masks_in="mesh")
    mesh_bones = shape((0, 0, 4, 3), masks_in="mesh-bones")
    assert float(mesh_only.scale) == float(keypoint_only.scale)
    assert torch.equal(mesh_only.bone_scales, keypoint_only.bone_scales)
    assert float((mesh_bones.bone_scales - keypoint_only.bone_scales).abs().max()) > 1e-4
    assert float(mesh_bones.scale) != float(keypoint_only.scale)
    # the bones stage alone, silhouettes only (no keypoint weight, no band prior)
    held = shape((0, 0, 4, 0), masks_in="spanned,mesh", keypoint_weight=0.0, bone_weight=0.0)
    free = shape((0, 0, 4, 0), keypoint_weight=0.0, bone_weight=0.0)
    assert torch.equal(held.bone_scales[~spanned], torch.ones(int((~spanned).sum())))
    assert float((held.bone_scales[spanned] - 1).abs().max()) > 1e-4
    assert float((free.bone_scales[~spanned] - 1).abs().max()) > 1e-2
    with pytest.raises(ValueError, match="masks_in"):
        shape((0, 0, 1, 0), masks_in="bones")


def test_masks_in_auto_keeps_the_candidate_better_on_the_held_out_camera(mesh, monkeypatch):
    """FitConfig.masks_in "auto" (RESULTS section 25): bones,mesh and mesh-bones are each fitted without the
    camera the baseline check holds out (most confident detections); the held-out scores are those of
    held_out_scores on each candidate's fit; the candidate with the better score under auto_measure (keypoints,
    the default: lower median px; iou: higher) is the avatar (auto_refit false: its fit as it is). Reversing the
    scores reverses the choice; two runs give the same choice, scores and shape."""
    import cortexkit.tools.avatar.fit as fit
    from cortexkit.tools.avatar.baseline import held_out_camera
    from cortexkit.tools.avatar.fit import AUTO_MASKS_IN, FitConfig, fit_avatar_shape, held_out_scores

    tpl, cams, obs = _masked_hexapod_walk(mesh, frames=3, ring=4, noise=1.0, seed=5)

    def run(**kw):
        config = FitConfig(shape_steps=(5, 5, 5, 5), crop=32, gate=1e6, masks_in="auto", **kw)
        return fit_avatar_shape(tpl, obs, config, n_keyframes=2)

    first = run()
    rec = first.auto
    keyed = obs.frames(first.keyframes)
    camera = held_out_camera(keyed.confidence, 0.5)
    assert rec["camera"] == cams.names[camera] and rec["measure"] == "keypoints" and not rec["refit"]
    assert set(first.candidates) == set(AUTO_MASKS_IN) == set(rec["scores"])
    for m, r in first.candidates.items():   # the recorded scores are the candidates' on the held-out camera
        again = held_out_scores(tpl, r, keyed, camera)
        assert again["iou"] == pytest.approx(rec["scores"][m]["iou"], abs=1e-5)
        assert again["keypoints_px_median"] == pytest.approx(rec["scores"][m]["keypoints_px_median"], abs=1e-5)
    px = {m: rec["scores"][m]["keypoints_px_median"] for m in AUTO_MASKS_IN}
    assert px[AUTO_MASKS_IN[0]] != px[AUTO_MASKS_IN[1]]
    assert rec["chosen"] == min(AUTO_MASKS_IN, key=px.get) == first.masks_in
    assert first.shape is first.candidates[rec["chosen"]].shape
    ious = {m: rec["scores"][m]["iou"] for m in AUTO_MASKS_IN}
    assert run(auto_measure="iou").auto["chosen"] == max(AUTO_MASKS_IN, key=ious.get)
    second = run()   # deterministic: same camera, scores, choice and shape
    assert second.auto == rec and torch.equal(second.shape.offsets, first.shape.offsets)
    # auto_refit: the chosen one fitted again on every camera (its own fit, not the candidate's)
    refit = run(auto_refit=True)
    assert refit.auto["chosen"] == rec["chosen"] and refit.masks_in == rec["chosen"]
    direct = fit_avatar_shape(tpl, obs, FitConfig(shape_steps=(5, 5, 5, 5), crop=32, gate=1e6,
                                                  masks_in=rec["chosen"]), n_keyframes=2)
    assert torch.equal(refit.shape.offsets, direct.shape.offsets)
    # the choice follows the measure: the scores reversed, the other candidate is kept
    real = fit.held_out_scores
    monkeypatch.setattr(fit, "held_out_scores",
                        lambda t, r, o, c: {**real(t, r, o, c),
                                                   "keypoints_px_median": -real(t, r, o, c)["keypoints_px_median"]})
    flipped = run()
    assert flipped.auto["chosen"] != rec["chosen"]
    assert torch.equal(flipped.shape.offsets, first.candidates[flipped.auto["chosen"]].shape.offsets)
    with pytest.raises(ValueError, match="auto_measure"):
        run(auto_measure="area")


def test_masks_in_auto_with_two_cameras_fits_bones_mesh_and_says_why(mesh):
    """masks_in "auto" needs a camera to hold out and two to triangulate without it: on 2 cameras it fits
    bones,mesh (the same shape as asking for it) and its record says auto did not run and why."""
    from cortexkit.tools.avatar.fit import FitConfig, fit_avatar_shape

    tpl, cams, obs = _masked_hexapod_walk(mesh, frames=2, ring=2, noise=0.0, seed=2)
    run = lambda m: fit_avatar_shape(tpl, obs, FitConfig(shape_steps=(3, 3, 3, 3), crop=32, gate=1e6,  # noqa: E731
                                                         masks_in=m), n_keyframes=2)
    auto, plain = run("auto"), run("bones,mesh")
    assert auto.masks_in == "bones,mesh" and auto.candidates is None
    assert auto.auto["chosen"] == "bones,mesh" and "auto not run" in auto.auto["why"] and "2 camera" in auto.auto["why"]
    assert torch.equal(auto.shape.offsets, plain.shape.offsets)
