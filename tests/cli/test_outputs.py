"""Outputs of the shared base: checked before the work, all-or-none, special targets written
through, symlinks followed, umask modes, SIGTERM/SIGHUP clean-up, messages naming the user's path.

The toy tool runs in-process (click's runner); everything about signals, modes and special
files runs the installed ``cortexkit`` as a subprocess.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import threading
import time

import click
import numpy as np
import pytest
from click.testing import CliRunner

from cortexkit.cli.base import Failure, output_option, tool_group, verb
from cortexkit.formats.artifact import decode
from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import write_bytes

toy = tool_group("toy", help="A toy tool for testing outputs.")
CALLS: list[str] = []


@verb(toy, "two", output="artifact")
@output_option("--log", help="A second output.")
@click.option("--fail", is_flag=True)
def two(run, log, fail):
    """Write the artifact and a log, then fail if asked."""
    CALLS.append("two")
    run.write_artifact({"x": np.arange(3)}, "toy")
    if log:
        run.write_bytes(b"log line\n", log, binary=False)
    if fail:
        raise CortexError("asked to fail after writing")


@verb(toy, "figure", output="report")
@output_option("--plot", metavar="PNG")
def figure(run, plot):
    """A library writing a file itself, through run.output_file."""
    with run.output_file(plot) as tmp:
        assert tmp.endswith(".png") and os.path.dirname(tmp) == os.path.dirname(plot)
        with open(tmp, "wb") as handle:
            handle.write(b"\x89PNG fake")
    run.write_report({"plot": plot})


def invoke(*args):
    return CliRunner().invoke(toy, list(map(str, args)), prog_name="cortexkit toy")


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")
                  or ".tmp." in p.name)


def test_outputs_are_checked_before_the_verb_body_runs(tmp_path):
    CALLS.clear()
    for args, fragment in [
        (["-o", tmp_path / "nodir" / "x.st"], "-o"),
        (["-o", tmp_path / "x.st", "--log", tmp_path / "nodir" / "log.txt"], "--log"),
        (["-o", tmp_path, ], "is a folder"),
        (["-o", tmp_path / "same", "--log", tmp_path / "same"], "the same file"),
    ]:
        result = invoke("two", *args)
        assert isinstance(result.exception, Failure), result.output
        assert fragment in str(result.exception.error)
    assert CALLS == []
    assert list(tmp_path.iterdir()) == []


def test_a_failing_verb_leaves_none_of_its_outputs(tmp_path):
    out, log = tmp_path / "a.st", tmp_path / "log.txt"
    result = invoke("two", "-o", out, "--log", log, "--fail")
    assert isinstance(result.exception, Failure)
    assert list(tmp_path.iterdir()) == []
    result = invoke("two", "-o", out, "--log", log)
    assert result.exit_code == 0, result.output
    assert decode(out.read_bytes()).tensors["x"].tolist() == [0, 1, 2]
    assert log.read_bytes() == b"log line\n"
    # an existing output is untouched by a failed run
    out.write_bytes(b"old"), log.write_bytes(b"old log")
    invoke("two", "-o", out, "--log", log, "--fail")
    assert out.read_bytes() == b"old" and log.read_bytes() == b"old log"
    assert leftovers(tmp_path) == []


def test_library_written_files_are_staged_too(tmp_path):
    plot = tmp_path / "p.png"
    result = invoke("figure", "--plot", plot, "-o", tmp_path / "r.yaml")
    assert result.exit_code == 0, result.output
    assert plot.read_bytes() == b"\x89PNG fake" and leftovers(tmp_path) == []


def test_write_outside_a_command_is_atomic_and_keeps_the_mode(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


# ---------------------------------------------------------------------------------------------
# through the installed command

@pytest.fixture
def npy(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(12.0).reshape(3, 4))
    return path


def test_new_files_get_the_umask_mode(sh, npy, tmp_path):
    proc = sh(f"umask 027 && cortexkit convert {npy} {tmp_path / 'b.st'} && umask 002 && "
              f"cortexkit convert {npy} {tmp_path / 'c.csv'}")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE((tmp_path / "b.st").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "c.csv").stat().st_mode) == 0o664


def test_symlink_is_followed_and_kept(cli, npy, tmp_path):
    real = tmp_path / "real.st"
    real.write_bytes(b"old")
    link = tmp_path / "link.st"
    link.symlink_to(real.name)
    proc = cli("convert", npy, link)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == real.name
    assert decode(real.read_bytes()).tensors["data"].shape == (3, 4)
    dangling = tmp_path / "dangling.st"
    dangling.symlink_to("made.st")
    assert cli("convert", npy, dangling).returncode == 0
    assert dangling.is_symlink() and (tmp_path / "made.st").is_file()
    assert leftovers(tmp_path) == []


def test_fifo_is_written_through_not_replaced(cli, npy, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as handle:
            got["data"] = handle.read()

    thread = threading.Thread(target=reader)
    thread.start()
    proc = cli("convert", npy, fifo, timeout=60)
    thread.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert decode(got["data"]).tensors["data"].tolist() == np.arange(12.0).reshape(3, 4).tolist()
    assert leftovers(tmp_path) == []


def test_character_device_is_written_through(cli, npy, tmp_path):
    if os.geteuid() == 0:  # a private null device in tmp_path, so a regression harms nothing
        device = tmp_path / "null"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:  # renaming over /dev/null is impossible without root, so this is safe to try
        device = "/dev/null"
    proc = cli("convert", npy, device)
    assert proc.returncode == 0, proc.stderr
    proc = cli("inspect", npy, "-o", device)  # not an artifact: an error, device untouched
    assert proc.returncode == 1
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert leftovers(tmp_path) == []


def test_read_only_folder_is_refused_before_work_naming_the_path(cli, one_line_error, npy, tmp_path):
    if os.geteuid() == 0:
        folder = "/proc"  # not writable even by root
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        os.chmod(folder, 0o555)
    target = f"{folder}/out.st"
    proc = cli("convert", npy, target)
    one_line_error(proc, "convert", target, "cannot write")
    assert ".tmp" not in proc.stderr


def _wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.002)
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_signal_during_a_large_write_removes_the_temporary(cortexkit_exe, tmp_path, signum):
    """SIGTERM/SIGHUP sent by PID while the temporary file of a ~100 MB artifact is written.

    The child gets the signal's default disposition: under ``nohup`` (SIGHUP ignored, which the
    tool rightly keeps) the test would otherwise see the write finish and fail."""
    big = tmp_path / "big.npy"
    np.save(big, np.zeros((12_500_000,), dtype=np.float64))
    out = tmp_path / "big.st"
    for attempt in range(3):
        proc = subprocess.Popen([cortexkit_exe, "convert", str(big), str(out)],
                                stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"},
                                preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
        seen = _wait_for(lambda: any(p.name.startswith(".big.st.") for p in tmp_path.iterdir())
                         or proc.poll() is not None)
        if seen and proc.poll() is None:
            proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            break
        out.unlink()  # the write won the race: try again
    assert proc.returncode == 128 + signum, err
    assert err.decode().strip() == "cortexkit convert: terminated"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.npy"]
