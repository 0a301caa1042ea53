"""cortexkit fit-avatar through the installed command: the man page's pipelines (shrunk: 4 frames,
6 cameras, 32 px crops, short schedules), real SLEAP data, export read-back, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

FOX = "avatar/fox/glTF-Binary/Fox.glb"
MOUSE = "avatar/sleap_anipose_minimal"
SMALL = "--frames 4 --rig ring:6 --crop 32"
SHAPE = "--n-keyframes 2 --steps 20,30,30,5 --threads 1"
TRACK = "--steps 30 --window 4 --overlap 1 --threads 1"


@pytest.fixture
def fox(shared_data):
    return shared_data / FOX


def in_process(*args: str) -> str:
    """`cortexkit ARGS` run in this process, so that a monkeypatch reaches the fit; returns its stdout with
    whitespace folded (a usage error or failure fails the test)."""
    from click.testing import CliRunner

    from cortexkit.cli.main import main

    with CliRunner().isolation() as streams:
        try:
            main(list(args))
        except SystemExit as exit_:
            assert exit_.code in (0, None), (args, exit_.code)
        return " ".join(streams[0].getvalue().decode().split())


def test_man_page_pipeline_synth_triangulate_shape_track_evaluate_export(sh, fox, tmp_path):
    script = f"""
    set -e
    cortexkit fit-avatar synth {fox} --template-units cm --clip Walk {SMALL} -o views.st
    cortexkit fit-avatar triangulate views.st -o points.st
    cortexkit fit-avatar evaluate views.st --points points.st > tri.yaml
    cortexkit fit-avatar shape {fox} views.st --template-units cm {SHAPE} -o avatar.st
    cortexkit fit-avatar track avatar.st views.st --cameras 6 {TRACK} --plot overlay.png -o poses.st
    cortexkit fit-avatar evaluate views.st --avatar avatar.st --poses poses.st > fit.yaml
    cortexkit fit-avatar export avatar.st poses.st -o fitted.glb --obj-dir frames/
    """
    proc = sh(script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import yaml

    tri = yaml.safe_load((tmp_path / "tri.yaml").read_text())["triangulation"]
    fit = yaml.safe_load((tmp_path / "fit.yaml").read_text())["fit"]
    assert tri["coverage"] > 0.9 and tri["mpjpe_mm"] < 30
    assert fit["coverage"] == 1.0 and fit["mpjpe_mm"] < 60 and 0 <= fit["iou"] <= 1
    assert (tmp_path / "overlay.png").read_bytes()[:4] == b"\x89PNG"
    assert len(list((tmp_path / "frames").glob("*.obj"))) == 4
    from cortexkit.formats.gltf import read_gltf

    back = read_gltf(tmp_path / "fitted.glb")
    assert back.animations["fit"]["world"].shape[1] == len(back.joint_names) == 24
    # the export read back recovers the fitted joint positions (glTF metres vs the model's mm)
    import torch

    from cortexkit.formats.artifact import read_artifact
    from cortexkit.tools.avatar.io import avatar_from_artifact, poses_from_artifact
    from cortexkit.tools.avatar.model import forward

    tpl, shape, _ = avatar_from_artifact(read_artifact(tmp_path / "avatar.st"))
    with torch.no_grad():
        _, joints, _ = forward(tpl, shape, poses_from_artifact(read_artifact(tmp_path / "poses.st")),
                               with_vertices=False)
    clip = back.animations["fit"]["world"][:len(joints), :, :3, 3] * 1000.0
    assert len(clip) == 4
    np.testing.assert_allclose(clip, joints.double().numpy(), atol=0.05)


def test_pipeline_through_stdin_and_into_a_second_tool(sh, fox, tmp_path):
    """synth | triangulate - | cortexkit inspect -, and the table as CSV read back by evaluate."""
    proc = sh(f"cortexkit fit-avatar synth {fox} --template-units cm {SMALL} --no-masks "
              f"| tee views.st | cortexkit fit-avatar triangulate - | cortexkit inspect -", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b"table" in proc.stdout and b"b_Hip_01_x" in proc.stdout
    proc = sh("cortexkit fit-avatar triangulate views.st -o points.csv && "
              "cortexkit fit-avatar evaluate views.st --points points.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "points.csv").read_text().splitlines()[0].split(",")
    assert header[0] == "frame" and "b_Head_05_views" in header
    assert b"mpjpe_mm" in proc.stdout


def test_real_sleap_session_triangulates_with_camera_names_from_files(sh, shared_data, tmp_path):
    d = shared_data / MOUSE
    files = " ".join(str(d / f"minimal_{c}_proofread.analysis.h5") for c in ("back", "mid", "top"))
    proc = sh(f"cortexkit fit-avatar triangulate --calibration {d}/calibration.toml --units mm {files} "
              "| cortexkit convert - points.csv", cwd=tmp_path)  # the man page's pipeline
    assert proc.returncode == 0, proc.stderr
    import csv

    rows = list(csv.DictReader(open(tmp_path / "points.csv")))
    assert len(rows) == 120
    err = np.array([float(r["Nose_error"]) for r in rows])
    views = np.array([int(r["Nose_views"]) for r in rows])
    assert np.isnan(err[views < 2]).all() and np.nanmedian(err) < 10.0


def test_bad_input_one_line_errors_and_no_output(cli, sh, fox, shared_data, tmp_path, one_line_error):
    d = shared_data / MOUSE
    back = d / "minimal_back_proofread.analysis.h5"
    mid = d / "minimal_mid_proofread.analysis.h5"
    out = tmp_path / "out.st"
    cmd = "fit-avatar triangulate"
    p = cli(*cmd.split(), "--calibration", d / "calibration.toml", back, mid, "--camera-names", "back,nope", "-o", out)
    one_line_error(p, cmd, "nope", "not in")
    p = cli(*cmd.split(), "--calibration", d / "calibration.toml", back, "-o", out)
    one_line_error(p, cmd, "at least 2 views")
    views = tmp_path / "views.st"
    assert cli("fit-avatar", "synth", fox, "--template-units", "cm", *SMALL.split(), "--no-masks", "-o", views).returncode == 0
    # unknown keypoint names: a map that lacks the detector's names
    (tmp_path / "map.yaml").write_text("nose: b_Head_05\n")
    p = cli("fit-avatar", "shape", fox, views, "--template-units", "cm", "--keypoints", tmp_path / "map.yaml", "-o", out)
    one_line_error(p, "fit-avatar shape", "not in the template's keypoint map")
    # wrong units: the Fox read as metres is 100x the subject
    p = cli("fit-avatar", "shape", fox, views, "--template-units", "m", *SHAPE.split(), "-o", out)
    one_line_error(p, "fit-avatar shape", "units")
    # NaN: a detection with one coordinate missing
    from cortexkit.formats.artifact import read_artifact, write_artifact

    art = read_artifact(views, framework="np")
    kp = art.tensors["keypoints"].copy()
    kp[0, 0, 0, 0] = np.nan
    kp[0, 0, 0, 1] = 5.0
    bad = tmp_path / "nan.st"
    write_artifact(bad, {**art.tensors, "keypoints": kp}, "avatar-views", metadata={
        k: v for k, v in art.metadata.items() if not k.startswith("cortexkit.kind")
        and k not in ("cortexkit.version", "cortexkit.producer", "cortexkit.config")})
    p = cli(*cmd.split(), bad, "-o", out)
    one_line_error(p, cmd, "NaN detection")
    # a glTF without a skin
    import pygltflib

    plain = tmp_path / "plain.glb"
    pygltflib.GLTF2(asset=pygltflib.Asset(version="2.0"), nodes=[pygltflib.Node(name="n")]).save(str(plain))
    p = cli("fit-avatar", "shape", plain, views, "-o", out)
    one_line_error(p, "fit-avatar shape", "no skin")
    # wrong artifact kind, unwritable output
    p = cli("fit-avatar", "track", views, views, "-o", out)
    one_line_error(p, "fit-avatar track", "expected a 'avatar' artifact")
    p = cli(*cmd.split(), views, "-o", tmp_path / "missing" / "x.st")
    one_line_error(p, cmd, "does not exist")
    assert not out.exists()


def test_texture_and_mask_folders_through_shape_track_export_inspect(sh, cli, fox, tmp_path, one_line_error):
    """synth writes full-size colour renders and mask PNGs; shape --images colours the avatar,
    track --masks reads the mask folder (OpenCV) for the silhouette term; export carries the
    colours as COLOR_0; inspect lists them. A mask folder without a camera is a one-line error."""
    script = f"""
    set -e
    cortexkit fit-avatar synth {fox} --template-units cm --clip Walk {SMALL} --no-masks \\
      --image-dir imgs --mask-dir masks -o views.st
    cortexkit fit-avatar shape {fox} views.st --template-units cm {SHAPE} --images imgs -o avatar.st
    cortexkit fit-avatar track avatar.st views.st {TRACK} --masks masks -o poses.st
    cortexkit fit-avatar track avatar.st views.st {TRACK} -o plain.st
    cortexkit fit-avatar evaluate views.st --avatar avatar.st --poses poses.st > fit.yaml
    cortexkit fit-avatar export avatar.st poses.st -o fitted.glb
    cortexkit inspect avatar.st > inspect.txt
    """
    proc = sh(script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import pygltflib
    import yaml

    from cortexkit.formats.artifact import read_artifact

    fit = yaml.safe_load((tmp_path / "fit.yaml").read_text())["fit"]
    assert fit["color_error"] < 0.8 * fit["color_error_flat"], fit
    sil = read_artifact(tmp_path / "poses.st", framework="np").tensors["silhouette_error"]
    plain = read_artifact(tmp_path / "plain.st", framework="np").tensors["silhouette_error"]
    assert (sil > 0).any() and (plain == 0).all()
    glb = pygltflib.GLTF2().load(str(tmp_path / "fitted.glb"))
    assert glb.meshes[0].primitives[0].attributes.COLOR_0 is not None
    assert "colors" in (tmp_path / "inspect.txt").read_text()
    import shutil

    shutil.rmtree(tmp_path / "masks" / "cam03")
    out = tmp_path / "out.st"
    p = cli("fit-avatar", "track", tmp_path / "avatar.st", tmp_path / "views.st", "--masks", tmp_path / "masks",
            "-o", out)
    one_line_error(p, "fit-avatar track", "cam03")
    assert not out.exists()


def test_dlc_csv_files_with_a_calibration_match_the_views_artifact_and_units_are_checked(
        sh, cli, fox, tmp_path, one_line_error):
    """The synthetic views written as users have them (one DeepLabCut CSV per camera, an Anipose
    calibration.toml in metres without a unit key) triangulate to the same 3D points as the
    views artifact; stating the wrong unit stops shape with a one-line units error (the subject
    comes out 1000x smaller than the template), and a unit key that disagrees stops at once."""
    import pandas as pd

    from cortexkit.formats.artifact import read_artifact
    from cortexkit.formats.calibration import write_calibration

    views = tmp_path / "views.st"
    assert cli("fit-avatar", "synth", fox, "--template-units", "cm", *SMALL.split(), "--no-masks",
               "-o", views).returncode == 0
    art = read_artifact(views, framework="np")
    t, names = art.tensors, art.meta_json("cortexkit.camera_names")
    kp_names = art.meta_json("cortexkit.keypoint_names")
    cal = {"names": names, "K": t["cameras.K"], "dist": t["cameras.dist"], "rvec": t["cameras.rvec"],
           "tvec": t["cameras.tvec"], "size": t["cameras.size"]}
    text = write_calibration(cal, units="m").decode()
    (tmp_path / "with_unit.toml").write_text(text)
    (tmp_path / "cal.toml").write_text(text.split("[metadata]")[0])   # as aniposelib writes it
    files = []
    for c, name in enumerate(names):
        cols = pd.MultiIndex.from_tuples([("sim", k, a) for k in kp_names for a in ("x", "y", "likelihood")],
                                         names=["scorer", "bodyparts", "coords"])
        xy, conf = t["keypoints"][:, c].astype(float), t["confidence"][:, c].astype(float)
        data = np.concatenate([xy, conf[..., None]], -1).reshape(len(xy), -1)
        files.append(tmp_path / f"{name}_DLC.csv")
        pd.DataFrame(data, columns=cols).to_csv(files[-1])
    csvs = " ".join(str(f) for f in files)
    proc = sh(f"cortexkit fit-avatar triangulate views.st -o a.csv && cortexkit fit-avatar triangulate "
              f"--calibration cal.toml --units m {csvs} -o b.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    a, b = (pd.read_csv(tmp_path / f) for f in ("a.csv", "b.csv"))
    assert list(a.columns) == list(b.columns) and a["b_Hip_01_x"].notna().mean() > 0.9
    np.testing.assert_allclose(b.to_numpy(float), a.to_numpy(float), atol=1e-2, equal_nan=True)  # mm
    out = tmp_path / "avatar.st"
    p = cli("fit-avatar", "shape", fox, *files, "--template-units", "cm", "--calibration", tmp_path / "cal.toml",
            "--units", "mm", *SHAPE.split(), "-o", out)
    one_line_error(p, "fit-avatar shape", "units")
    p = cli("fit-avatar", "triangulate", *files, "--calibration", tmp_path / "with_unit.toml", "--units", "mm",
            "-o", out)
    one_line_error(p, "fit-avatar triangulate", 'units = "m"', "--units m")
    assert not out.exists()


def test_plot_and_export_targets_are_checked_before_any_input_is_read(cli, one_line_error, tmp_path):
    """--plot of track and -o of export are base outputs (issue 16): a folder that does not exist
    or a folder as the target fails first, naming the option, even though the inputs are missing."""
    nodir = tmp_path / "nodir"
    p = cli("fit-avatar", "track", tmp_path / "a.st", tmp_path / "v.st", "--plot", nodir / "p.png",
            "-o", tmp_path / "poses.st")
    one_line_error(p, "fit-avatar track", f"--plot {nodir / 'p.png'}", "does not exist")
    p = cli("fit-avatar", "export", tmp_path / "a.st", tmp_path / "p.st", "-o", nodir / "x.glb")
    one_line_error(p, "fit-avatar export", f"-o {nodir / 'x.glb'}", "does not exist")
    p = cli("fit-avatar", "export", tmp_path / "a.st", tmp_path / "p.st", "-o", tmp_path)
    one_line_error(p, "fit-avatar export", "is a folder")
    assert list(tmp_path.iterdir()) == []


def test_damaged_views_avatar_and_poses_are_refused_on_read(cli, fox, tmp_path, one_line_error):
    """Issue 16's schema on read for the three fit-avatar kinds: a NaN rotation, an avatar whose faces
    point past its vertices, names that disagree with the tensors, a negative confidence: one line
    naming the file and the tensor, before any work and with no output."""
    import torch

    from cortexkit.formats.artifact import read_artifact, write_artifact
    from cortexkit.formats.gltf import read_gltf
    from cortexkit.tools.avatar.io import avatar_to_tensors, poses_to_tensors
    from cortexkit.tools.avatar.model import Pose, Shape, template_from_mesh

    mesh = read_gltf(fox)
    tpl = template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names, mesh.parents,
                             mesh.rest_world, unit_mm=10.0)
    tensors, meta = avatar_to_tensors(tpl, Shape.neutral(tpl))
    pose = Pose.zeros(3, tpl)
    p_tensors, p_meta = poses_to_tensors(pose, torch.zeros(3), torch.zeros(3), torch.ones(3, 2, dtype=torch.bool),
                                         0.0, tpl.joint_names)

    def save(name, kind, t, m):
        write_artifact(tmp_path / name, t, kind, metadata=m)
        return tmp_path / name

    good_a, good_p = save("a.st", "avatar", tensors, meta), save("p.st", "avatar-poses", p_tensors, p_meta)
    out = tmp_path / "x.glb"
    assert cli("fit-avatar", "export", good_a, good_p, "-o", out).returncode == 0
    out.unlink()
    faces = tensors["template.faces"].clone()
    faces[0, 0] = len(tensors["template.vertices"])
    rot = p_tensors["rotations"].clone()
    rot[1, 2, 0] = float("nan")
    for avatar, poses, fragment in (
            (save("f.st", "avatar", {**tensors, "template.faces": faces}, meta), good_p, "'template.faces'"),
            (save("m.st", "avatar", tensors, {"cortexkit.avatar": {**meta["cortexkit.avatar"], "joint_names": ["a"]}}),
             good_p, "joint_names"),
            (good_a, save("r.st", "avatar-poses", {**p_tensors, "rotations": rot}, p_meta), "'rotations'"),
            (good_a, save("n.st", "avatar-poses", p_tensors, {**p_meta, "cortexkit.joint_names": ["a", "b"]}),
             "names 2 joints")):
        p = cli("fit-avatar", "export", avatar, poses, "-o", out)
        one_line_error(p, "fit-avatar export", fragment)
        assert not out.exists()
    views = tmp_path / "views.st"
    assert cli("fit-avatar", "synth", fox, "--template-units", "cm", *SMALL.split(), "--no-masks",
               "-o", views).returncode == 0
    art = read_artifact(views, framework="np")
    keep = {k: v for k, v in art.metadata.items() if k.startswith("cortexkit.") and k.split(".")[1] in
            ("camera_names", "keypoint_names", "fps")}
    conf = art.tensors["confidence"].copy()
    conf[0, 0, 0] = -1.0
    for t, m, fragment in (({**art.tensors, "confidence": conf}, keep, "'confidence'"),
                           (art.tensors, {**keep, "cortexkit.camera_names": '["a"]'}, "names 1 cameras")):
        bad = tmp_path / "bad_views.st"
        write_artifact(bad, t, "avatar-views", metadata=m)
        p = cli("fit-avatar", "triangulate", bad, "-o", tmp_path / "pts.st")
        one_line_error(p, "fit-avatar triangulate", str(bad), fragment)
        assert not (tmp_path / "pts.st").exists()


def test_track_default_steps_are_the_measured_240_in_print_config_and_the_poses(cli, sh, fox, tmp_path):
    """track's Adam steps per window default to 240 (chosen on the Fox, benchmarks/fit_avatar
    RESULTS section 4: mean MPJPE over Walk/Run/Survey x 16/6 cameras 3.28 mm at 240 vs 3.90 at 120 and 3.29 at 360,
    held out on the hexapod): --print-config shows it, and a track without --steps stores it in the
    poses' config and ran it (the track stage's stop record)."""
    import yaml

    from cortexkit.formats.artifact import read_artifact

    shown = yaml.safe_load(cli("fit-avatar", "track", "--print-config").stdout)
    assert shown["steps"] == 240
    proc = sh(f"""
    set -e
    cortexkit fit-avatar synth {fox} --template-units cm --clip Walk --frames 3 --rig ring:4 --crop 32 --no-masks -o views.st
    cortexkit fit-avatar shape {fox} views.st --template-units cm --n-keyframes 1 --steps 5,5,5,0 --threads 1 -o avatar.st
    cortexkit fit-avatar track avatar.st views.st --baseline none --threads 1 -o poses.st
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    poses = read_artifact(tmp_path / "poses.st")
    assert poses.config["steps"] == 240
    stops = [s for s in poses.meta_json("cortexkit.stopped") if s["stage"] == "track"]
    assert len(stops) == 1 and stops[0]["steps_per_window"] == 240


def test_shape_sigma_default_is_fitconfig_default_and_every_mode_resolves_as_before():
    """One source for the blur's default (NOTES av18): the shape command's --sigma default (mesh-auto) changes
    no FitConfig field, so a Python caller of FitConfig() / fit_avatar_shape gets what the command gets: the
    bones stage at 0.1 and the mesh stage at the blur calibrated to 3 % (RESULTS section 16). Every other
    --sigma value resolves to the same fields it did before the default moved into FitConfig (2026-12-07),
    so no command's output changed: auto calibrates both stages, mesh-anneal anneals the mesh stage, and a
    fixed blur (FLOAT, BONES,MESH, BONES..MESH) calibrates nothing."""
    from cortexkit.cli.fit_avatar import SigmaSpec, shape, sigma_options
    from cortexkit.tools.avatar.api import fit_config
    from cortexkit.tools.avatar.fit import FitConfig

    default = next(p.default for p in shape.params if p.name == "sigma")
    assert default == "mesh-auto" and fit_config(**sigma_options(default)) == FitConfig()
    blur = ("sigma", "sigma_bias", "sigma_bias_bones", "sigma_bias_mesh", "sigma_mesh", "sigma_anneal")
    before = {   # the fields each value resolved to before: FitConfig(sigma_bias=0) plus the option's changes
        "mesh-auto": (0.1, 0.03, False, True, 0.0, False),
        "auto": (0.1, 0.03, True, True, 0.0, False),
        "mesh-anneal": (0.1, 0.03, False, True, 0.0, True),
        "0.05": (0.05, 0.0, True, True, 0.0, False),
        "0.1,0.03": (0.1, 0.0, True, True, 0.03, False),
        "0.1..0.03": (0.1, 0.0, True, True, 0.03, True),
    }
    for text, fields in before.items():
        config = fit_config(**sigma_options(SigmaSpec(min=0, min_open=True).convert(text, None, None)))
        resolved = tuple(getattr(config, name) for name in blur)
        calibrates = fields[1] > 0
        assert (config.sigma_bias > 0) == calibrates, text
        # sigma_bias_bones only acts with a calibrated blur: compare it there only
        assert resolved[:2] + resolved[3:] == fields[:2] + fields[3:], (text, resolved)
        assert not calibrates or resolved[2] == fields[2], (text, resolved)
    assert FitConfig().sigma_bias == 0.03 and FitConfig().sigma_bias_bones is False


def test_track_with_masks_renders_through_the_deferred_selection_by_default(sh, tmp_path, monkeypatch):
    """`track` with masks (RESULTS section 18): every silhouette render of the command's default run asks the
    rasteriser for the deferred pair selection, and each goes through the lean chunk loop (section 21);
    the man page says both. (The shape stages keep section 15's selection: tests/tools/test_avatar.py.)"""
    import os

    import cortexkit.tools.avatar.fit as fit
    import cortexkit.tools.avatar.raster as raster

    hexapod = Path(__file__).resolve().parents[1] / "data" / "hexapod"
    proc = sh(f"""
    set -e
    cortexkit fit-avatar synth {hexapod / 'hexapod.glb'} --keypoints {hexapod / 'hexapod_keypoints.yaml'} --frames 3 --rig ring:4 --crop 32 -o views.st
    cortexkit fit-avatar shape {hexapod / 'hexapod.glb'} views.st --keypoints {hexapod / 'hexapod_keypoints.yaml'} --n-keyframes 1 --steps 5,5,5,0 --no-silhouettes --threads 1 -o avatar.st
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = []
    real = fit.soft_silhouette
    monkeypatch.setattr(fit, "soft_silhouette", lambda *a, **kw: (seen.append(kw.get("deferred")), real(*a, **kw))[1])
    lean, real_lean = [], raster._forward_lean
    monkeypatch.setattr(raster, "_forward_lean", lambda *a, **kw: (lean.append(1), real_lean(*a, **kw))[1])
    monkeypatch.chdir(tmp_path)
    in_process("fit-avatar", "track", "avatar.st", "views.st", "--steps", "3", "--gate", "1000",
               "--baseline", "none", "--threads", "1", "-q", "-o", "poses.st")
    assert os.path.exists(tmp_path / "poses.st")
    assert seen and set(seen) == {True}, seen
    assert len(lean) == len(seen)
    page = " ".join((Path(__file__).resolve().parents[2] / "man" / "src" / "fit-avatar.yaml").read_text().split())
    assert "picks the (pixel, face) pairs its backward needs once a chunk's coverage is complete" in page
    assert "runs its chunk loop on call-wide buffers" in page


def test_shape_masks_in_mesh_keeps_silhouettes_out_of_the_bones_stage(sh, tmp_path, monkeypatch):
    """`shape --masks-in` (RESULTS section 19): the default (bones,mesh) changes no FitConfig field, so the
    silhouettes enter the bones and the mesh stages as FitConfig() has them; `--masks-in mesh` sets
    bones_silhouettes false, so through the command the bones stage fits keypoints only and the mesh
    stage alone renders silhouettes, at a calibrated blur; `--masks-in mesh-bones` (section 24) renders in the
    same stages and reaches FitConfig.masks_in; `shape --help-all` names all three."""
    import os

    import cortexkit.tools.avatar.fit as fit
    from cortexkit.cli.fit_avatar import MASKS_IN, masks_in_options, shape
    from cortexkit.tools.avatar.api import fit_config

    default = next(p.default for p in shape.params if p.name == "masks_in")
    assert default == "bones,mesh" and fit_config(**masks_in_options(default)) == fit.FitConfig()
    assert fit.FitConfig().masks_in == "bones,mesh" and set(MASKS_IN) <= set(fit.MASKS_IN)
    assert [fit_config(**masks_in_options(m)).masks_in for m in MASKS_IN] == list(MASKS_IN)
    hexapod = Path(__file__).resolve().parents[1] / "data" / "hexapod"
    proc = sh(f"""
    set -e
    cortexkit fit-avatar synth {hexapod / 'hexapod.glb'} --keypoints {hexapod / 'hexapod_keypoints.yaml'} --frames 3 --rig ring:4 --crop 32 -o views.st
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    real = fit._optimise
    monkeypatch.chdir(tmp_path)
    for extra, want in (([], (False, False, True, True)), (["--masks-in", "mesh"], (False, False, False, True)),
                        (["--masks-in", "mesh-bones"], (False, False, False, True))):
        seen = []
        monkeypatch.setattr(fit, "_optimise", lambda *a, **kw: (seen.append(a[7]), real(*a, **kw))[1])
        in_process("fit-avatar", "shape", str(hexapod / "hexapod.glb"), "views.st", "--keypoints",
                   str(hexapod / "hexapod_keypoints.yaml"), "--n-keyframes", "1", "--steps", "2,2,2,2",
                   "--gate", "1000", "--threads", "1", "-q", "-o", "avatar.st", *extra)
        assert os.path.exists(tmp_path / "avatar.st")
        assert tuple(seen) == want, (extra, seen)
        os.remove(tmp_path / "avatar.st")
    text = in_process("fit-avatar", "shape", "--help-all")
    assert "--masks-in [bones,mesh|mesh|mesh-bones|auto]" in text and "the bones stage fits the keypoints only" in text


def test_shape_masks_in_auto_through_the_command_stores_its_choice(sh, tmp_path):
    """`shape --masks-in auto` through the installed command (RESULTS section 25): it fits bones,mesh and
    mesh-bones without the held-out camera, says which it kept and why on stderr, stores the choice in the
    avatar (the stop record "shape masks-in auto": chosen, camera, both candidates' held-out scores, and
    the candidates' own stage records), and the chosen one is the candidate whose keypoints reproject closer to
    the held-out camera's detections (median px)."""
    from cortexkit.formats.artifact import read_artifact

    hexapod = Path(__file__).resolve().parents[1] / "data" / "hexapod"
    proc = sh(f"""
    set -e
    cortexkit fit-avatar synth {hexapod / 'hexapod.glb'} --keypoints {hexapod / 'hexapod_keypoints.yaml'} --frames 3 --rig ring:4 --crop 32 -o views.st
    cortexkit fit-avatar shape {hexapod / 'hexapod.glb'} views.st --keypoints {hexapod / 'hexapod_keypoints.yaml'} --n-keyframes 2 --steps 3,3,3,3 --gate 1000 --threads 1 --masks-in auto -v -o avatar.st
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    avatar = read_artifact(tmp_path / "avatar.st")
    assert avatar.config["masks-in" if "masks-in" in avatar.config else "masks_in"] == "auto"
    stops = avatar.meta_json("cortexkit.stopped")
    auto = [s for s in stops if s["stage"] == "shape masks-in auto"]
    assert len(auto) == 1
    rec = auto[0]
    px = {m: rec[f"{m}_keypoints_px_median"] for m in ("bones,mesh", "mesh-bones")}
    assert rec["chosen"] == min(px, key=px.get) and px["bones,mesh"] != px["mesh-bones"]
    assert rec["measure"] == "keypoints" and 0 < rec["bones,mesh_iou"] <= 1
    held = [s["stage"] for s in stops if "held out" in s["stage"]]
    assert f"shape mesh (mesh-bones, camera {rec['camera']} held out)" in held
    assert f"shape bones (bones,mesh, camera {rec['camera']} held out)" in held
    assert f"masks-in auto chose {rec['chosen']}: camera {rec['camera']} held out of both fits" in proc.stderr


def test_shape_from_an_avatar_says_that_template_options_do_not_apply(sh, fox, tmp_path):
    """An avatar as shape's template keeps the keypoint map, limits, offsets, symmetry and extremity marks it
    stores: --extremities (or --keypoints, ...) given with it gets one warning naming them, and the marks
    written are the avatar's; the same refit without them warns nothing."""
    import torch

    from cortexkit.formats.artifact import read_artifact

    proc = sh(f"""
    set -e
    cortexkit fit-avatar synth {fox} --template-units cm --clip Walk --frames 3 --rig ring:4 --crop 32 --no-masks -o views.st
    cortexkit fit-avatar shape {fox} views.st --template-units cm --n-keyframes 1 --steps 5,5,5,0 --threads 1 -o avatar.st
    cortexkit fit-avatar shape avatar.st views.st --n-keyframes 1 --steps 1,1,1,0 --threads 1 -o plain.st 2> plain.err
    cortexkit fit-avatar shape avatar.st views.st --n-keyframes 1 --steps 1,1,1,0 --threads 1 --extremities names -o names.st
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "apply to a glTF template" in line]
    assert len(warned) == 1 and "--extremities" in warned[0] and "--keypoints" not in warned[0]
    assert "apply to a glTF template" not in (tmp_path / "plain.err").read_text()
    first = read_artifact(tmp_path / "avatar.st").tensors["template.extremity"]
    assert torch.equal(read_artifact(tmp_path / "names.st").tensors["template.extremity"], first)
