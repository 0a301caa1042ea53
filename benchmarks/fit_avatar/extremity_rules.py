"""Which joints each extremity rule marks (model.extremity_joints), on every benchmark template: the joints
whose angular acceleration the track's temporal term weights by ``FitConfig.extremity_factor`` (only free
joints count). RESULTS section 20. Build the plans first (make_template.py --plan P ...).

    CORTEXKIT_SHARED_DATA=/work/shared/data python benchmarks/fit_avatar/extremity_rules.py > benchmarks/fit_avatar/extremity_rules.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from cortexkit.tools.avatar.model import EXTREMITY_RULES, extremity_joints

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_template import load_template  # noqa: E402

PLANS = {"hexapod": HERE.parents[1] / "tests" / "data" / "hexapod" / "hexapod.glb",
         **{p: HERE / f"_{p}" / f"{p}.glb" for p in ("bird", "quadruped", "primate", "lizard", "frog", "kangaroo")}}


def marks(tpl) -> dict:
    out = {}
    for rule in EXTREMITY_RULES:
        m = extremity_joints(rule, tpl.joint_names, tpl.parents, tpl.free.numpy(), tpl.joints.numpy(),
                             tpl.meta.get("mirror_axis", 0))
        out[rule] = [n for n, x, f in zip(tpl.joint_names, m, tpl.free.tolist()) if x and f]
    return out


def main():
    out = {}
    try:
        from study_temporal import load_fox

        out["fox"] = marks(load_fox()[1])
    except Exception as exc:  # noqa: BLE001 - the Fox needs the shared data
        out["fox"] = f"not loaded: {exc}"
    for name, path in PLANS.items():
        out[name] = marks(load_template(path)[1]) if path.exists() else f"not built: {path}"
    yaml.safe_dump(out, sys.stdout, sort_keys=False, width=200)


if __name__ == "__main__":
    main()
