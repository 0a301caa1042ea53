"""--plot: a multi-view overlay of the fitted mesh and the keypoints (matplotlib, PNG)."""

from __future__ import annotations

import torch

from cortexkit.tools.avatar.camera import project
from cortexkit.tools.avatar.model import Pose, Shape, Template, forward


def overlay(path: str, template: Template, shape: Shape, pose: Pose, obs, frame: int | None = None,
            max_views: int = 6) -> None:
    """Mesh (triangles), fitted keypoints (x) and detections (o) of one frame in up to
    ``max_views`` cameras, in each camera's crop around the detections."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    frame = pose.rotations.shape[0] // 2 if frame is None else frame
    one = Pose(pose.rotations[frame:frame + 1], pose.global_rot[frame:frame + 1], pose.global_t[frame:frame + 1])
    with torch.no_grad():
        verts, _, kps = forward(template, shape, one)
        vpix = project(obs.cameras, verts[0].double()).numpy()
        kpix = project(obs.cameras, kps[0].double()).numpy()
    n = min(max_views, len(obs.cameras))
    fig, axes = plt.subplots(1, n, figsize=(3 * n, 3.2), squeeze=False)
    det = obs.keypoints[frame].numpy()
    for c in range(n):
        ax = axes[0, c]
        tri = vpix[c][template.faces.numpy()]
        ax.add_collection(PolyCollection(tri, facecolor=(0.3, 0.5, 0.9, 0.25), edgecolor=(0.2, 0.3, 0.6, 0.4), lw=0.3))
        ax.plot(det[c, :, 0], det[c, :, 1], "o", mfc="none", mec="orange", ms=5, label="detected")
        ax.plot(kpix[c, :, 0], kpix[c, :, 1], "x", color="red", ms=4, label="fitted")
        lo, hi = vpix[c].min(0), vpix[c].max(0)
        pad = 0.1 * (hi - lo).max()
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(hi[1] + pad, lo[1] - pad)
        ax.set_aspect("equal")
        ax.set_title(obs.cameras.names[c], fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"frame {frame}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
