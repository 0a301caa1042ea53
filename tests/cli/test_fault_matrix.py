"""The fault matrix: every verb of every registered tool, fed bad inputs through the installed
``cortexkit``, must fail with exit status 1 and one line ``cortexkit TOOL VERB: error: ...``
(no traceback, no "internal error"), write nothing, and not hang.

Verbs are enumerated from the command registry, so a new tool joins the matrix when it is
registered. The bad inputs, each given to every positional input of the verb at once:

- ``missing``: a path that does not exist;
- ``empty``: a zero-byte file;
- ``truncated``: the first half of a valid artifact;
- ``garbage``: bytes that are no known format (a safetensors header of nonsense);
- ``wrong-kind``: a valid artifact of a kind the verb does not read (a table where a model,
  tokenizer, posterior, avatar ... belongs; a copula model where a table belongs);
- ``nan``: a table with a NaN cell, for verbs whose first input is a table;
- ``no-folder``: ``-o`` into a folder that does not exist (every verb, with its other inputs bad
  too: the output check comes first, so the message must name the output).

The cases run concurrently (subprocesses, two per core) in one fixture; each parametrized test
then checks its own case, so a failure names the verb and the fault.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import numpy as np
import pytest

from cortexkit.cli import main as entry
from cortexkit.formats.artifact import encode, build_metadata

# Options a verb requires before it reads anything (dummy values; the inputs are bad anyway).
REQUIRED = {
    ("dp-fairness-train", "train"): ["--label", "y"],
    ("dp-fairness-train", "sweep"): ["--label", "y", "--test", "{bad}"],
    ("estimate-copula", "simulate"): ["--copula", "clayton:theta=3"],
    ("simulate-npe", "train"): ["--method", "npe", "--task", "ou", "--hf", "{bad}"],
}
# Positional inputs that take a table (the wrong kind for them is a model artifact).
TABLE_ARGS = {"table", "data", "input", "file"}
# Verbs that read any artifact kind, so no kind is wrong for them, and NaN is data to them.
ANY_KIND = {("inspect", ""), ("convert", "")}
FAULTS = ("missing", "empty", "truncated", "garbage", "wrong-kind", "nan", "no-folder")


def verbs() -> list[tuple[str, str, click.Command]]:
    out = []
    for name in entry.cli.list_commands(None):
        command = entry.cli.get_command(None, name)
        if isinstance(command, click.Group):
            out += [(name, verb, sub) for verb, sub in sorted(command.commands.items())]
        else:
            out.append((name, "", command))
    return out


def _table_bytes(values: np.ndarray) -> bytes:
    tensors = {"x": values.astype(np.float64), "y": np.arange(len(values)) % 2}
    meta = build_metadata("table", version="2", extra={"columns": ["x", "y"]})
    return encode(tensors, meta)


def make_inputs(folder: Path) -> dict[str, Path]:
    folder.mkdir()
    table = _table_bytes(np.linspace(0, 1, 64))
    nan = np.linspace(0, 1, 64)
    nan[3] = np.nan
    model = encode({"weights": np.zeros((3, 3), np.float32)},
                   build_metadata("copula-model", extra={"columns": ["x", "y"]}))
    header = json.dumps({"x": {"dtype": "Q8", "shape": [2.5], "data_offsets": [0, -1]}}).encode()
    files = {"empty": b"", "truncated": table[: len(table) // 2], "table": table,
             "garbage": struct.pack("<Q", len(header)) + header + b"\0" * 8,
             "nan": _table_bytes(nan), "model": model}
    paths = {}
    for key, data in files.items():
        paths[key] = folder / f"{key}.st"
        paths[key].write_bytes(data)
    paths["missing"] = folder / "absent.st"
    return paths


def case_args(tool: str, verb: str, command: click.Command, fault: str,
              inputs: dict[str, Path], out: Path) -> list[str] | None:
    positionals = [p for p in command.params
                   if isinstance(p, click.Argument) and p.name != "out"]
    if fault in ("wrong-kind", "nan") and (tool, verb) in ANY_KIND:
        return None
    if fault != "no-folder" and not positionals:
        return None
    if fault == "nan" and positionals[0].name not in TABLE_ARGS:
        return None
    args = []
    for param in positionals:
        if fault in ("no-folder", "missing"):
            path = inputs["missing"]
        elif fault == "wrong-kind":
            path = inputs["model" if param.name in TABLE_ARGS else "table"]
        else:
            path = inputs[fault]
        args.append(str(path))
    bad = args[0] if args else str(inputs["missing"])  # the same bad file for option inputs
    extra = [a.replace("{bad}", bad) for a in REQUIRED.get((tool, verb), [])]
    target = out.parent / "nodir" / "out.st" if fault == "no-folder" else out
    if (tool, verb) == ("convert", ""):
        return [tool, *args, str(target)]
    return [tool, *([verb] if verb else []), *args, *extra, "-o", str(target)]


def _cases():
    for tool, verb, command in verbs():
        for fault in FAULTS:
            yield f"{tool}-{verb or 'main'}-{fault}", tool, verb, command, fault


CASES = list(_cases())


@pytest.fixture(scope="module")
def results(tmp_path_factory, installed):
    exe, env = installed
    root = tmp_path_factory.mktemp("faults")
    inputs = make_inputs(root / "inputs")
    jobs = {}
    for case_id, tool, verb, command, fault in CASES:
        folder = root / case_id
        folder.mkdir()
        args = case_args(tool, verb, command, fault, inputs, folder / "out.st")
        if args is not None:
            jobs[case_id] = (folder, args)

    def run(item):
        case_id, (folder, args) = item
        try:
            proc = subprocess.run([exe, *args], capture_output=True,
                                  cwd=folder, env=env, timeout=300, stdin=subprocess.DEVNULL)
            return case_id, (args, proc.returncode, proc.stderr.decode("utf-8", "replace"),
                             sorted(p.name for p in folder.iterdir()))
        except subprocess.TimeoutExpired:
            return case_id, (args, None, "timed out after 300 s", [])

    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        return dict(pool.map(run, jobs.items()))


@pytest.mark.parametrize("case_id,tool,verb,command,fault", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_error_and_no_output(results, case_id, tool, verb, command, fault):
    if case_id not in results:
        pytest.skip(f"{fault} does not apply to {tool} {verb}".strip())
    args, code, stderr, left = results[case_id]
    where = f"cortexkit {' '.join(args)}\n{stderr}"
    assert code == 1, where
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, where
    assert lines[0].startswith(f"cortexkit {tool}{' ' + verb if verb else ''}: error: "), where
    assert "Traceback" not in stderr and "internal error" not in stderr, where
    assert left == [], f"left behind {left}: {where}"
    if fault == "no-folder":
        assert "nodir" in lines[0], where


def test_the_matrix_covers_every_registered_verb():
    covered = {(tool, verb) for _, tool, verb, _, _ in CASES}
    assert len(covered) == len(verbs()) >= 39
    assert {tool for tool, _ in covered} == set(entry.COMMANDS)
