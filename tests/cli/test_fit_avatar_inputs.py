"""The inputs users have (issue 34, item 4), through the installed command: masks as PNG folders,
per-camera .npy files or one .npz give the same silhouette term; a folder of DeepLabCut CSVs
triangulates as the views artifact does; evaluate scores a fit against any 3D points (no
synthetic truth needed) and agrees with the truth-based score when the points are the truth;
render writes the fitted silhouettes per camera with the same IoU evaluate reports."""

from __future__ import annotations

import numpy as np
import pytest

from toydata import fox_commands

SMALL = "--frames 4 --rig ring:6 --crop 32"
SHAPE = "--n-keyframes 2 --steps 20,30,30,5 --threads 1"
TRACK = "--steps 10 --window 4 --overlap 1 --threads 1"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, installed):
    """One small synthetic Fox fit shared by the tests: views (with truth and PNG masks), avatar, poses."""
    return fox_commands(tmp_path_factory.mktemp("fit"), installed, (
        f"fit-avatar synth {{fox}} --template-units cm --clip Walk {SMALL} --mask-dir masks -o views.st",
        f"fit-avatar shape {{fox}} views.st --template-units cm {SHAPE} -o avatar.st",
        f"fit-avatar track avatar.st views.st {TRACK} -o poses.st"))


def test_masks_as_png_folders_npy_per_camera_and_one_npz_agree(cli, fitted, one_line_error):
    import cv2

    from cortexkit.formats.artifact import read_artifact

    d = fitted
    names = read_artifact(d / "views.st").meta_json("cortexkit.camera_names")
    stacks = {n: np.stack([cv2.imread(str(p), cv2.IMREAD_GRAYSCALE) for p in sorted((d / "masks" / n).glob("*.png"))])
              for n in names}
    np.savez(d / "masks.npz", **stacks)
    (d / "npy").mkdir(exist_ok=True)
    for n, arr in stacks.items():
        np.save(d / "npy" / f"{n}.npy", arr)
    errors = []
    for source, out in (("masks", "a.st"), ("masks.npz", "b.st"), ("npy", "c.st")):
        p = cli("fit-avatar", "track", d / "avatar.st", d / "views.st", *TRACK.split(), "--masks", d / source,
                "-o", d / out)
        assert p.returncode == 0, p.stderr
        errors.append(read_artifact(d / out, framework="np").tensors["silhouette_error"])
    assert (errors[0] > 0).any()
    np.testing.assert_allclose(errors[1], errors[0], atol=1e-6)
    np.testing.assert_allclose(errors[2], errors[0], atol=1e-6)
    # a camera missing from the .npz, and a wrong array shape: one line each, no output
    np.savez(d / "short.npz", **{n: a for n, a in stacks.items() if n != names[-1]})
    p = cli("fit-avatar", "track", d / "avatar.st", d / "views.st", "--masks", d / "short.npz", "-o", d / "x.st")
    one_line_error(p, "fit-avatar track", f"no mask array for camera(s) {names[-1]}")
    np.savez(d / "flat.npz", **{n: a[0] for n, a in stacks.items()})
    p = cli("fit-avatar", "track", d / "avatar.st", d / "views.st", "--masks", d / "flat.npz", "-o", d / "x.st")
    one_line_error(p, "fit-avatar track", "(frames, height, width)")
    assert not (d / "x.st").exists()


def test_a_folder_of_dlc_csvs_triangulates_like_the_views(sh, cli, fitted, tmp_path, one_line_error):
    import pandas as pd

    from cortexkit.formats.artifact import read_artifact
    from cortexkit.formats.calibration import write_calibration

    art = read_artifact(fitted / "views.st", framework="np")
    t, names = art.tensors, art.meta_json("cortexkit.camera_names")
    kp_names = art.meta_json("cortexkit.keypoint_names")
    cal = {"names": names, "K": t["cameras.K"], "dist": t["cameras.dist"], "rvec": t["cameras.rvec"],
           "tvec": t["cameras.tvec"], "size": t["cameras.size"]}
    (tmp_path / "cal.toml").write_bytes(write_calibration(cal, units="mm"))
    folder = tmp_path / "dlc"
    folder.mkdir()
    cols = pd.MultiIndex.from_tuples([("sim", k, a) for k in kp_names for a in ("x", "y", "likelihood")],
                                     names=["scorer", "bodyparts", "coords"])
    for c, name in enumerate(names):
        data = np.concatenate([t["keypoints"][:, c], t["confidence"][:, c, :, None]], -1).reshape(4, -1)
        pd.DataFrame(data, columns=cols).to_csv(folder / f"{name}DLC_resnet50.csv")
    (folder / "notes.txt").write_text("not a 2D file")
    (folder / "summary.csv").write_text("a,b\n1,2\n")          # names no camera: not this rig's
    proc = sh(f"cortexkit fit-avatar triangulate {fitted}/views.st -o a.csv && "
              f"cortexkit fit-avatar triangulate --calibration cal.toml dlc -o b.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    a, b = (pd.read_csv(tmp_path / f) for f in ("a.csv", "b.csv"))
    np.testing.assert_allclose(b.to_numpy(float), a.to_numpy(float), atol=1e-2, equal_nan=True)
    (folder / f"{names[0]}_copy.csv").write_bytes((folder / f"{names[0]}DLC_resnet50.csv").read_bytes())
    p = cli("fit-avatar", "triangulate", "--calibration", tmp_path / "cal.toml", folder, "-o", tmp_path / "c.csv")
    one_line_error(p, "fit-avatar triangulate", f"camera(s) {names[0]} named by several 2D files")
    empty = tmp_path / "empty"
    empty.mkdir()
    p = cli("fit-avatar", "triangulate", "--calibration", tmp_path / "cal.toml", empty, "-o", tmp_path / "c.csv")
    one_line_error(p, "fit-avatar triangulate", "without 2D keypoint files")
    assert not (tmp_path / "c.csv").exists()


def test_evaluate_against_any_3d_points_and_render_silhouettes(sh, cli, fitted, tmp_path, one_line_error):
    import yaml

    from cortexkit.formats.artifact import read_artifact, write_artifact
    from cortexkit.formats.table import Table, to_csv

    d = fitted
    art = read_artifact(d / "views.st", framework="np")
    names = art.meta_json("cortexkit.keypoint_names")
    truth = art.tensors["truth.keypoints"]
    cols = {"frame": np.arange(len(truth))}
    for k, n in enumerate(names[:10]):              # a motion-capture file of 10 of the keypoints
        for a, axis in enumerate("xyz"):
            cols[f"{n}_{axis}"] = truth[:, k, a].astype(np.float64)
    (tmp_path / "mocap.csv").write_bytes(to_csv(Table(cols)))
    # the user's views: no truth.* tensors at all
    keep = {k: v for k, v in art.metadata.items() if k.split(".")[-1] in ("camera_names", "keypoint_names", "fps")}
    write_artifact(tmp_path / "user.st", {k: v for k, v in art.tensors.items() if not k.startswith("truth.")},
                   "avatar-views", metadata=keep)
    fit = f"--avatar {d}/avatar.st --poses {d}/poses.st"
    proc = sh(f"cortexkit fit-avatar evaluate user.st {fit} --reference mocap.csv > ref.yaml && "
              f"cortexkit fit-avatar evaluate {d}/views.st {fit} > truth.yaml && "
              f"cortexkit fit-avatar render {d}/avatar.st {d}/poses.st {d}/views.st --mask-dir rendered > render.yaml",
              cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ref = yaml.safe_load((tmp_path / "ref.yaml").read_text())
    full = yaml.safe_load((tmp_path / "truth.yaml").read_text())
    assert ref["reference_keypoints"] == names[:10] and ref["fit_vs_reference"]["coverage"] == 1.0
    assert ref["fit"]["detection_px_median"] > 0 and "iou" in ref["fit"]      # no truth needed
    # the same points as the truth's: the same error as the truth-based score over those keypoints
    from cortexkit.tools.avatar.io import avatar_from_artifact, poses_from_artifact
    from cortexkit.tools.avatar.model import forward

    tpl, shape, _ = avatar_from_artifact(read_artifact(d / "avatar.st"))
    with __import__("torch").no_grad():
        _, _, kps = forward(tpl.select_keypoints(names), shape, poses_from_artifact(read_artifact(d / "poses.st")))
    expect = np.linalg.norm(kps.numpy()[:, :10] - truth[:, :10], axis=-1).mean()
    assert abs(ref["fit_vs_reference"]["mpjpe_mm"] - expect) < 1e-3 * max(expect, 1)
    # render: one full-frame PNG per frame and camera; its IoU is evaluate's
    rendered = yaml.safe_load((tmp_path / "render.yaml").read_text())
    cams = art.meta_json("cortexkit.camera_names")
    assert sorted(p.name for p in (tmp_path / "rendered").iterdir()) == sorted(cams)
    assert len(list((tmp_path / "rendered" / cams[0]).glob("*.png"))) == 4
    assert abs(rendered["iou_mean"] - full["fit"]["iou"]) < 1e-3
    p = cli("fit-avatar", "evaluate", tmp_path / "user.st", "--avatar", d / "avatar.st", "--poses", d / "poses.st")
    one_line_error(p, "fit-avatar evaluate", "--reference")
