"""Signed bone-length errors of the hexapod avatar at 4 cameras (30 frames, 6 keyframes, seed 0):
keypoint-only, masks (default), masks in the mesh stage only. RESULTS section 5. Prints lines."""
import torch
import yaml
from pathlib import Path
from cortexkit.formats.gltf import read_gltf
from cortexkit.tools.avatar.fit import FitConfig, Observations, fit_avatar_shape
from blur_before49 import SIGMA_BEFORE_49  # noqa: E402  (sigma 0.1 in both stages unless a variant says otherwise)
from cortexkit.tools.avatar.model import template_from_mesh
from cortexkit.tools.avatar.synth import SynthConfig, make_views
torch.set_num_threads(1)
HEX = Path(__file__).resolve().parents[2] / 'tests' / 'data' / 'hexapod'
mesh = read_gltf(HEX / "hexapod.glb")
kmap = yaml.safe_load((HEX / "hexapod_keypoints.yaml").read_text())
sym = yaml.safe_load((HEX / "hexapod_symmetry.yaml").read_text())
tpl = template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                         mesh.rest_world, unit_mm=1000.0, keypoints=kmap, symmetry=sym)
world = mesh.animations["Walk"]["world"][:30]
cams, syn = make_views(tpl, world, 1000.0, "ring:4", None, SynthConfig(noise=2.0, dropout=0.2, outliers=0.03, crop=48, masks=True, seed=0))
obs = Observations(cams, syn.keypoints, syn.confidence, tpl.keypoint_names, syn.masks, syn.crops)
t = syn.truth
for name, over in [("kp", {"silhouettes": False}), ("masks", {}), ("masks_sil_in_mesh_only", {"bones_silhouettes": False})]:
    sh = fit_avatar_shape(tpl, obs, FitConfig(**{**SIGMA_BEFORE_49, **over}), 6).shape
    ratio = (sh.bone_scales * sh.scale / (t["bone_scales"] * t["scale"].reshape(()))).numpy()
    print(name, "scale ratio %.4f" % float(sh.scale / t["scale"].reshape(())), "bone*scale ratio mean %.4f" % ratio.mean(),
          "signed:", " ".join("%+.2f" % (r - 1) for r in ratio), flush=True)
