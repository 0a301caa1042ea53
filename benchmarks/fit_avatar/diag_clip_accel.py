"""How hard each template's clip pulls against the track's temporal term (RESULTS section 19, diagnosis
av22): for the first N frames of each benchmark clip, the TRUE poses' temporal term as the track
weights it (``fit.prior_terms``: angular acceleration, order 2, squared, hands/feet/wrists/ankles x
``extremity_factor`` 100, per frame), its part on the extremity joints, and the joints with the largest
mean squared angular acceleration (rad/frame^2)^2. No fit; a property of the clips. YAML on stdout.

    for p in hexapod quadruped bird primate lizard frog; do python benchmarks/fit_avatar/make_template.py --plan $p benchmarks/fit_avatar/_$p/$p.glb; done
    python benchmarks/fit_avatar/diag_clip_accel.py > benchmarks/fit_avatar/diag_clip_accel.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import yaml

from cortexkit.tools.avatar.fit import FitConfig, body_length, prior_terms
from cortexkit.tools.avatar.model import Shape
from cortexkit.tools.avatar.rotation import angular_velocity
from cortexkit.tools.avatar.synth import poses_from_clip

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_template import load_template  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(frames: int = 30):
    out = {"frames": frames, "templates": {}}
    for plan in ("hexapod", "quadruped", "bird", "primate", "lizard", "frog"):
        path = HERE / f"_{plan}" / f"{plan}.glb"
        if not path.exists():
            continue
        mesh, tpl = load_template(path)
        clip = next(iter(mesh.animations))
        pose = poses_from_clip(tpl, mesh.animations[clip]["world"][:frames], 1000.0)
        shape = Shape.neutral(tpl)
        length = body_length(tpl)
        row = {"clip": clip}
        for factor in (100.0, 1.0):
            _, _, _, temp = prior_terms(tpl, shape, pose, FitConfig(extremity_factor=factor, translation_weight=0.0),
                                        length, 1.0, True)
            row[f"temporal_term_per_frame_extremity_{factor:g}"] = round(float(temp), 5)
        free = tpl.free
        omega = angular_velocity(pose.rotations * free[None, :, None])
        acc = (omega[1:] - omega[:-1]).pow(2).sum(-1).mean(0) * free          # (J,)
        ext = tpl.extremity
        row["extremity_share_at_100"] = round(float(100 * acc[ext].sum() / (100 * acc[ext].sum() + acc[~ext].sum())), 3)
        top = sorted(range(tpl.n_joints), key=lambda j: -float(acc[j]))[:5]
        row["top_joints_mean_sq_acc"] = {tpl.joint_names[j] + (" (extremity)" if bool(ext[j]) else ""):
                                         round(float(acc[j]), 5) for j in top}
        out["templates"][plan] = row
        print(f"# {plan}: {row}", file=sys.stderr, flush=True)
    yaml.safe_dump(out, sys.stdout, sort_keys=False, width=200)


if __name__ == "__main__":
    main()
