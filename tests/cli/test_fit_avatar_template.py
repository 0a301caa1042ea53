"""fit-avatar on a template it was never tuned on (the procedural hexapod of tests/data/hexapod),
through the installed command: the user's vertex and face order in the avatar and the .glb,
the keypoint-map schema (nested 'keypoints:', {joint: NAME}, vertex sets), --symmetry, every bone
its own scale, and one-line errors naming every wrong map entry (issue 34, items 1, 3, 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

HEX = Path(__file__).resolve().parents[1] / "data" / "hexapod"
SMALL = "--frames 4 --rig ring:6 --crop 32"
SHAPE = "--n-keyframes 2 --steps 20,30,30,10 --threads 1"


def test_hexapod_avatar_and_glb_keep_the_input_vertex_and_face_order(sh, tmp_path):
    glb, kp, sym = HEX / "hexapod.glb", HEX / "hexapod_keypoints.yaml", HEX / "hexapod_symmetry.yaml"
    script = f"""
    set -e
    cortexkit fit-avatar synth {glb} --keypoints {kp} --symmetry {sym} {SMALL} -o views.st
    cortexkit fit-avatar shape {glb} views.st --keypoints {kp} --symmetry {sym} {SHAPE} -v -o avatar.st 2> shape.log
    cortexkit fit-avatar track avatar.st views.st --steps 20 --window 4 --overlap 1 --threads 1 -v \
      -o poses.st 2> track.log
    cortexkit fit-avatar export avatar.st poses.st -o fitted.glb --obj-dir frames/
    cortexkit fit-avatar shape avatar.st views.st --n-keyframes 1 --steps 1,1,1,1 --threads 1 -v -o again.st 2> again.log
    """
    proc = sh(script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from cortexkit.formats.artifact import read_artifact
    from cortexkit.formats.gltf import read_gltf

    source = read_gltf(glb)
    back = read_gltf(tmp_path / "fitted.glb")
    art = read_artifact(tmp_path / "avatar.st", framework="np")
    rest = art.tensors["mesh.vertices"]                     # mm, the input's vertex order
    assert rest.shape == source.vertices.shape
    np.testing.assert_array_equal(back.faces, source.faces)  # same faces, same order
    np.testing.assert_allclose(back.vertices * 1000.0, rest, atol=1e-2)
    # vertex i of the result is vertex i of the input: offsets are a few per cent of the body,
    # far below the distance to any other vertex position of the input
    scale = float(art.tensors["shape.scale"][0])
    moved = np.linalg.norm(rest / scale - source.vertices * 1000.0, axis=1)
    assert np.median(moved) < 3.0, np.median(moved)          # mm, body ~300 mm
    np.testing.assert_allclose(back.weights, source.weights, atol=1e-6)
    obj = (tmp_path / "frames" / "frame00000.obj").read_text().splitlines()
    assert sum(line.startswith("v ") for line in obj) == len(source.vertices)
    assert [line for line in obj if line.startswith("f ")][0] == "f %d %d %d" % tuple(source.faces[0] + 1)
    # the symmetry file pairs 9 of the 12 leg bones (not the feet): 35 bones, 26 scales
    meta = art.meta_json("cortexkit.avatar")
    # every stage and iteration loop reports: -v per-step figures, a stop record per stage
    log = (tmp_path / "shape.log").read_text()
    for stage in ("global", "pose", "bones", "mesh"):
        assert f"shape {stage} step" in log and f"shape {stage}: stopped after" in log, log
    stops = art.meta_json("cortexkit.stopped")
    assert [s["stage"] for s in stops] == ["shape global", "shape pose", "shape bones", "shape mesh"]
    assert stops[-1]["ran"] == stops[-1]["planned"] == 10 and stops[-1]["reason"] == "completed"
    track_log = (tmp_path / "track.log").read_text()
    assert "track window 1" in track_log and "track: stopped after 4 of 4 frames" in track_log
    assert read_artifact(tmp_path / "poses.st", framework="np").meta_json("cortexkit.stopped")[-1]["stage"] == "track"
    assert len(meta["group_names"]) == 26 and "neck1" in meta["group_names"] and "abdomen1" in meta["group_names"]
    # --keypoint-offsets auto (the default): the map has vertex sets (eyes, back), so markers at the chosen
    # weight, stored resolved in the config with why; resolved the same from an avatar read as the template
    from cortexkit.tools.avatar.markers import MARKERS_AUTO_WEIGHT

    why = f"auto -> {MARKERS_AUTO_WEIGHT:g}: 3 of 21 keypoints are vertex sets"
    for name, text in (("avatar.st", log), ("again.st", (tmp_path / "again.log").read_text())):
        again = read_artifact(tmp_path / name, framework="np")
        assert again.config["keypoint-offsets"] == MARKERS_AUTO_WEIGHT > 0 and "shape.markers" in again.tensors
        assert again.meta_json("cortexkit.why")["keypoint-offsets"].startswith(why)
        assert f"keypoint offsets: {why}" in text


def test_wrong_keypoint_map_and_symmetry_entries_are_named_in_one_line(cli, tmp_path, one_line_error):
    glb = HEX / "hexapod.glb"
    bad = tmp_path / "map.yaml"
    bad.write_text("template: hexapod.glb\nkeypoints:\n  nose: {joint: snout}\n  knee: tibia1_L\n"
                   "  eye: {vertices: [100000]}\n")
    out = tmp_path / "v.st"
    p = cli("fit-avatar", "synth", glb, "--keypoints", bad, *SMALL.split(), "-o", out)
    one_line_error(p, "fit-avatar synth", "'nose' names an unknown joint 'snout'", "'eye': vertex index 100000")
    assert "knee" not in p.stderr and not out.exists()
    sym = tmp_path / "sym.yaml"
    sym.write_text("axis: q\njoint_pairs: [[coxa1_L, coxa9_R]]\n")
    p = cli("fit-avatar", "synth", glb, "--symmetry", sym, *SMALL.split(), "-o", out)
    one_line_error(p, "fit-avatar synth", "axis 'q'", "unknown joint 'coxa9_R'")
    assert not out.exists()


def test_keypoint_offsets_absorb_a_displaced_keypoint_vertex_set(sh, cli, tmp_path):
    """A hidden individual whose eye keypoint sits on another vertex 13 mm from the template's eye
    set: shape's per-keypoint markers (--keypoint-offsets 100; 1000 took only ~30 % of it) absorb it, tracking the eye
    closer to the truth than the same fit with --keypoint-offsets off; the marker is saved as
    shape.markers (K, 3) mm, an avatar without it (off, or older) still tracks; --print-config shows
    the weight (default auto, resolved from the keypoint map: benchmarks/fit_avatar RESULTS 7)."""
    import torch
    import yaml

    from cortexkit.formats.artifact import read_artifact
    from cortexkit.tools.avatar.io import avatar_from_artifact, poses_from_artifact, views_from_artifact
    from cortexkit.tools.avatar.model import forward

    assert yaml.safe_load(cli("fit-avatar", "shape", "--print-config").stdout)["keypoint-offsets"] == "auto"
    shown = yaml.safe_load(cli("fit-avatar", "shape", "--keypoint-offsets", "off", "--print-config").stdout)
    assert shown["keypoint-offsets"] == 0.0
    shown = yaml.safe_load(cli("fit-avatar", "shape", "--keypoint-offsets", "1000", "--print-config").stdout)
    assert shown["keypoint-offsets"] == 1000.0
    glb, kp = HEX / "hexapod.glb", HEX / "hexapod_keypoints.yaml"
    spec = yaml.safe_load(kp.read_text())
    spec["keypoints"]["eye_left"] = {"vertices": [192]}          # 13.1 mm from vertices 193-195, on the head
    (tmp_path / "moved.yaml").write_text(yaml.safe_dump(spec))
    fit = "--n-keyframes 3 --steps 40,60,60,40 --threads 1"
    proc = sh(f"""
    set -e
    cortexkit fit-avatar synth {glb} --keypoints moved.yaml --frames 6 --rig ring:8 --no-masks -o views.st
    cortexkit fit-avatar shape {glb} views.st --keypoints {kp} {fit} --keypoint-offsets 100 -o on.st
    cortexkit fit-avatar shape {glb} views.st --keypoints {kp} {fit} --keypoint-offsets off -o off.st
    for a in on off; do
      cortexkit fit-avatar track $a.st views.st --steps 60 --window 6 --baseline none --threads 1 -o poses_$a.st
    done
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    views = views_from_artifact(read_artifact(tmp_path / "views.st"))
    names = views["keypoint_names"]
    eye = names.index("eye_left")
    errors, markers = {}, {}
    for a in ("on", "off"):
        art = read_artifact(tmp_path / f"{a}.st")
        assert ("shape.markers" in art.tensors) == (a == "on")
        tpl, shape, _ = avatar_from_artifact(art)
        pose = poses_from_artifact(read_artifact(tmp_path / f"poses_{a}.st"))
        with torch.no_grad():
            _, _, kps = forward(tpl.select_keypoints(names), shape, pose)
        errors[a] = (kps - views["truth"]["keypoints"]).norm(dim=-1).mean(0)       # (K,) mm
        if shape.markers is not None:
            markers[a] = shape.markers[tpl.keypoint_names.index("eye_left")]
    assert float(errors["on"][eye]) < 0.7 * float(errors["off"][eye]), (errors["on"][eye], errors["off"][eye])
    assert float(markers["on"].norm()) > 5.0, markers["on"]     # mm: most of the 13 mm taken by the marker
    rest = [k for k in range(len(names)) if k != eye]
    assert float(errors["on"][rest].mean()) < 1.1 * float(errors["off"][rest].mean())   # the others no worse


def test_keypoint_offsets_auto_follows_the_keypoint_map(cli, tmp_path):
    """shape --keypoint-offsets auto (the default): the chosen weight when the keypoint map has a
    vertex-set keypoint (the hexapod's eyes and back), off when every keypoint is a joint (a
    joints-only map, or no map: the template's joints); --print-config shows the resolved weight
    and why; an explicit weight is kept; without a template it stays 'auto' (benchmarks/fit_avatar
    RESULTS section 7)."""
    import yaml

    from cortexkit.tools.avatar.markers import MARKERS_AUTO_WEIGHT

    glb, kp = HEX / "hexapod.glb", HEX / "hexapod_keypoints.yaml"
    proc = cli("fit-avatar", "shape", glb, "--keypoints", kp, "--print-config")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert MARKERS_AUTO_WEIGHT > 0 and yaml.safe_load(out)["keypoint-offsets"] == MARKERS_AUTO_WEIGHT
    assert (f"# keypoint-offsets: auto -> {MARKERS_AUTO_WEIGHT:g}: 3 of 21 keypoints are vertex sets "
            "(eye_left, eye_right, back)") in out
    spec = yaml.safe_load(kp.read_text())["keypoints"]
    joints = {k: v for k, v in spec.items() if not (isinstance(v, dict) and "vertices" in v)}
    (tmp_path / "joints.yaml").write_text(yaml.safe_dump({"keypoints": joints}))
    out = cli("fit-avatar", "shape", glb, "--keypoints", tmp_path / "joints.yaml", "--print-config").stdout.decode()
    assert yaml.safe_load(out)["keypoint-offsets"] == 0.0
    assert "# keypoint-offsets: auto -> off: all 18 keypoints are joints" in out
    out = cli("fit-avatar", "shape", glb, "--print-config").stdout.decode()
    assert yaml.safe_load(out)["keypoint-offsets"] == 0.0 and "the template's joints" in out
    out = cli("fit-avatar", "shape", glb, "--keypoints", kp, "--keypoint-offsets", "5", "--print-config").stdout
    assert yaml.safe_load(out)["keypoint-offsets"] == 5.0 and b"# keypoint-offsets" not in out
    assert yaml.safe_load(cli("fit-avatar", "shape", "--print-config").stdout)["keypoint-offsets"] == "auto"


def test_shape_stores_the_temporal_terms_extremity_and_twist_marks(sh, tmp_path):
    """shape --extremities (RESULTS section 22), through the installed command on the frog (built by
    the shared builder): the default limb-ends+twist stores x100 on the hands and feet
    (template.extremity) and the unit bone axes of the wrists and ankles (template.extremity_twist,
    the bone to the hand / foot in the joint's rest frame), records the rule in the avatar's config,
    and track runs from it; --extremities names stores the name rule's marks and no twist axes."""
    import sys

    import yaml

    builder = Path(__file__).resolve().parents[2] / "benchmarks" / "fit_avatar" / "make_template.py"
    glb, kp, sym = "frog/frog.glb", "frog/frog_keypoints.yaml", "frog/frog_symmetry.yaml"
    script = f"""
    set -e
    {sys.executable} {builder} --plan frog {glb}
    cortexkit fit-avatar synth {glb} --keypoints {kp} --symmetry {sym} {SMALL} --no-masks -o views.st
    cortexkit fit-avatar shape {glb} views.st --keypoints {kp} --symmetry {sym} --n-keyframes 1 --steps 1,1,1,1 --threads 1 -o avatar.st
    cortexkit fit-avatar shape {glb} views.st --keypoints {kp} --symmetry {sym} --n-keyframes 1 --steps 1,1,1,1 --threads 1 --extremities names -o names.st
    cortexkit fit-avatar track avatar.st views.st --steps 2 --window 4 --overlap 1 --threads 1 --baseline none -o poses.st
    cortexkit fit-avatar shape {glb} --print-config > config.yaml
    """
    proc = sh(script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from cortexkit.formats.artifact import read_artifact
    from cortexkit.formats.gltf import read_gltf

    assert yaml.safe_load((tmp_path / "config.yaml").read_text())["extremities"] == "limb-ends+twist"
    mesh = read_gltf(tmp_path / glb)
    names = list(mesh.joint_names)
    art = read_artifact(tmp_path / "avatar.st", framework="np")
    assert art.config["extremities"] == "limb-ends+twist"
    free = art.tensors["template.free"].astype(bool)
    marked = {n for n, m, f in zip(names, art.tensors["template.extremity"], free) if m and f}
    assert marked == {f"{j}_{s}" for j in ("hand", "foot") for s in "LR"}
    axes = art.tensors["template.extremity_twist"]
    assert {n for n, a in zip(names, np.abs(axes).sum(1)) if a > 0} == {f"{j}_{s}" for j in ("wrist", "ankle") for s in "LR"}
    joints, frames = art.tensors["template.joints"], art.tensors["template.frames"]
    for j, c in (("wrist_L", "hand_L"), ("ankle_R", "foot_R")):
        bone = joints[names.index(c)] - joints[names.index(j)]
        np.testing.assert_allclose(axes[names.index(j)], frames[names.index(j)].T @ (bone / np.linalg.norm(bone)), atol=1e-5)
    old = read_artifact(tmp_path / "names.st", framework="np")
    assert "template.extremity_twist" not in old.tensors and old.config["extremities"] == "names"
    assert {n for n, m, f in zip(names, old.tensors["template.extremity"], free) if m and f} == \
        {f"{j}_{s}" for j in ("hand", "foot", "wrist", "ankle") for s in "LR"}
    assert read_artifact(tmp_path / "poses.st", framework="np").tensors["rotations"].shape[0] == 4


def test_template_builder_keeps_the_hexapod_bytes_and_builds_the_bird(sh, cli, tmp_path):
    """The shared builder (benchmarks/fit_avatar/make_template.py) regenerates the stored hexapod
    byte for byte, and builds the held-out bird (a third body plan): 30 joints, a 'WalkFlap' clip,
    22 keypoints of which 9 vertex sets, 19 bone scales with its symmetry file; shape's
    --keypoint-offsets auto gives it markers at the chosen weight."""
    import sys

    import yaml

    from cortexkit.formats.gltf import read_gltf
    from cortexkit.tools.avatar.markers import MARKERS_AUTO_WEIGHT
    from cortexkit.tools.avatar.model import template_from_mesh

    builder = Path(__file__).resolve().parents[2] / "benchmarks" / "fit_avatar" / "make_template.py"
    proc = sh(f"set -e; {sys.executable} {builder} --plan hexapod hex/hexapod.glb; "
              f"{sys.executable} {builder} --plan bird bird/bird.glb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("hexapod.glb", "hexapod_keypoints.yaml", "hexapod_symmetry.yaml"):
        assert (tmp_path / "hex" / name).read_bytes() == (HEX / name).read_bytes(), name
    bird = tmp_path / "bird"
    mesh = read_gltf(bird / "bird.glb")
    assert len(mesh.joint_names) == 30 and list(mesh.animations) == ["WalkFlap"]
    tpl = template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                             mesh.rest_world, unit_mm=1000.0,
                             keypoints=yaml.safe_load((bird / "bird_keypoints.yaml").read_text()),
                             symmetry=yaml.safe_load((bird / "bird_symmetry.yaml").read_text()))
    assert len(tpl.keypoint_names) == 22 and tpl.n_groups == 19
    out = cli("fit-avatar", "shape", bird / "bird.glb", "--keypoints", bird / "bird_keypoints.yaml",
              "--print-config").stdout.decode()
    assert yaml.safe_load(out)["keypoint-offsets"] == MARKERS_AUTO_WEIGHT
    assert f"# keypoint-offsets: auto -> {MARKERS_AUTO_WEIGHT:g}: 9 of 22 keypoints are vertex sets" in out


@pytest.mark.slow
def test_shape_default_sigma_mesh_auto_and_mesh_anneal_store_the_blurs_they_resolved_to(sh, cli, tmp_path, one_line_error):
    """The default --sigma is mesh-auto (benchmarks/fit_avatar RESULTS section 16): --print-config says so,
    and a default run keeps 0.1 in the bones stage and calibrates the mesh stage's blur on the keypoint
    fit (below 0.05 on the hexapod's thin legs at 48 px); its avatar stores the resolved BONES,MESH.
    --sigma mesh-anneal anneals the mesh stage from 0.1 to the same blur and stores BONES..MESH, and
    giving that back as --sigma repeats the fit bit for bit without calibrating. A malformed pair is a
    one-line usage error."""
    import re

    import numpy as np
    import yaml

    from cortexkit.formats.artifact import read_artifact

    glb, kp, sym = HEX / "hexapod.glb", HEX / "hexapod_keypoints.yaml", HEX / "hexapod_symmetry.yaml"
    common = f"--keypoints {kp} --symmetry {sym} --n-keyframes 2 --steps 20,30,2,3 --threads 1 --seed 0"
    script = f"""
    set -e
    cortexkit fit-avatar synth {glb} --keypoints {kp} --symmetry {sym} --frames 4 --rig ring:6 --crop 48 -o views.st
    cortexkit fit-avatar shape {glb} views.st {common} --sigma mesh-anneal -o anneal.st
    cortexkit fit-avatar shape {glb} views.st {common} -o flat.st
    """
    proc = sh(script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"shape mesh: blur annealed 0.1 -> [0-9.e-]+ crop px\^2 \(geometric over 3 steps\)", proc.stderr)
    anneal = read_artifact(tmp_path / "anneal.st", framework="np")
    spec = anneal.config["sigma"]
    bones, mesh = (float(x) for x in spec.split(".."))
    assert bones == 0.1 and mesh < 0.05, spec
    assert anneal.meta_json("cortexkit.why")["sigma"].startswith(f"mesh-anneal -> {spec}: rendered / mask area")
    flat = read_artifact(tmp_path / "flat.st", framework="np")
    assert flat.config["sigma"] == f"0.1,{mesh!r}", flat.config["sigma"]
    assert flat.meta_json("cortexkit.why")["sigma"].startswith(f"mesh-auto -> 0.1,{mesh!r}: rendered / mask area")
    assert yaml.safe_load(cli("fit-avatar", "shape", glb, "--print-config").stdout)["sigma"] == "mesh-auto"
    again = tmp_path / "again.st"
    p = cli("fit-avatar", "shape", glb, tmp_path / "views.st", *common.split(), "--sigma", spec, "-o", again)
    assert p.returncode == 0 and "rasteriser blur sigma" not in p.stderr, p.stderr
    repeat = read_artifact(again, framework="np")
    for name in anneal.tensors:
        assert np.array_equal(anneal.tensors[name], repeat.tensors[name]), name
    assert repeat.config["sigma"] == spec
    for bad in ("0.1..0", "0.1,0.2,0.3", "mesh"):
        out = tmp_path / "bad.st"
        one_line_error(cli("fit-avatar", "shape", glb, tmp_path / "views.st", "--sigma", bad, "-o", out),
                       "fit-avatar shape", "--sigma", code=2)
        assert not out.exists()


@pytest.mark.slow
def test_shape_sigma_auto_calibrates_the_blur_on_thin_limbs(sh, cli, tmp_path, one_line_error):
    """shape --sigma auto (not the default, benchmarks/fit_avatar RESULTS section 14): the blur is
    the largest <= 0.1 at which the body fitted to the keypoints renders within 3 % of the masks'
    area; on the hexapod's 1-2 px legs at 48 px crops that is well below 0.1 (0.1 renders the body
    ~23 % too large), and the run says which blur it used. The default is mesh-auto (section 16);
    a blur <= 0 is a one-line error."""
    import re

    import yaml

    glb, kp, sym = HEX / "hexapod.glb", HEX / "hexapod_keypoints.yaml", HEX / "hexapod_symmetry.yaml"
    script = f"""
    set -e
    cortexkit fit-avatar synth {glb} --keypoints {kp} --symmetry {sym} --frames 4 --rig ring:6 --crop 48 -o views.st
    cortexkit fit-avatar shape {glb} views.st --keypoints {kp} --symmetry {sym} --n-keyframes 2 --steps 20,30,1,0 \\
      --threads 1 --sigma auto -o avatar.st
    """
    proc = sh(script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = re.search(r"rasteriser blur sigma ([0-9.e-]+) crop px\^2 \(rendered / mask area ([0-9.]+); ([0-9.]+) at 0.1\)",
                      proc.stderr)
    assert found, proc.stderr
    sigma, ratio, top = (float(x) for x in found.groups())
    assert sigma < 0.05 and ratio <= 1.03 < 1.15 < top, found.group(0)
    from cortexkit.formats.artifact import read_artifact

    avatar = read_artifact(tmp_path / "avatar.st", framework="np")   # the blur it used, to re-run with --sigma
    assert f"{avatar.config['sigma']:.4g}" == f"{sigma:.4g}" and avatar.config["sigma"] < 0.05
    assert avatar.meta_json("cortexkit.why")["sigma"].startswith(f"auto -> {sigma:.4g}: rendered / mask area")
    assert yaml.safe_load(cli("fit-avatar", "shape", glb, "--print-config").stdout)["sigma"] == "mesh-auto"
    out = tmp_path / "bad.st"
    p = cli("fit-avatar", "shape", glb, tmp_path / "views.st", "--sigma", "0", "-o", out)
    one_line_error(p, "fit-avatar shape", "--sigma", code=2)
    assert not out.exists()
