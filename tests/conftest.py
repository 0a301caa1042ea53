"""Shared fixtures: the installed ``cortexkit`` as a subprocess, and the shared data folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# One torch thread in the test process too: the default thread count follows the machine's load
# (cli/threads.py), and a test comparing the bytes of two runs must not see it change between them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
SHARED_DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", REPO.parent / "shared" / "data"))


def cortexkit_executable() -> str:
    """The installed console script: beside this Python first, then on PATH."""
    beside = Path(sys.executable).parent / "cortexkit"
    if beside.exists():
        return str(beside)
    found = shutil.which("cortexkit")
    if found is None:
        pytest.fail("the cortexkit console script is not installed: run pip install -e '.[test]'")
    return found


def _env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(cortexkit_executable()).parent), env.get("PATH", "")])
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


@pytest.fixture
def cli():
    """Run ``cortexkit ARGS...`` as a subprocess; stdout comes back as bytes, stderr as text."""

    def run(*args, input: bytes | None = None, cwd=None, env=None, timeout=900):
        proc = subprocess.run([cortexkit_executable(), *map(str, args)], input=input,
                              capture_output=True, cwd=cwd, env=_env(env), timeout=timeout)
        proc.stderr = proc.stderr.decode("utf-8", "replace")
        return proc

    return run


@pytest.fixture
def sh():
    """Run a bash pipeline (``set -o pipefail``) with the installed cortexkit on PATH."""

    def run(script: str, cwd=None, env=None, timeout=900):
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True,
                              cwd=cwd, env=_env(env), timeout=timeout)
        proc.stderr = proc.stderr.decode("utf-8", "replace")
        return proc

    return run


def assert_one_line_error(proc, command: str, *fragments: str, code: int = 1) -> None:
    """The command failed with ``code``, one ``cortexkit CMD: error:`` line, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"cortexkit {command}: error: "), lines[0]
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or skip: a user's clone has no shared data (CI always has it)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (set CORTEXKIT_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture
def one_line_error():
    """:func:`assert_one_line_error` as a fixture (test modules do not import conftest)."""
    return assert_one_line_error


@pytest.fixture
def cortexkit_exe() -> str:
    return cortexkit_executable()


@pytest.fixture(scope="session")
def installed() -> tuple[str, dict]:
    """The console script and the environment to run it in, for module-scoped fixtures."""
    return cortexkit_executable(), _env()


# ---------------------------------------------------------------------------------------------
# the slow tier

SLOW_LIST = Path(__file__).with_name("slow_tests.txt")


def slow_entries() -> set[str]:
    """Node ids (``tests/x.py::test_y``, parameters dropped) or files (``tests/x.py``) listed
    in tests/slow_tests.txt, one a line; ``#`` starts a comment."""
    if not SLOW_LIST.exists():
        return set()
    entries = set()
    for line in SLOW_LIST.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            entries.add(line)
    return entries


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: the slow tier (tests/slow_tests.txt): long training runs and "
        "benchmark-sized checks; run with -m slow (the default run has -m 'not slow')")


def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in tests/slow_tests.txt (chosen from measured durations, one list
    so the tiers are decided in one place) as ``slow``."""
    slow = slow_entries()
    if not slow:
        return
    for item in items:
        nodeid = item.nodeid
        base = nodeid.split("[", 1)[0]
        if nodeid in slow or base in slow or nodeid.split("::", 1)[0] in slow:
            item.add_marker(pytest.mark.slow)
