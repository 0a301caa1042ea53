"""The fault matrix: every verb of every registered tool, fed bad inputs and bad options, must fail
with one line ``cortexkit TOOL VERB: error: ...`` (exit 1, usage errors 2; no traceback, no
"internal error"), write nothing, and not hang.

Verbs are enumerated from the command registry, so a new tool joins the matrix when it is
registered. The classes (issue 30):

- inputs, given to every positional input of the verb at once: ``missing`` (a path that does not
  exist), ``empty`` (zero bytes), ``truncated`` (the first half of a valid artifact), ``garbage``
  (a safetensors header of nonsense), ``wrong-kind`` (a table where a model belongs, a model where
  a table belongs), ``nan`` (a table with a NaN cell, for verbs whose first input is a table),
  ``no-folder`` (``-o`` into a folder that does not exist: the output check comes first, so the
  message names the output);
- options: every numeric option of every verb at ``0``, ``-1``, ``nan``, ``inf`` and an absurd
  size (10^12), with the verb's other inputs missing: a value out of range is a usage error, an
  absurd size is refused with its estimate by the one size guard before any work (or by the
  missing input); nothing may run away;
- configs: a ``--config`` that is not YAML, not a mapping, names an unknown option or gives a list
  where a number belongs;
- models (the ``models`` fixture builds a small real artifact of each tool's model kinds):
  tensors whose shapes disagree with the model's stored config, degenerate models (NaN weights,
  a std of 0, a scale of 0, a correlation of ones), a newer schema version, a damaged
  ``cortexkit.config``.

The cases run in-process through the console script's own ``main()`` (same one-line error path
and exit codes; a subprocess per case would add only torch's import time); the process-level
faults (signals, pipes, the console script itself) are in test_fault_reproducers.py and
test_outputs.py. Each case has a 60-s alarm: a hang fails the case instead of the run.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import time
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from cortexkit.cli import main as entry
from cortexkit.formats.artifact import build_metadata, encode

SHARED = Path(os.environ.get("CORTEXKIT_SHARED_DATA",
                             Path(__file__).resolve().parents[2].parent / "shared" / "data"))
FOX = SHARED / "avatar" / "fox" / "glTF-Binary" / "Fox.glb"

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
ABSURD = "1000000000000"
OPTION_VALUES = ("0", "-1", "nan", "inf", ABSURD)
# Integer options that size nothing by themselves: indices and seeds, caps and thresholds that
# the data bound (a cap of 10^12 keeps everything; "at most" / "at least" this many), batch sizes
# capped at the data's rows, NFEs and counts checked against the model's n, cameras or frames
# against the views. 10^12 is checked against the data when it is read.
NOT_A_SIZE = {"--observation", "--split-seed", "--n", "--max-windows", "--min-ratings", "--n-items",
              "--max-samples", "--max-pairs", "--frames", "--n-keyframes", "--patience",
              "--draws", "--cameras", "--window", "--overlap", "--nfe", "--val-nfe",
              "--batch-size"}
ALARM_S = 60


def verbs() -> list[tuple[str, str, click.Command]]:
    out = []
    for name in entry.cli.list_commands(None):
        command = entry.cli.get_command(None, name)
        if isinstance(command, click.Group):
            out += [(name, verb, sub) for verb, sub in sorted(command.commands.items())]
        else:
            out.append((name, "", command))
    return out


class Hang(BaseException):
    pass


@contextmanager
def alarm(seconds: int):
    def ring(_signum, _frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_main(args, cwd: Path) -> tuple[int | None, str]:
    """``cortexkit ARGS`` in this process, in ``cwd`` -> (exit code or None on a hang, stderr)."""
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with runner.isolation() as streams, alarm(ALARM_S):
            try:
                entry.main([str(a) for a in args])
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except Hang:
                return None, f"hung past {ALARM_S} s"
            return code, streams[1].getvalue().decode("utf-8", "replace")
    finally:
        os.chdir(old)


def assert_clean(args, code, stderr, folder: Path, command: str, *, codes=(1,)):
    """One line ``cortexkit COMMAND: error: ...``, an expected exit status, nothing written."""
    where = f"cortexkit {' '.join(map(str, args))}\n{stderr}"
    assert code in codes, where
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, where
    assert lines[0].startswith(f"cortexkit {command}: error: "), where
    assert "Traceback" not in stderr and "internal error" not in stderr, where
    left = sorted(p.name for p in folder.iterdir())
    assert left == [], f"left behind {left}: {where}"
    return lines[0]


# ---------------------------------------------------------------------------------------------
# inputs


def _table_bytes(values: np.ndarray) -> bytes:
    tensors = {"x": values.astype(np.float64), "y": np.arange(len(values)) % 2}
    meta = build_metadata("table", version="2", extra={"columns": ["x", "y"]})
    return encode(tensors, meta)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
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


def _positionals(command: click.Command) -> list[click.Argument]:
    return [p for p in command.params if isinstance(p, click.Argument) and p.name != "out"]


def case_args(tool: str, verb: str, command: click.Command, fault: str,
              inputs: dict[str, Path], out: Path) -> list[str] | None:
    positionals = _positionals(command)
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


VERBS = verbs()
INPUT_CASES = [(f"{t}-{v or 'main'}-{f}", t, v, c, f) for t, v, c in VERBS for f in FAULTS]


@pytest.mark.parametrize("case_id,tool,verb,command,fault", INPUT_CASES,
                         ids=[c[0] for c in INPUT_CASES])
def test_bad_input_is_one_line_error_and_no_output(tmp_path, inputs, case_id, tool, verb, command,
                                                   fault):
    args = case_args(tool, verb, command, fault, inputs, tmp_path / "out.st")
    if args is None:
        pytest.skip(f"{fault} does not apply to {tool} {verb}".strip())
    code, stderr = run_main(args, tmp_path)
    line = assert_clean(args, code, stderr, tmp_path, f"{tool}{' ' + verb if verb else ''}")
    if fault == "no-folder":
        assert "nodir" in line, line


# ---------------------------------------------------------------------------------------------
# options: 0, -1, nan, inf and an absurd size for every numeric option of every verb


def _numeric_options(command: click.Command) -> list[click.Option]:
    kinds = (click.types.IntParamType, click.types.FloatParamType)
    return [p for p in command.params if isinstance(p, click.Option) and not p.is_flag
            and isinstance(p.type, kinds) and p.nargs == 1 and p.name not in ("seed", "threads")]


def _is_int(command: click.Command, option: str) -> bool:
    param = next(p for p in command.params if isinstance(p, click.Option) and option in p.opts)
    return isinstance(param.type, click.types.IntParamType)


OPTION_CASES = [(f"{t}-{v or 'main'}-{p.opts[-1].lstrip('-')}={value}", t, v, c, p.opts[-1], value)
                for t, v, c in VERBS for p in _numeric_options(c) for value in OPTION_VALUES]


@pytest.mark.parametrize("case_id,tool,verb,command,option,value", OPTION_CASES,
                         ids=[c[0] for c in OPTION_CASES])
def test_bad_option_value_is_one_line_error_and_no_output(tmp_path, inputs, case_id, tool, verb,
                                                          command, option, value):
    args = case_args(tool, verb, command, "missing", inputs, tmp_path / "out.st")
    if args is None:  # a verb without inputs: its required options only
        args = [tool, *([verb] if verb else []),
                *[a.replace("{bad}", str(inputs["missing"])) for a in REQUIRED.get((tool, verb), [])],
                "-o", str(tmp_path / "out.st")]
        inputs_missing = False
    else:
        inputs_missing = True
    args = [*args[:-2], option, value, *args[-2:]] if args[-2] == "-o" else [*args, option, value]
    code, stderr = run_main(args, tmp_path)
    command_path = f"{tool}{' ' + verb if verb else ''}"
    if code == 0 and not inputs_missing:  # a value in range of a verb that needs no input
        assert value not in ("nan", "inf"), stderr
        return
    line = assert_clean(args, code, stderr, tmp_path, command_path, codes=(1, 2))
    if value == ABSURD and option not in NOT_A_SIZE and _is_int(command, option):
        # refused by the option's own guard (range or size estimate), before any input is read
        assert code == 2 and option in line, line


# ---------------------------------------------------------------------------------------------
# configs


CONFIGS = {"not-yaml": "a: [1,\n", "not-a-mapping": "- 1\n- 2\n", "unknown-key": "no_such_option: 3\n",
           "list-for-a-value": "quiet: [1, 2]\n", "binary": b"\xff\xfe\x00garbage"}
CONFIG_CASES = [(f"{t}-{v or 'main'}-{k}", t, v, c, k) for t, v, c in VERBS for k in CONFIGS]


@pytest.mark.parametrize("case_id,tool,verb,command,config", CONFIG_CASES,
                         ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_is_one_line_error_and_no_output(tmp_path, tmp_path_factory, inputs, case_id,
                                                    tool, verb, command, config):
    folder = tmp_path_factory.mktemp("config")
    text = CONFIGS[config]
    path = folder / "bad.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    args = case_args(tool, verb, command, "missing", inputs, tmp_path / "out.st") or \
        [tool, *([verb] if verb else []), "-o", str(tmp_path / "out.st")]
    args = [*args, "--config", str(path)]
    code, stderr = run_main(args, tmp_path)
    assert_clean(args, code, stderr, tmp_path, f"{tool}{' ' + verb if verb else ''}", codes=(1, 2))


def test_the_matrix_covers_every_registered_verb():
    covered = {(tool, verb) for _, tool, verb, _, _ in INPUT_CASES}
    assert len(covered) == len(verbs()) >= 39
    assert {tool for tool, _ in covered} == set(entry.COMMANDS)
    assert {(t, v) for _, t, v, *_ in CONFIG_CASES} == covered
    assert len(OPTION_CASES) > 5 * 150  # every numeric option of every verb, five values each
