"""track's floor through the installed command: triangulation of the same 2D keypoints scored
beside the avatar on a held-out camera (DESIGN "never silently worse than the obvious baseline"):
the line and the poses' metadata, the warning when the avatar is clearly wrong (its scale 1.6x
off) and triangulation right, --baseline none, and the note on a rig too small to hold a camera out."""

from __future__ import annotations

import math

import pytest

from toydata import fox_commands

SMALL = "--frames 4 --crop 32 --no-masks"
SHAPE = "--n-keyframes 2 --steps 20,30,30,5 --threads 1"
TRACK = "--steps 60 --window 4 --overlap 1 --threads 1"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, installed):
    """A small synthetic Fox (6 ring cameras, 4 frames, no masks) and its avatar."""
    return fox_commands(tmp_path_factory.mktemp("baseline"), installed, (
        f"fit-avatar synth {{fox}} --template-units cm --clip Walk --rig ring:6 {SMALL} -o views.st",
        f"fit-avatar synth {{fox}} --template-units cm --clip Walk --rig ring:2 {SMALL} -o views2.st",
        f"fit-avatar shape {{fox}} views.st --template-units cm {SHAPE} -o avatar.st"))


def _baseline(path):
    from cortexkit.formats.artifact import read_artifact

    return read_artifact(path).meta_json("avatar.baseline")


def test_track_reports_triangulation_on_a_held_out_camera(cli, fitted):
    proc = cli("fit-avatar", "track", "avatar.st", "views.st", *TRACK.split(), "-o", "poses.st", cwd=fitted)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("baseline check (camera")]
    assert len(lines) == 1, proc.stderr
    assert "avatar" in lines[0] and "triangulate" in lines[0] and "px" in lines[0]
    record = _baseline(fitted / "poses.st")
    assert record["frames"] == [0, 4] and record["camera"].startswith("cam")
    assert record["detections"] > 10 and 0 < record["triangulation_coverage"] <= 1
    for key in ("avatar_px_median", "avatar_px_mean", "triangulation_px_median", "triangulation_px_mean",
                "seconds"):
        assert math.isfinite(record[key]) and record[key] >= 0, (key, record)
    assert record["loses"] == ("warning: triangulation" in proc.stderr)


def test_a_wrong_avatar_loses_to_triangulation_and_the_track_says_so(cli, fitted):
    """The fitted avatar with its global scale 1.6x too big: no pose puts its keypoints where
    the held-out camera sees them, while triangulation does (2 px noise)."""
    from safetensors import safe_open
    from safetensors.numpy import save_file

    with safe_open(str(fitted / "avatar.st"), "np") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    tensors["shape.scale"] = tensors["shape.scale"] * 1.6
    save_file(tensors, str(fitted / "avatar_big.st"), metadata=meta)
    proc = cli("fit-avatar", "track", "avatar_big.st", "views.st", *TRACK.split(), "-o", "poses_big.st",
               cwd=fitted)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning: triangulation" in line]
    assert len(warnings) == 1, proc.stderr
    assert warnings[0].startswith("cortexkit fit-avatar track: warning:") and " px" in warnings[0]
    record = _baseline(fitted / "poses_big.st")
    assert record["loses"] is True
    # the fitted avatar of this small fit loses too (4.5 vs 2.9 px when measured), but by far less
    assert record["avatar_px_median"] > 4 * record["triangulation_px_median"], record


def test_baseline_none_skips_the_check_and_two_cameras_say_why(cli, fitted):
    quick = ["--steps", "5", "--window", "4", "--overlap", "1", "--threads", "1"]  # the figures do not matter here
    proc = cli("fit-avatar", "track", "avatar.st", "views.st", *quick, "--baseline", "none",
               "-o", "poses_none.st", cwd=fitted)
    assert proc.returncode == 0, proc.stderr
    assert "baseline" not in proc.stderr
    assert _baseline(fitted / "poses_none.st") is None
    proc = cli("fit-avatar", "track", "avatar.st", "views2.st", *quick, "-o", "poses2.st", cwd=fitted)
    assert proc.returncode == 0, proc.stderr
    assert "baseline check skipped: 2 camera(s): triangulation needs 2 after holding one out" in proc.stderr
    assert "skipped" in _baseline(fitted / "poses2.st")
