"""The shared base on a toy tool: verbs, torch options, config precedence, errors, atomicity."""

import os

import click
import pytest
import torch
import yaml
from click.testing import CliRunner

from cortexkit.cli.base import Failure, tool_group, verb
from cortexkit.cli.main import describe
from cortexkit.formats.artifact import decode
from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import write_bytes

toy = tool_group("toy", help="A toy tool for testing the base.")


@verb(toy, "draw", output="artifact", torch_options=True)
@click.option("-n", "--count", type=int, default=3)
@click.option("--scale", type=float, default=1.0)
def draw(run, count, scale):
    """Draw COUNT normal numbers."""
    if count <= 0:
        raise CortexError("--count must be positive")
    values = torch.randn(count, generator=run.torch_generator()) * scale
    run.detail(f"drew {count}")
    run.write_artifact({"values": values}, kind="toy-draws", metadata={"count": count})


@verb(toy, "loop", output="artifact")
@click.option("--cap", type=int, default=5)
def loop(run, cap):
    """A loop of 10 steps stopped at CAP."""
    for step in run.progress(range(10), total=10, desc="loop"):
        if step + 1 >= cap:
            break
    reason = "completed" if cap >= 10 else "step-cap"
    run.stopped("loop", min(cap, 10), 10, "steps", reason, best_loss=0.125)
    run.write_artifact({"x": torch.zeros(1)}, kind="toy-loop")


@verb(toy, "crash", output="report")
def crash(run):
    """Fail with an unexpected error."""
    raise RuntimeError("boom")


def invoke(*args):
    return CliRunner().invoke(toy, list(args), prog_name="cortexkit toy", catch_exceptions=True)


def test_verb_writes_artifact_with_producer_config_and_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the default thread count this machine allows
    out = tmp_path / "a.safetensors"
    result = invoke("draw", "-n", "4", "--seed", "7", "-o", str(out))
    assert result.exit_code == 0, result.output
    artifact = decode(out.read_bytes(), "a", framework="pt")
    assert artifact.kind == "toy-draws" and artifact.meta_json("count") == 4
    assert artifact.config == {"count": 4, "scale": 1.0, "seed": 7, "device": "auto",
                               "threads": 1}  # the number used, never 0
    expected = torch.randn(4, generator=torch.Generator().manual_seed(7))
    assert torch.equal(artifact.tensors["values"], expected)
    again = tmp_path / "b.safetensors"
    invoke("draw", "-n", "4", "--seed", "7", "-o", str(again))
    other = tmp_path / "c.safetensors"
    invoke("draw", "-n", "4", "--seed", "8", "-o", str(other))
    assert decode(again.read_bytes()).tensors["values"].tobytes() == \
        decode(out.read_bytes()).tensors["values"].tobytes()
    assert decode(other.read_bytes()).tensors["values"].tobytes() != \
        decode(out.read_bytes()).tensors["values"].tobytes()


def test_config_file_and_command_line_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("count: 5\nscale: 2.5\n")
    result = invoke("draw", "--config", str(cfg), "--scale", "3", "--print-config")
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.output) == {"count": 5, "scale": 3.0, "seed": 0,
                                             "device": "auto", "threads": 1}
    cfg.write_text("count: many\n")
    result = invoke("draw", "--config", str(cfg), "-o", str(tmp_path / "x"))
    assert result.exit_code == 2 and not (tmp_path / "x").exists()


def test_errors_become_failures_tagged_with_the_command():
    result = invoke("draw", "-n", "0", "-o", "unused")
    assert isinstance(result.exception, Failure)
    assert result.exception.command_path == "cortexkit toy draw"
    assert describe(result.exception.error) == "--count must be positive"
    result = invoke("crash")
    assert describe(result.exception.error).startswith("internal error: RuntimeError: boom")


def test_interrupted_write_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_bytes(target, b"x" * 1000)
    assert list(tmp_path.iterdir()) == []


def test_every_stop_says_why_and_is_stored(tmp_path):
    out = tmp_path / "loop.st"
    result = CliRunner().invoke(toy, ["loop", "--cap", "3", "-o", str(out)],
                                prog_name="cortexkit toy")
    assert result.exit_code == 0, result.output
    assert "loop: stopped after 3 of 10 steps (step-cap, best loss 0.125)" in result.stderr
    stops = decode(out.read_bytes()).meta_json("cortexkit.stopped")
    assert stops == [{"stage": "loop", "ran": 3, "planned": 10, "unit": "steps",
                      "reason": "step-cap", "best_loss": 0.125}]
    done = CliRunner().invoke(toy, ["loop", "--cap", "10", "-o", str(out)],
                              prog_name="cortexkit toy")
    assert "stopped after" not in done.stderr  # a completed loop stays quiet without -v
    assert decode(out.read_bytes()).meta_json("cortexkit.stopped")[0]["reason"] == "completed"


TOY_LOOP = """
import click, sys
from cortexkit.cli.base import tool_group, verb
from cortexkit.cli.main import COMMANDS, main
toy = tool_group("toy", help="toy")
@verb(toy, "loop", output="report")
def loop(run):
    for step in run.progress(range(7), total=7, desc="toyloop"):
        pass
    run.stopped("toyloop", 7, 7, "steps", "completed")
    run.write_report({"done": True})
sys.modules["toymod"] = type(sys)("toymod"); sys.modules["toymod"].group = toy
COMMANDS["toy"] = "toymod:group"
main(["toy", "loop", *sys.argv[1:]])
"""


def run_with_stderr_on(terminal: str, *args, rows: int = 0, cols: int = 0) -> str:
    """Run the toy loop with stderr on a pseudo-terminal of ROWSxCOLS or on a pipe; return
    what stderr received."""
    import fcntl
    import pty
    import struct
    import subprocess
    import sys
    import termios

    if terminal == "pipe":
        proc = subprocess.run([sys.executable, "-c", TOY_LOOP, *args], capture_output=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr.decode()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-c", TOY_LOOP, *args], stdout=subprocess.PIPE,
                            stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    assert yaml.safe_load(proc.stdout.read()) == {"done": True}  # stdout stays a clean pipe
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_shows_on_a_terminal_even_of_zero_columns_and_never_on_a_pipe():
    shown = run_with_stderr_on("pty", rows=24, cols=100)
    assert "toyloop" in shown and "0/7" in shown
    zero = run_with_stderr_on("pty", rows=0, cols=0)  # tqdm alone prints nothing at 0x0
    assert "toyloop" in zero and "0/7" in zero
    bar_lines = [line for line in zero.replace("\r", "\n").splitlines() if "toyloop" in line]
    assert bar_lines and max(len(line) for line in bar_lines) <= 80
    assert run_with_stderr_on("pipe") == ""
    assert "toyloop" not in run_with_stderr_on("pty", "-q", rows=24, cols=100)


def test_verbose_says_how_many_threads_and_why(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    result = CliRunner().invoke(toy, ["draw", "-v", "-o", os.devnull], prog_name="cortexkit toy")
    assert result.exit_code == 0, result.output
    assert "threads: 1 (OMP_NUM_THREADS)" in result.stderr or \
        "threads: 1 (load average)" in result.stderr or \
        "threads: 1 (CPU affinity)" in result.stderr, result.stderr
