"""An output's suffix is a promise: tables and reports written to .csv, .tsv, .npy, .npz, .yaml
or .json are in that format; an artifact with no such form is refused before any work."""

import io
import json

import numpy as np
import pytest
import yaml

from cortexkit.formats.artifact import decode

SIM = ["estimate-copula", "simulate", "--copula", "clayton:theta=3", "-n", "7", "--seed", "3"]


@pytest.fixture(scope="module")
def reference(installed, tmp_path_factory):
    import subprocess

    exe, env = installed
    proc = subprocess.run([exe, *SIM], capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    artifact = decode(proc.stdout)
    return {k: artifact.tensors[k] for k in ("x1", "x2")}


def read_back(path, fmt):
    data = path.read_bytes()
    if fmt in ("csv", "tsv"):
        text = data.decode()
        rows = [line.split("," if fmt == "csv" else "\t") for line in text.splitlines()]
        header, body = rows[0], rows[1:]
        return {h: np.array([float(r[j]) for r in body]) for j, h in enumerate(header)}
    if fmt == "npy":
        matrix = np.load(io.BytesIO(data), allow_pickle=False)
        return {"x1": matrix[:, 0], "x2": matrix[:, 1]}
    if fmt == "npz":
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    loaded = json.loads(data) if fmt == "json" else yaml.safe_load(data)
    return {k: np.array(v) for k, v in loaded.items()}


@pytest.mark.parametrize("fmt", ["csv", "tsv", "npy", "npz", "yaml", "json"])
def test_a_table_is_written_in_the_format_its_name_says(cli, reference, tmp_path, fmt):
    out = tmp_path / f"samples.{fmt}"
    proc = cli(*SIM, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert not out.read_bytes().startswith(b"\x00") and b"__metadata__" not in out.read_bytes()
    back = read_back(out, fmt)
    assert sorted(back) == ["x1", "x2"]
    for name, values in reference.items():
        np.testing.assert_array_equal(back[name], values)  # exact: shortest round-trip floats


def test_direct_csv_equals_convert_of_the_artifact(sh, tmp_path):
    args = " ".join(SIM)
    proc = sh(f"cortexkit {args} -o {tmp_path}/direct.csv && "
              f"cortexkit {args} | cortexkit convert - {tmp_path}/converted.csv")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "direct.csv").read_bytes() == (tmp_path / "converted.csv").read_bytes()


@pytest.mark.parametrize("suffix", ["csv", "tsv", "npy", "npz", "yaml", "json"])
def test_a_model_artifact_to_a_table_name_is_refused_before_any_work(cli, one_line_error,
                                                                     tmp_path, suffix):
    out = tmp_path / f"model.{suffix}"
    # the input does not exist: the refusal comes before the verb reads anything
    proc = cli("estimate-copula", "fit", tmp_path / "missing.csv", "--copula", "gaussian",
               "-o", out)
    one_line_error(proc, "estimate-copula fit", f"-o {out}", "no " + suffix.upper() + " form",
                   "cortexkit convert")
    assert list(tmp_path.iterdir()) == []


def test_reports_are_json_by_name_and_never_a_table_format(cli, one_line_error, tmp_path):
    source = tmp_path / "s.st"
    assert cli(*SIM, "-o", source).returncode == 0
    as_yaml = cli("inspect", source)
    as_json = tmp_path / "r.json"
    assert cli("inspect", source, "-o", as_json).returncode == 0
    assert json.loads(as_json.read_text()) == yaml.safe_load(as_yaml.stdout)
    proc = cli("inspect", source, "-o", tmp_path / "r.csv")
    one_line_error(proc, "inspect", "a report is YAML or JSON, not CSV")
    assert not (tmp_path / "r.csv").exists()


def test_tensors_of_one_row_count_become_a_wide_table_and_others_are_refused(tmp_path):
    from cortexkit.formats.artifact import write_artifact
    from cortexkit.formats.errors import CortexError

    out = tmp_path / "wide.csv"
    write_artifact(out, {"a": np.arange(3), "b": np.arange(12.0).reshape(3, 2, 2)}, "toy")
    lines = out.read_text().splitlines()
    assert lines[0] == "a,b[0][0],b[0][1],b[1][0],b[1][1]" and lines[2] == "1,4.0,5.0,6.0,7.0"
    with pytest.raises(CortexError, match="do not share a row count.*cortexkit convert"):
        write_artifact(tmp_path / "bad.csv", {"a": np.arange(3), "b": np.arange(2)}, "toy")
    with pytest.raises(CortexError, match="NPY holds one"):
        write_artifact(tmp_path / "bad.npy", {"a": np.arange(3), "b": np.arange(3)}, "toy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wide.csv"]


def test_a_tabular_report_goes_to_csv_and_a_nested_one_is_refused(tmp_path):
    from cortexkit.formats.errors import CortexError
    from cortexkit.formats.report import write_report

    log = [{"epoch": 1, "loss": 0.5, "split": "train"}, {"epoch": 2, "loss": 0.25,
                                                          "split": "test"}]
    write_report(log, tmp_path / "log.csv")
    assert (tmp_path / "log.csv").read_text() == "epoch,loss,split\n1,0.5,train\n2,0.25,test\n"
    write_report(log, tmp_path / "log.yaml")
    assert yaml.safe_load((tmp_path / "log.yaml").read_text()) == log
    with pytest.raises(CortexError, match="a report is YAML or JSON, not CSV"):
        write_report({"model": {"a": 1}}, tmp_path / "nested.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.csv", "log.yaml"]
