"""The test tiers: tests/slow_tests.txt names the slow tier; the default run leaves it out,
``-m slow`` runs it, and every entry names a test that exists (a stale entry fails here)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SLOW = REPO / "tests" / "slow_tests.txt"


def entries() -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in SLOW.read_text().splitlines()]
    return [line for line in lines if line]


def test_every_slow_entry_names_an_existing_test_and_no_closed_form_or_example():
    assert entries(), "the slow tier is empty"
    for entry in entries():
        path, _, name = entry.partition("::")
        file = REPO / path
        assert file.is_file(), entry
        # closed forms, contract rules and the fast checks of every verb stay in the fast tier
        assert not any(word in entry for word in ("closed_form", "contract", "fault_matrix")), entry
        assert file.name not in ("test_base.py", "test_glue.py", "test_outputs.py"), entry
        if name:
            tree = ast.parse(file.read_text())
            functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert name.split("[", 1)[0] in functions, entry


def collected(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode in (0, 5), proc.stdout[-2000:] + proc.stderr[-2000:]
    return {line.strip() for line in proc.stdout.splitlines() if "::" in line}


def test_default_run_leaves_the_slow_tier_out_and_dash_m_slow_runs_it():
    entry = next(e for e in entries() if "::" in e)
    path = entry.split("::", 1)[0]
    fast = collected(path)
    slow = collected("-m", "slow", path)
    assert any(node.split("[", 1)[0] == entry for node in slow), (entry, slow)
    assert not any(node.split("[", 1)[0] == entry for node in fast), entry
    assert fast.isdisjoint(slow)
