"""Did a committed benchmark YAML come from this environment? (issue 34, av26)

Our triangulation and the synthetic views (tools/avatar/triangulate.py, synth.py, camera.py: unchanged since
2026-12-02) are recomputed for each YAML's settings (template, clip, frames, seed, crop, rigs, as hexapod.py makes
them) and their ``triangulate_ours.mpjpe_mm`` compared with the stored one to the last digit. SAME: the same float
bits as when the YAML was written; DIFF at ~1e-7: the same code computed them to other last bits (another
environment), so a fit's figure in that YAML may not repeat here to the digit (RESULTS, Gaps: "Figures across
environments").

    OMP_NUM_THREADS=1 python benchmarks/fit_avatar/diag_env_fingerprint.py \\
        benchmarks/fit_avatar/results_primate.yaml=benchmarks/fit_avatar/_primate/primate.glb \\
        benchmarks/fit_avatar/results_hexapod.yaml=tests/data/hexapod/hexapod.glb ...
"""

import sys
from pathlib import Path

import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_template import load_template  # noqa: E402

from cortexkit.tools.avatar.metrics import point_metrics  # noqa: E402
from cortexkit.tools.avatar.synth import SynthConfig, make_views  # noqa: E402
from cortexkit.tools.avatar.triangulate import triangulate_frames  # noqa: E402


def check(path: str, template: str) -> list[dict]:
    d = yaml.safe_load(open(path))
    mesh, tpl = load_template(template)
    clip = d.get("clip") or next(iter(mesh.animations))
    start = d.get("start", 0)
    world = mesh.animations[clip]["world"][start:start + d["frames"]]
    rows = []
    for n, row in d["rigs"].items():
        stored = row["triangulate_ours"]["mpjpe_mm"]
        cfg = SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=d["crop"], masks=True, seed=d["seed"])
        cams, syn = make_views(tpl, world, 1000.0, f"ring:{n}", None, cfg)
        tri = triangulate_frames(cams, syn.keypoints.double().numpy(), syn.confidence.double().numpy()).points
        now = point_metrics(tri, syn.truth["keypoints"].double().numpy())["mpjpe_mm"]
        rows.append({"yaml": Path(path).name, "cams": int(n), "stored": stored, "now": now,
                     "same": stored == now, "diff": now - stored})
    return rows


def main():
    torch.set_num_threads(1)
    out = []
    for item in sys.argv[1:]:
        path, _, template = item.partition("=")
        out += check(path, template)
    yaml.safe_dump(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
