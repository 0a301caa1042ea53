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
from toydata import make_images, write_set

SHARED = Path(os.environ.get("CORTEXKIT_SHARED_DATA",
                             Path(__file__).resolve().parents[2].parent / "shared" / "data"))
FOX = SHARED / "avatar" / "fox" / "glTF-Binary" / "Fox.glb"

# Options a verb requires before it reads anything (dummy values; the inputs are bad anyway).
REQUIRED = {
    ("dp-fairness-train", "train"): ["--label", "y"],
    ("dp-fairness-train", "sweep"): ["--label", "y", "--test", "{bad}"],
    ("estimate-copula", "simulate"): ["--copula", "clayton:theta=3"],
    ("simulate-npe", "train"): ["--method", "npe", "--task", "ou", "--hf", "{bad}"],
    ("fit-avatar", "render"): ["--mask-dir", "{dir}"],
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
              "--max-samples", "--max-pairs", "--frames", "--n-keyframes", "--patience", "--patience-pretrain",
              "--patience-steps",
              "--draws", "--cameras", "--window", "--overlap", "--baseline-frames", "--nfe", "--val-nfe",
              "--batch-size", "--max-levels", "--head", "--limit"}
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
    extra = [a.replace("{bad}", bad).replace("{dir}", str(out.parent / "masks"))
             for a in REQUIRED.get((tool, verb), [])]
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


# ---------------------------------------------------------------------------------------------
# models: shapes against the model's config, degenerate models, damaged metadata


def _run_ok(folder: Path, *args) -> None:
    code, stderr = run_main(args, folder)
    assert code == 0, f"cortexkit {' '.join(map(str, args))}\n{stderr}"


def _rewrite(source: Path, target: Path, change=None, meta=None) -> Path:
    """``source`` with tensors changed (name -> array or callable of the old array) and metadata
    changed, written without any check (the damage a reader must catch)."""
    from cortexkit.formats.artifact import read_artifact

    art = read_artifact(source, framework="np", check=False)
    tensors = dict(art.tensors)
    for name, value in (change or {}).items():
        tensors[name] = value(tensors[name]) if callable(value) else value
    target.write_bytes(encode(tensors, {**art.metadata, **(meta or {})}))
    return target


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """Small real artifacts of every tool, built in-process in seconds of CPU."""
    from safetensors.numpy import save_file

    d = tmp_path_factory.mktemp("models")
    f = {}
    # estimate-copula
    _run_ok(d, "estimate-copula", "simulate", "--copula", "clayton:theta=3", "-n", "300", "-o", "sim.st")
    _run_ok(d, "estimate-copula", "fit", "sim.st", "--copula", "gaussian", "-q", "-o", "cop.st")
    # train-pcn
    for name, n, seed in (("train.st", 96, 0), ("test.st", 48, 1)):
        write_set(d / name, *make_images(n, seed=seed))
    images, labels = make_images(48, seed=1)
    labels[0] = 12
    write_set(d / "test12.st", images, labels)
    _run_ok(d, "train-pcn", "train", "train.st", "--depth", "2", "--width", "8", "--epochs", "1",
            "--batch-size", "32", "--steps", "1", "--threads", "1", "-q", "-o", "pcn.st")
    # tokenize-eeg
    rng = np.random.default_rng(0)
    np.save(d / "rec.npy", rng.normal(0, 20, (3, 250 * 12)))
    np.save(d / "huge.npy", rng.normal(0, 1e31, (3, 250 * 12)))
    np.save(d / "flat0.npy", np.zeros((3, 0)))
    rec = ["--sfreq", "250", "--channel-names", "C3,CZ,C4"]
    _run_ok(d, "tokenize-eeg", "train", "rec.npy", *rec, "--channels", "C3,CZ,C4", "--preset", "tiny",
            "--patches", "4", "--codebook-size", "16", "--epochs", "1", "--batch-size", "4",
            "--kmeans-init", "--dead-code-threshold", "1", "--threads", "1", "-q", "-o", "tok.st")
    _run_ok(d, "tokenize-eeg", "encode", "tok.st", "rec.npy", *rec, "-q", "-o", "tokens.st")
    # sample-permutations
    orders = [rng.permutation(5) for _ in range(60)]
    (d / "orders.txt").write_text("\n".join(" ".join(map(str, r)) for r in orders) + "\n")
    _run_ok(d, "sample-permutations", "encode", "orders.txt", "--representation", "lehmer", "-o", "codes.st")
    _run_ok(d, "sample-permutations", "fit", "orders.txt", "--model", "mallows", "-q", "-o", "perm.st")
    # simulate-npe
    _run_ok(d, "simulate-npe", "simulate", "--task", "ou", "-n", "60", "--seed", "2", "-q", "-o", "hf.st")
    _run_ok(d, "simulate-npe", "simulate", "--task", "ou", "-n", "3", "--seed", "9", "-q", "-o", "obs.st")
    _run_ok(d, "simulate-npe", "train", "--method", "npe", "--hf", "hf.st", "--transforms", "1",
            "--bins", "4", "--hidden", "8", "--depth", "1", "--max-epochs", "2", "--threads", "1",
            "-q", "-o", "post.st")
    _run_ok(d, "simulate-npe", "sample", "post.st", "--x-o", "obs.st", "-n", "20", "-q", "-o",
            "samples.st")
    x_o = np.ones((1, 10), np.float32)  # observations as a plain safetensors file (tensor x_o)
    for name, value in (("nan", np.where(np.arange(10) == 2, np.nan, x_o)), ("inf", x_o * np.inf),
                        ("int", x_o.astype(np.int64)), ("empty", x_o[:0])):
        save_file({"x_o": value}, str(d / f"xo_{name}.st"))
    # fit-avatar: views of the shipped Fox, and the neutral avatar of its template
    if FOX.exists():
        _run_ok(d, "fit-avatar", "synth", FOX, "--template-units", "cm", "--clip", "Walk", "--frames",
                "2", "--rig", "ring:4", "--crop", "16", "-q", "-o", "views.st")
        from cortexkit.formats.gltf import read_gltf
        from cortexkit.tools.avatar.io import avatar_to_tensors
        from cortexkit.tools.avatar.model import Shape, template_from_mesh

        mesh = read_gltf(FOX)
        tpl = template_from_mesh(mesh.vertices, mesh.faces, mesh.weights, mesh.joint_names,
                                 mesh.parents, mesh.rest_world, unit_mm=10.0)
        tensors, meta = avatar_to_tensors(tpl, Shape.neutral(tpl))
        (d / "avatar.st").write_bytes(encode({k: v.numpy() for k, v in tensors.items()},
                                             build_metadata("avatar", extra=meta)))
    return {p.name: p for p in d.iterdir()}


def _codebook_of(n):
    return lambda old: old[:n]


# (case id, the files a case needs made: {name: (source, tensor changes, metadata changes)},
#  the command line, a fragment of the one-line error)
MODEL_CASES = [
    # 4. tensor shapes against the model's stored config
    *[(f"tokenizer-shape-{verb}", {"bad.st": ("tok.st", {"quantize_f.embedding": _codebook_of(8)}, None)},
       ["tokenize-eeg", verb, "bad.st", *rest], "its stored config needs [16, 32]")
      for verb, rest in (("encode", ["rec.npy", "--sfreq", "250", "--channel-names", "C3,CZ,C4"]),
                         ("decode", ["tokens.st"]), ("features", ["tokens.st"]),
                         ("evaluate", ["rec.npy", "--sfreq", "250", "--channel-names", "C3,CZ,C4"]))],
    *[(f"tokens-empty-{verb}", {"empty.st": ("tokens.st", {k: (lambda old: old[:0]) for k in
                                                          ("token_f", "token_t", "window_start",
                                                           "window_source", "window_label")}, None)},
       ["tokenize-eeg", verb, "tok.st", "empty.st"], "hold no windows") for verb in ("features", "decode")],
    ("codes-length", {"short.st": ("codes.st", {"codes": lambda old: old[:, :3]}, None)},
     ["sample-permutations", "decode", "short.st"], "expected n = 5"),
    ("codes-float", {"float.st": ("codes.st", {"codes": lambda old: old.astype(np.float32) + 0.5}, None)},
     ["sample-permutations", "decode", "float.st"], "expected an integer"),
    ("npe-samples-parameters", {"s3.st": ("samples.st", {"theta": lambda old: np.concatenate([old, old[..., :1]], -1)}, None)},
     ["simulate-npe", "score", "post.st", "s3.st"], "does not pair with x_o"),
    # 5. degenerate models and values
    ("npe-std-0", {"post0.st": ("post.st", {"member0.standardizer.std": lambda old: old * 0}, None)},
     ["simulate-npe", "sample", "post0.st", "--x-o", "obs.st", "-n", "5"], "expected values above 0"),
    *[(f"npe-x-o-{name}", {}, ["simulate-npe", "sample", "post.st", "--x-o", f"xo_{name}.st", "-n", "5"],
       fragment) for name, fragment in (("nan", "NaN or infinite"), ("inf", "NaN or infinite"),
                                        ("int", "must be a float tensor"), ("empty", "no observations"))],
    ("npe-outside-prior", {"far.st": ("hf.st", {"theta": lambda old: old * 100}, None)},
     ["simulate-npe", "score", "post.st", "far.st"], "outside the prior"),
    ("npe-reference-nan", {"refnan.st": ("samples.st", {"theta": lambda old: np.where(old == old.max(), np.nan, old)}, None)},
     ["simulate-npe", "evaluate", "samples.st", "--reference", "refnan.st"], "NaN"),
    *[(f"pcn-std-0-{verb}", {"pcn0.st": ("pcn.st", None, {"pcn.preprocess": json.dumps({"mean": [0.2], "std": [0.0]})})},
       ["train-pcn", verb, "pcn0.st", "test.st"], "one positive std per channel") for verb in ("predict", "evaluate")],
    ("eeg-huge-values", {}, ["tokenize-eeg", "train", "huge.npy", "--sfreq", "250", "--channel-names",
                             "C3,CZ,C4", "--channels", "C3,CZ,C4", "--preset", "tiny"], "not scalp EEG"),
    ("eeg-no-samples", {}, ["tokenize-eeg", "train", "flat0.npy", "--sfreq", "250", "--channel-names",
                            "C3,CZ,C4", "--channels", "C3,CZ,C4", "--preset", "tiny"], "holds no samples"),
    ("avatar-scale-0", {"avatar0.st": ("avatar.st", {"shape.scale": lambda old: old * 0}, None)},
     ["fit-avatar", "track", "avatar0.st", "views.st"], "expected values above 0"),
    ("views-zero-camera", {"views0.st": ("views.st", {"cameras.K": lambda old: old * 0}, None)},
     ["fit-avatar", "triangulate", "views0.st"], "not a camera matrix"),
    ("copula-corr-nan", {"copnan.st": ("cop.st", {"corr": lambda old: old * np.nan}, None)},
     ["estimate-copula", "sample", "copnan.st", "-n", "5"], "NaN"),
    # 7. accepted silently before
    ("pcn-label-out-of-range", {}, ["train-pcn", "evaluate", "pcn.st", "test12.st"], "label 12"),
    ("triangulate-camera-names", {}, ["fit-avatar", "triangulate", "views.st", "--camera-names", "a,b"],
     "drop --camera-names"),
    ("version-99", {"v99.st": ("pcn.st", None, {"cortexkit.version": "99"})},
     ["train-pcn", "evaluate", "v99.st", "test.st"], "newer cortexkit"),
    ("damaged-config", {"cfg.st": ("cop.st", None, {"cortexkit.config": "a: [1,\n"})},
     ["estimate-copula", "sample", "cfg.st", "-n", "5"], "cortexkit.config"),
    ("dp-batch-past-n", {}, ["dp-fairness-train", "account", "--batch-size", "1e6", "--n", "33916",
                             "--sigma", "1", "--steps", "100"], "more than the 33916 records"),
]


@pytest.mark.parametrize("case_id,make,args,fragment", MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_bad_model_or_value_is_one_line_error_and_no_output(tmp_path, models, case_id, make, args,
                                                            fragment):
    needs = {a for a in args if isinstance(a, str) and a.endswith((".st", ".npy"))} - set(make)
    needs |= {source for source, _, _ in make.values()}
    if not needs <= set(models):
        pytest.skip(f"needs {sorted(needs - set(models))} (shared data not found)")
    folder = tmp_path / "work"
    folder.mkdir()
    for name in needs:
        (folder / name).symlink_to(models[name])
    for name, (source, change, meta) in make.items():
        _rewrite(models[source], folder / name, change, meta)
    out = tmp_path / "out" / "x.st"
    out.parent.mkdir()
    code, stderr = run_main([*args, "-o", out], folder)
    command = " ".join(args[:2])
    assert_clean(args, code, stderr, out.parent, command, codes=(1,))
    assert fragment in stderr, stderr
    assert "after a warning" not in stderr or case_id.startswith("views"), stderr
