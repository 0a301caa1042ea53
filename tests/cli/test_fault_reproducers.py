"""Issue 30's reproducers, one test each (they fail on 11672e2): every bad input and fault is a
clean one-line error, refused before any work, leaving no file behind.

The commands run in-process through the same ``main()`` as the console script (same one-line error
path and exit codes), except where the process itself is the subject (signals, pipes)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from cortexkit.cli.base import tool_group, verb
from cortexkit.formats import stdio
from cortexkit.formats.artifact import build_metadata, encode
from cortexkit.formats.errors import CortexError

SHARED = Path(os.environ.get("CORTEXKIT_SHARED_DATA",
                             Path(__file__).resolve().parents[2].parent / "shared" / "data"))
FOX = SHARED / "avatar" / "fox" / "glTF-Binary" / "Fox.glb"


def run_main(*args, cwd=None) -> tuple[int, bytes, str]:
    """``cortexkit ARGS`` in this process -> (exit code, stdout bytes, stderr text)."""
    from cortexkit.cli.main import main

    runner = CliRunner()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with runner.isolation() as streams:
            try:
                main([str(a) for a in args])
                code = 0
            except SystemExit as exit_:
                code = exit_.code
            out, err = streams[0].getvalue(), streams[1].getvalue()
    finally:
        os.chdir(old)
    return code, out, err.decode("utf-8", "replace")


def clean(code, err, command, *fragments, status=1):
    """Exit ``status``, one line ``cortexkit COMMAND: error: ...`` holding every fragment."""
    lines = err.strip().splitlines()
    assert code == status, (code, err)
    assert len(lines) == 1, err
    assert lines[0].startswith(f"cortexkit {command}: error: "), lines[0]
    assert "Traceback" not in err and "internal error" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# ---------------------------------------------------------------------------------------------
# 1. a signal right after a temporary file is created leaves nothing behind


class _Interrupted(KeyboardInterrupt):
    pass


@pytest.fixture
def signal_after_create(monkeypatch):
    """os.open creates the file, then a signal arrives before it returns (the worst moment)."""
    real_open = os.open

    def open_then_signal(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if flags & os.O_CREAT and ".tmp" in os.fspath(path):
            os.close(fd)
            raise _Interrupted()
        return fd

    monkeypatch.setattr(os, "open", open_then_signal)


@pytest.mark.parametrize("how", ["stage", "stage_file", "now", "probe"])
def test_signal_right_after_the_temporary_is_created_leaves_no_temporary(tmp_path, how,
                                                                         signal_after_create):
    target = tmp_path / "big.st"
    with pytest.raises(_Interrupted):
        if how == "probe":
            stdio.check_target(target)
        elif how == "now":
            stdio.write_bytes(target, b"x" * 100)
        else:
            with stdio.transaction() as outputs:
                if how == "stage":
                    outputs.stage(target, b"x" * 100)
                else:
                    outputs.stage_file(target, ".png")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# 2. sizes without bounds: refused with the estimate, before any work


@pytest.mark.parametrize("args,fragment,status", [
    (["train-pcn", "evaluate", "m.st", "i.st", "--steps", "1000000000"], "0<=x<=100000", 2),
    (["train-pcn", "train", "i.st", "--depth", "10000000"], "of memory", 2),
    (["train-pcn", "train", "i.st", "--width", "1e9"], "of memory", 2),
    (["estimate-copula", "sample", "m.st", "-n", "1000000000000"], "of memory", 2),
    (["estimate-copula", "fit", "t.st", "--hidden", "1e8"], "of memory", 2),
    (["tokenize-eeg", "train", "r.edf", "--codebook-size", "1e9"], "of memory", 2),
    (["fit-avatar", "synth", "t.glb", "--rig", "ring:1000000"], "from 1 to 256", 1),
])
def test_sizes_that_cannot_fit_are_refused_before_any_work(tmp_path, args, fragment, status):
    for name in ("m.st", "i.st", "t.st", "r.edf", "t.glb"):
        (tmp_path / name).write_bytes(b"not read: the size is refused first")
    start = time.perf_counter()
    code, out, err = run_main(*args, "-o", tmp_path / "out.st", cwd=tmp_path)
    clean(code, err, " ".join(args[:2]), fragment, status=status)
    assert time.perf_counter() - start < 30 and out == b""
    assert not (tmp_path / "out.st").exists()


def test_a_size_guard_sees_the_other_options(tmp_path):
    """--depth 100000 is fine at width 1 (about 1.6 MB) and refused at width 100000."""
    from cortexkit.cli.options import Size

    size = Size(bytes=lambda d, p: 16.0 * p["width"] ** 2 * d, what="layers")
    size.check(100_000, {"width": 1})
    with pytest.raises(CortexError, match="100000 layers would need about 16 PB"):
        size.check(100_000, {"width": 100_000})


# ---------------------------------------------------------------------------------------------
# 3. option values parsed with checks


def test_broken_regex_option_is_a_usage_error(tmp_path):
    code, _, err = run_main("fit-avatar", "shape", "t.glb", "v.st", "--exclude-offsets", "([",
                            "-o", tmp_path / "a.st")
    clean(code, err, "fit-avatar shape", "--exclude-offsets", "not a valid regular expression",
          status=2)


@pytest.mark.skipif(not FOX.exists(), reason="shared data (Fox.glb) not found")
@pytest.mark.parametrize("text,fragment", [("a: [1,\n", "not valid YAML"),
                                           ("- 1\n- 2\n", "expected a mapping"),
                                           ("b_Hip_01: 5\n", "finite radians with lo <= hi")])
def test_bad_limits_yaml_is_one_line(tmp_path, text, fragment):
    (tmp_path / "BAD.yaml").write_text(text)
    code, _, err = run_main("fit-avatar", "shape", FOX, tmp_path / "views.st", "--template-units",
                            "cm", "--limits", tmp_path / "BAD.yaml", "-o", tmp_path / "a.st")
    clean(code, err, "fit-avatar shape", "--limits", fragment)
    assert not (tmp_path / "a.st").exists()


# ---------------------------------------------------------------------------------------------
# 6. copula parameters


@pytest.mark.parametrize("spec,fragment", [
    ("clayton:theta=inf", "finite theta"), ("clayton:theta=nan", "finite theta"),
    ("clayton:theta=1e300", "theta <= 200"), ("gumbel:theta=1e6", "theta <= 100"),
    ("0.7*clayton:theta=3+0.7*gumbel:theta=2", "sum to 1.4"),
])
def test_copula_parameters_are_checked(tmp_path, spec, fragment):
    code, out, err = run_main("estimate-copula", "simulate", "--copula", spec, "-n", "10",
                              "-o", tmp_path / "s.st")
    clean(code, err, "estimate-copula simulate", fragment)
    assert not (tmp_path / "s.st").exists()


def test_one_column_twice_is_refused_before_fitting(tmp_path):
    code, _, err = run_main("estimate-copula", "simulate", "--copula", "clayton:theta=3", "-n", "50",
                            "-o", tmp_path / "s.st")
    assert code == 0, err
    code, _, err = run_main("estimate-copula", "fit", tmp_path / "s.st", "--columns", "x1,x1",
                            "--steps", "2", "-o", tmp_path / "m.st")
    clean(code, err, "estimate-copula fit", "x1 named twice")
    assert "fitted" not in err and not (tmp_path / "m.st").exists()


# ---------------------------------------------------------------------------------------------
# 8. warnings before an error are part of its one line; never raw


_demo = tool_group("demo", help="A tool for the warning tests.")


@verb(_demo, "warn-then-fail", output="report")
@click.option("--fail/--no-fail", default=True)
def _warn_then_fail(run, fail):
    np.log(np.zeros(2))  # numpy: RuntimeWarning divide by zero
    if fail:
        raise np.linalg.LinAlgError("SVD did not converge")
    run.write_report({"ok": True})


@verb(_demo, "folder-then-full-disk", output=None)
@click.argument("folder")
def _folder_then_full_disk(run, folder):
    stdio.make_folder(folder)
    run.write_bytes(b"first", Path(folder) / "a.obj")
    raise CortexError(f"{folder}/b.obj: cannot write (No space left on device)")


def _invoke_demo(*args):
    from cortexkit.cli import main as entry

    group = click.Group("cortexkit", commands={"demo": _demo})
    runner = CliRunner()
    with runner.isolation() as streams:
        old = entry.cli
        entry.cli = group
        try:
            entry.main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code
        finally:
            entry.cli = old
        return code, streams[1].getvalue().decode()


def test_numpy_warning_before_an_error_joins_its_one_line():
    code, err = _invoke_demo("demo", "warn-then-fail")
    line = clean(code, err, "demo warn-then-fail", "SVD did not converge",
                 "after a warning: divide by zero encountered in log")
    assert "RuntimeWarning" not in line


def test_warning_of_a_successful_command_is_one_named_line():
    code, err = _invoke_demo("demo", "warn-then-fail", "--no-fail")
    assert code == 0
    assert err.strip().splitlines() == [
        "cortexkit demo warn-then-fail: warning: divide by zero encountered in log"]


# ---------------------------------------------------------------------------------------------
# 9. a reader that closes early: quiet, status 141 (SIGPIPE), for every command


@pytest.mark.parametrize("head", ["head -c 0", "head -c 100"])
def test_reader_that_closes_early_gives_the_sigpipe_status_quietly(sh, tmp_path, head):
    proc = sh(f"cortexkit estimate-copula simulate --copula clayton:theta=3 -n 200000 | {head} "
              "> /dev/null; echo \"status ${PIPESTATUS[0]}\"", cwd=tmp_path)
    assert proc.stdout.decode().strip() == "status 141", proc.stderr
    assert proc.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# 10. a folder a failed command made is removed again


def test_folder_made_by_a_failed_command_is_removed(tmp_path):
    folder = tmp_path / "objs" / "deep"
    code, err = _invoke_demo("demo", "folder-then-full-disk", str(folder))
    clean(code, err, "demo folder-then-full-disk", "No space left")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_folder_that_existed_is_kept(tmp_path):
    (tmp_path / "objs").mkdir()
    code, err = _invoke_demo("demo", "folder-then-full-disk", str(tmp_path / "objs"))
    assert code == 1
    assert (tmp_path / "objs").is_dir() and list((tmp_path / "objs").iterdir()) == []
