"""Evaluation against synthetic ground truth: MPJPE, PA-MPJPE, coverage, per-vertex error,
joint-angle error on observable joints, reprojection error, silhouette IoU, bone-scale error."""

from __future__ import annotations

import numpy as np
import torch

from cortexkit.tools.avatar.camera import Cameras, project
from cortexkit.tools.avatar.fit import procrustes
from cortexkit.tools.avatar.model import Pose, Shape, Template, forward, joint_world_transforms
from cortexkit.tools.avatar.raster import hard_silhouette
from cortexkit.tools.avatar.rotation import geodesic_deg


def point_metrics(pred: np.ndarray, true: np.ndarray) -> dict:
    """pred, true (F, K, 3) mm, pred NaN where not estimated -> MPJPE, PA-MPJPE, coverage."""
    ok = np.isfinite(pred).all(-1)
    err = np.linalg.norm(np.where(ok[..., None], pred, 0) - true, axis=-1)
    pa = []
    for f in range(len(pred)):
        if ok[f].sum() >= 3:
            s, R, t = procrustes(pred[f, ok[f]], true[f, ok[f]])
            aligned = s * pred[f, ok[f]] @ R.T + t
            pa.append(np.linalg.norm(aligned - true[f, ok[f]], axis=-1))
    pa = np.concatenate(pa) if pa else np.array([np.nan])
    return {"mpjpe_mm": float(err[ok].mean()) if ok.any() else float("nan"),
            "median_error_mm": float(np.median(err[ok])) if ok.any() else float("nan"),
            "pa_mpjpe_mm": float(pa.mean()), "coverage": float(ok.mean())}


def observable_joints(template: Template) -> list[int]:
    """Joints whose rotation is seen from keypoints: free joints with a keypoint child joint."""
    kp_joints = set(torch.nonzero(template.keypoints_joint.abs().sum(0) > 0).reshape(-1).tolist())
    return [i for i in range(template.n_joints) if bool(template.free[i])
            and any(p == i and c in kp_joints for c, p in enumerate(template.parents))]


def model_metrics(template: Template, shape: Shape, pose: Pose, truth: dict, cams: Cameras, *,
                  clean2d=None, crops=None, masks=None) -> dict:
    """A fitted avatar and its poses vs the truth of a synthetic views artifact."""
    with torch.no_grad():
        verts, joints, kps = forward(template, shape, pose)
        out = point_metrics(kps.double().numpy(), truth["keypoints"].double().numpy())
        out["vertex_error_mm"] = float((verts - truth["vertices"]).norm(dim=-1).mean())
        true_shape = Shape(truth["scale"].reshape(()), truth["bone_scales"], truth["offsets"])
        true_pose = Pose(truth["rotations"], truth["global_rot"], truth["global_t"])
        rp, _ = joint_world_transforms(template, shape, pose)
        rt, _ = joint_world_transforms(template, true_shape, true_pose)
        obs = observable_joints(template)
        parents = [max(template.parents[i], 0) for i in obs]
        loc_p = rp[:, parents].transpose(-1, -2) @ rp[:, obs]
        loc_t = rt[:, parents].transpose(-1, -2) @ rt[:, obs]
        ang = geodesic_deg(loc_p, loc_t)
        out["joint_angle_error_deg"] = float(ang.mean())
        out["joint_angle_median_deg"] = float(ang.median())
        out["observable_joints"] = [template.joint_names[i] for i in obs]
        if template.n_groups:
            ratio = shape.bone_scales * shape.scale / (truth["bone_scales"] * truth["scale"].reshape(()))
            out["bone_scale_error"] = float((ratio - 1).abs().mean())
            out["bone_scale_error_max"] = float((ratio - 1).abs().max())
        out["scale_error"] = float((shape.scale / truth["scale"].reshape(()) - 1).abs())
        if clean2d is not None:
            proj = project(cams, kps.double()).permute(1, 0, 2, 3).float()
            out["reprojection_px"] = float((proj - clean2d).norm(dim=-1).mean())
        if masks is not None and crops is not None:
            out["iou"] = silhouette_iou(template, verts, cams, crops, masks)
    return out


def silhouette_iou_per_camera(template: Template, verts: torch.Tensor, cams: Cameras, crops, masks) -> torch.Tensor:
    """(C,) mean IoU over frames per camera of the rendered (exact) silhouettes vs masks (F, C, S, S)."""
    F, C, S = masks.shape[0], masks.shape[1], masks.shape[-1]
    vpix = project(cams, verts.double()).float().permute(1, 0, 2, 3)
    pix = (vpix - crops[:, :, None, :2].float()) * crops[:, :, None, 2:].float()
    rendered = hard_silhouette(pix.reshape(F * C, -1, 2), template.faces, S, 4).reshape(F, C, S, S) > 0.5
    truth = masks > 0.5
    inter = (rendered & truth).sum((2, 3)).float()
    union = (rendered | truth).sum((2, 3)).float().clamp(min=1)
    return (inter / union).mean(0)


def silhouette_iou(template: Template, verts: torch.Tensor, cams: Cameras, crops, masks) -> float:
    """Mean IoU of the rendered (exact) silhouettes vs masks (F, C, S, S), both thresholded at 0.5."""
    F, C, S = masks.shape[0], masks.shape[1], masks.shape[-1]
    vpix = project(cams, verts.double()).float().permute(1, 0, 2, 3)
    pix = (vpix - crops[:, :, None, :2]) * crops[:, :, None, 2:]
    rendered = hard_silhouette(pix.reshape(F * C, -1, 2), template.faces, S, 4).reshape(F, C, S, S) > 0.5
    truth = masks > 0.5
    inter = (rendered & truth).sum((2, 3)).float()
    union = (rendered | truth).sum((2, 3)).float().clamp(min=1)
    return float((inter / union).mean())


def reference_points(columns: dict, names: list[str], frames: int, what: str = "the reference") -> tuple[np.ndarray, list[str]]:
    """3D points a user has (a triangulate table, a CSV of NAME_x NAME_y NAME_z columns, e.g. from
    motion capture) -> ((F, K', 3) with NaN where absent, the K' keypoint names it holds)."""
    have = [n for n in names if all(f"{n}_{a}" in columns for a in "xyz")]
    if not have:
        raise ValueError(f"{what} has no NAME_x, NAME_y, NAME_z columns for any keypoint of the views "
                         f"({', '.join(names[:6])}{', ...' if len(names) > 6 else ''})")
    pts = np.stack([np.stack([np.asarray(columns[f"{n}_{a}"], float) for a in "xyz"], -1) for n in have], 1)
    if len(pts) != frames:
        raise ValueError(f"{what} has {len(pts)} frames, the views {frames}")
    return pts, have


def against_points(pred: np.ndarray, ref: np.ndarray) -> dict:
    """pred (F, K, 3) (NaN = not estimated) vs reference points ref (F, K, 3) (NaN = absent):
    MPJPE, PA-MPJPE over the points both have, and coverage of the reference's points."""
    have = np.isfinite(ref).all(-1)
    both = have & np.isfinite(pred).all(-1)
    out = point_metrics(np.where(both[..., None], pred, np.nan), np.where(have[..., None], ref, 0.0))
    out["coverage"] = float(both.sum() / max(have.sum(), 1))
    out["reference_points"] = int(have.sum())
    return out


def reprojection_to_detections(template: Template, shape: Shape, pose: Pose, cams: Cameras,
                               keypoints: torch.Tensor, confidence: torch.Tensor) -> dict:
    """Pixel distance of the fitted keypoints to the 2D detections (F, C, K, 2) themselves
    (median and mean over detected points): a score that needs no ground truth."""
    with torch.no_grad():
        _, _, kps = forward(template, shape, pose, with_vertices=bool(template.keypoints_vertex.abs().sum() > 0))
        proj = project(cams, kps.double()).permute(1, 0, 2, 3)
    ok = torch.isfinite(keypoints).all(-1) & (confidence > 0)
    dist = (proj - keypoints.double()).norm(dim=-1)[ok]
    return {"detection_px_median": float(dist.median()), "detection_px_mean": float(dist.mean())}


def evaluate_all(views: dict, table=None, fitted=None, reference=None) -> dict:
    """views: a views dict with truth; table: a triangulate Table or None; fitted: (template,
    shape, pose, seconds_per_frame) or None -> report dict."""
    from cortexkit.tools.avatar.triangulate import points_from_table

    truth = views["truth"]
    report: dict = {"frames": int(views["keypoints"].shape[0]), "cameras": len(views["cameras"])}
    F = int(views["keypoints"].shape[0])
    ref = names = None
    if reference is not None:
        ref, names = reference_points(reference.columns, views["keypoint_names"], F)
        report["reference_keypoints"] = names
        index = [views["keypoint_names"].index(n) for n in names]
    if table is not None and reference is not None:
        pts = points_from_table(table.columns, views["keypoint_names"])
        report["triangulation_vs_reference"] = against_points(pts[:, index], ref)
    if fitted is not None and reference is not None:
        template, shape, pose = fitted[:3]
        tpl = template.select_keypoints(views["keypoint_names"])
        with torch.no_grad():
            _, _, kps = forward(tpl, shape, pose, with_vertices=bool(tpl.keypoints_vertex.abs().sum() > 0))
        report["fit_vs_reference"] = against_points(kps.double().numpy()[:, index], ref)
    if fitted is not None and not truth:
        template, shape, pose, spf = fitted[:4]
        tpl = template.select_keypoints(views["keypoint_names"])
        if pose.rotations.shape[0] != F:
            raise ValueError(f"the poses have {pose.rotations.shape[0]} frames, the views {F}")
        out = reprojection_to_detections(tpl, shape, pose, views["cameras"], views["keypoints"],
                                         views["confidence"])
        if views.get("masks") is not None and views.get("crops") is not None:
            with torch.no_grad():
                verts, _, _ = forward(tpl, shape, pose)
            out["iou"] = silhouette_iou(tpl, verts, views["cameras"], views["crops"], views["masks"])
        out["seconds_per_frame"] = spf
        report["fit"] = out
    if not truth:
        return report
    if table is not None:
        pts = points_from_table(table.columns, views["keypoint_names"])
        if pts.shape[0] != truth["keypoints"].shape[0]:
            raise ValueError(f"the points table has {pts.shape[0]} frames, the views {truth['keypoints'].shape[0]}")
        report["triangulation"] = point_metrics(pts, truth["keypoints"].double().numpy())
    if fitted is not None:
        template, shape, pose, spf, *rest = fitted
        colors = rest[0] if rest else None
        if pose.rotations.shape[0] != truth["keypoints"].shape[0]:
            raise ValueError(f"the poses have {pose.rotations.shape[0]} frames, the views {truth['keypoints'].shape[0]}")
        if template.keypoint_names != views["keypoint_names"]:
            template = template.select_keypoints(views["keypoint_names"])
        out = model_metrics(template, shape, pose, truth, views["cameras"], clean2d=truth.get("clean2d"),
                            crops=views.get("crops"), masks=views.get("masks"))
        out["seconds_per_frame"] = spf
        if colors is not None and "colors" in truth:
            err = (torch.as_tensor(colors).float() - truth["colors"].float()).abs()
            flat = (truth["colors"].float().mean(0, keepdim=True) - truth["colors"].float()).abs()
            out["color_error"] = float(err.mean())          # mean |RGB difference| in [0, 1]
            out["color_error_flat"] = float(flat.mean())    # the same for one mean colour everywhere
        report["fit"] = out
    return report
