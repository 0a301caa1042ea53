"""inspect and convert as real subprocesses: pipes, round trips, config, errors."""

import os
import pty

import numpy as np
import pytest
import yaml

from cortexkit.formats import tables
from cortexkit.formats.artifact import decode

CSV = b"x,y,z\n1,2.5,-3\n4,0.1,1e-20\n7,8,9\n"


def test_convert_pipe_into_inspect(sh, tmp_path):
    (tmp_path / "data.csv").write_bytes(CSV)
    proc = sh("cortexkit convert data.csv - | cortexkit inspect -", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = yaml.safe_load(proc.stdout)
    assert report["kind"] == "table" and report["version"] == "2"
    assert report["producer"] == "cortexkit convert data.csv -"
    assert report["config"]["input"] == "data.csv"
    assert list(report["tensors"]) == ["x", "y", "z"]
    assert report["tensors"]["x"] == {"dtype": "int64", "shape": [3], "min": 1, "max": 7}
    y = report["tensors"]["y"]
    assert y["dtype"] == "float64" and y["shape"] == [3] and (y["min"], y["max"]) == (0.1, 8.0)
    assert y["mean"] == pytest.approx((2.5 + 0.1 + 8) / 3, rel=1e-12)
    assert proc.stderr == ""


def test_csv_round_trip_is_exact(cli, tmp_path):
    (tmp_path / "in.csv").write_bytes(CSV)
    assert cli("convert", "in.csv", "t.safetensors", cwd=tmp_path).returncode == 0
    assert cli("convert", "t.safetensors", "out.csv", cwd=tmp_path).returncode == 0
    a, cols_a = tables.read_csv(CSV, "in")
    b, cols_b = tables.read_csv((tmp_path / "out.csv").read_bytes(), "out")
    assert cols_a == cols_b and a.tobytes() == b.tobytes()
    ints = b"a,b\n1,2\n3,4\n"
    proc = cli("convert", "-", "--to", "csv", input=cli("convert", "-", input=ints).stdout)
    assert proc.stdout == ints


@pytest.mark.parametrize("array", [np.arange(12, dtype=np.int16).reshape(3, 4),
                                   np.linspace(-1, 1, 7, dtype=np.float32),
                                   np.array([True, False])])
def test_npy_round_trip_keeps_dtype_and_bits(cli, array):
    artifact = cli("convert", "-", input=tables.write_npy(array))
    assert artifact.returncode == 0, artifact.stderr
    back = cli("convert", "-", "-", "--to", "npy", input=artifact.stdout)
    out = tables.read_npy(back.stdout, "x")
    assert out.dtype == array.dtype and out.tobytes() == array.tobytes()


def test_npz_round_trip(cli, tmp_path):
    arrays = {"w": np.random.default_rng(0).normal(size=(4, 5)), "i": np.arange(3)}
    (tmp_path / "a.npz").write_bytes(tables.write_npz(arrays))
    assert cli("convert", "a.npz", "a.safetensors", cwd=tmp_path).returncode == 0
    assert cli("convert", "a.safetensors", "b.npz", cwd=tmp_path).returncode == 0
    back = tables.read_npz((tmp_path / "b.npz").read_bytes(), "b")
    assert all(back[k].tobytes() == arrays[k].tobytes() for k in arrays)
    proc = cli("convert", "a.safetensors", "x.csv", cwd=tmp_path)
    assert proc.returncode == 1 and "--tensor" in proc.stderr
    assert not (tmp_path / "x.csv").exists()
    assert cli("convert", "--tensor", "i", "a.safetensors", "i.csv", cwd=tmp_path).returncode == 0


def test_same_command_gives_identical_bytes(cli):
    first = cli("convert", "-", input=CSV).stdout
    assert first == cli("convert", "-", input=CSV).stdout and len(first) > 100


def test_large_artifact_through_a_pipe(sh, tmp_path):
    array = np.random.default_rng(1).normal(size=(300_000, 4)).astype(np.float32)  # ~4.8 MB
    (tmp_path / "big.npy").write_bytes(tables.write_npy(array))
    proc = sh("cortexkit convert big.npy - | cortexkit convert - - --to npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tables.read_npy(proc.stdout, "x").tobytes() == array.tobytes()


GARBAGE = {
    "empty": b"",
    "garbage": b"this is not a safetensors file at all, just some text\n",
    "truncated": None,  # filled in below from a real artifact
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_bad_input_to_inspect_is_one_line_exit_1_and_no_output_file(cli, case, tmp_path,
                                                                     one_line_error):
    data = GARBAGE[case]
    if data is None:
        data = cli("convert", "-", input=CSV).stdout[:-7]
    proc = cli("inspect", "-", "-o", "report.yaml", input=data, cwd=tmp_path)
    one_line_error(proc, "inspect")
    assert list(tmp_path.iterdir()) == []  # neither the report nor a temporary file


def test_wrong_kind_and_missing_file_messages(cli, tmp_path, one_line_error):
    one_line_error(cli("inspect", "nope.safetensors", cwd=tmp_path), "inspect", "no such file")
    (tmp_path / "bad.csv").write_bytes(b"a,b\n1,2\n3,oops\n")
    proc = cli("convert", "bad.csv", "out.safetensors", cwd=tmp_path)
    one_line_error(proc, "convert", "line 3", "'oops'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_usage_errors_exit_2_on_one_line(cli, one_line_error):
    one_line_error(cli("inspect"), "inspect", "Missing argument", code=2)
    one_line_error(cli("convert", "-", "--to", "xls"), "convert", "--to", code=2)
    proc = cli("no-such-command")
    assert proc.returncode == 2 and proc.stderr.startswith("cortexkit: error: ")


def test_debug_shows_the_traceback(cli):
    proc = cli("inspect", "-", "--debug", input=b"garbage garbage garbage")
    assert proc.returncode == 1 and "Traceback" in proc.stderr
    assert "cortexkit inspect: error:" in proc.stderr


def test_config_file_print_config_and_command_line_wins(cli, tmp_path, one_line_error):
    (tmp_path / "c.yaml").write_text("to: npy\ntensor: data\n")
    proc = cli("convert", "in.csv", "--config", "c.yaml", "--print-config", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout) == {"input": "in.csv", "out": "-", "from": "auto",
                                           "to": "npy", "tensor": "data", "categorical": ""}
    proc = cli("convert", "in.csv", "--config", "c.yaml", "--to", "npz", "--print-config",
               cwd=tmp_path)
    assert yaml.safe_load(proc.stdout)["to"] == "npz"
    # the resolved config travels inside the artifact
    (tmp_path / "in.csv").write_bytes(CSV)
    (tmp_path / "d.yaml").write_text("from: csv\n")
    proc = cli("convert", "in.csv", "--config", "d.yaml", cwd=tmp_path)
    assert decode(proc.stdout, "x").config["from"] == "csv"
    (tmp_path / "e.yaml").write_text("bogus: 1\n")
    one_line_error(cli("convert", "in.csv", "--config", "e.yaml", cwd=tmp_path), "convert",
                   "unknown option 'bogus'", code=2)
    one_line_error(cli("convert", "in.csv", "--config", "missing.yaml", cwd=tmp_path), "convert",
                   "missing.yaml")


def test_print_config_needs_no_inputs(cli):
    proc = cli("inspect", "--print-config")
    assert proc.returncode == 0 and yaml.safe_load(proc.stdout) == {"file": None, "head": 0}


def test_binary_artifact_is_never_written_to_a_terminal(cortexkit_exe, tmp_path):
    import subprocess

    (tmp_path / "in.csv").write_bytes(CSV)
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run([cortexkit_exe, "convert", "in.csv"], stdout=terminal,
                              stderr=subprocess.PIPE, cwd=tmp_path, timeout=120)
        os.set_blocking(controller, False)
        try:
            shown = os.read(controller, 65536)
        except BlockingIOError:
            shown = b""
    finally:
        os.close(controller)
        os.close(terminal)
    assert proc.returncode == 1
    assert b"refusing to write a binary artifact to a terminal" in proc.stderr
    assert b"__metadata__" not in shown


MIXED = (b"age,workclass,score,>50K\n39,State-gov,1.5,No\n50,Self-emp,,Yes\n"
         b"38,Private,-0.25,No\n")


def test_text_columns_stay_categorical_and_csv_round_trip_gives_the_strings(sh, tmp_path):
    (tmp_path / "m.csv").write_bytes(MIXED)
    proc = sh("cortexkit convert m.csv - | cortexkit convert - back.csv && cat back.csv",
              cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"age,workclass,score,>50K\n39,State-gov,1.5,No\n50,Self-emp,nan,Yes\n" \
                          b"38,Private,-0.25,No\n"
    from cortexkit.formats.table import read_table

    table = read_table(tmp_path / "back.csv")
    assert table.levels == {"workclass": ["Private", "Self-emp", "State-gov"], ">50K": ["No", "Yes"]}
    assert table.columns["age"].dtype == np.int64 and table.columns["workclass"].tolist() == [2, 1, 0]


def test_declared_categorical_and_npy_out_of_a_table(cli, tmp_path):
    (tmp_path / "c.csv").write_bytes(b"edu,y\n1,0.5\n6,1.5\n1,2.5\n")
    proc = cli("convert", "c.csv", "c.st", "--categorical", "edu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from cortexkit.formats.table import read_table

    assert read_table(tmp_path / "c.st").levels == {"edu": ["1", "6"]}
    proc = cli("convert", "c.st", "y.npy", "--tensor", "y", cwd=tmp_path)
    assert proc.returncode == 0 and np.load(tmp_path / "y.npy").tolist() == [0.5, 1.5, 2.5]


def test_inspect_counts_infinities_and_reports_finite_range(cli):
    from cortexkit.formats.artifact import build_metadata, encode

    data = encode({"v": np.array([1.0, np.inf, -np.inf, np.nan, 3.0])}, build_metadata("x"))
    report = yaml.safe_load(cli("inspect", "-", input=data).stdout)["tensors"]["v"]
    assert report == {"dtype": "float64", "shape": [5], "min": 1.0, "max": 3.0, "mean": 2.0,
                      "nan": 1, "+inf": 1, "-inf": 1}
