"""Glue between tools: wrong-format input named for what it is, convert -o, inspect --head,
N-D tensors as long tables, metadata shown as YAML structures."""

import io

import numpy as np
import pytest
import yaml

CSV = b"x,colour\n1.5,red\n2.5,blue\n-3.0,red\n"


def npy_bytes(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def npz_bytes(**arrays):
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


@pytest.mark.parametrize("name, data, what, convert_hint", [
    ("t.csv", CSV, "a CSV table", True),
    ("t.tsv", b"x\ty\n1\t2\n3\t4\n", "a TSV table", True),
    ("a.npy", npy_bytes(np.zeros((3, 2))), "an NPY array", True),
    ("a.npz", npz_bytes(a=np.zeros(3)), "a zip archive (NPZ)", True),
    ("c.yaml", b"steps: 10\nhidden: 8\n", "a YAML file", False),
    ("r.json", b'{"a": 1}\n', "JSON text", False),
    ("notes.txt", b"just some words\n", "a text file", False),
])
def test_wrong_format_where_an_artifact_is_expected_is_named(cli, one_line_error, tmp_path,
                                                             name, data, what, convert_hint):
    path = tmp_path / name
    path.write_bytes(data)
    for command in (["inspect"], ["estimate-copula", "sample"]):
        proc = cli(*command, path)
        one_line_error(proc, " ".join(command), f"{path}: {what}, not a safetensors artifact")
        assert ("cortexkit convert" in proc.stderr) == convert_hint
        assert proc.stdout == b""
    proc = cli("inspect", "-", input=data)  # from a pipe too
    one_line_error(proc, "inspect", f"<stdin>: {what}")
    if convert_hint:  # and the command it names does the job
        made = tmp_path / "made.st"
        assert cli("convert", path, made).returncode == 0
        assert yaml.safe_load(cli("inspect", made).stdout)["kind"] in ("table", "arrays")


def test_convert_takes_dash_o_like_every_other_command(cli, one_line_error, tmp_path):
    src = tmp_path / "t.csv"
    src.write_bytes(CSV)
    assert cli("convert", src, "-o", tmp_path / "a.st").returncode == 0
    assert cli("convert", src, tmp_path / "b.st").returncode == 0
    from cortexkit.formats.artifact import decode

    a, b = (decode((tmp_path / n).read_bytes()) for n in ("a.st", "b.st"))
    assert a.kind == b.kind == "table" and sorted(a.tensors) == sorted(b.tensors)
    assert all(np.array_equal(a.tensors[k], b.tensors[k]) for k in a.tensors)
    back = cli("convert", tmp_path / "a.st", "-o", "-", "--to", "csv")
    assert back.returncode == 0 and back.stdout == CSV
    one_line_error(cli("convert", src, tmp_path / "c.st", "-o", tmp_path / "d.st"), "convert",
                   "two outputs")
    assert not (tmp_path / "c.st").exists() and not (tmp_path / "d.st").exists()


def test_inspect_head_shows_first_rows_and_category_names(sh, tmp_path):
    (tmp_path / "t.csv").write_bytes(CSV)
    proc = sh(f"cortexkit convert {tmp_path}/t.csv - | cortexkit inspect - --head 2")
    assert proc.returncode == 0, proc.stderr
    report = yaml.safe_load(proc.stdout)
    assert report["tensors"]["x"]["head"] == [1.5, 2.5]
    assert report["tensors"]["colour"]["head"] == ["red", "blue"]
    assert report["metadata"]["cortexkit.columns"] == ["x", "colour"]  # a list, not JSON text
    assert report["metadata"]["cortexkit.levels"] == {"colour": ["blue", "red"]}
    plain = yaml.safe_load(sh(f"cortexkit convert {tmp_path}/t.csv - | cortexkit inspect -").stdout)
    assert "head" not in plain["tensors"]["x"]


def test_an_n_d_tensor_becomes_a_long_table_with_index_columns(cli, tmp_path):
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5
    (tmp_path / "a.npy").write_bytes(npy_bytes(array))
    proc = cli("convert", tmp_path / "a.npy", "-o", tmp_path / "long.csv")
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "long.csv").read_text().splitlines()
    assert lines[0] == "i0,i1,i2,data" and len(lines) == 1 + array.size
    for line in lines[1:]:
        i0, i1, i2, value = line.split(",")
        assert float(value) == array[int(i0), int(i1), int(i2)]
    st = tmp_path / "a.st"
    assert cli("convert", tmp_path / "a.npy", st).returncode == 0
    head = yaml.safe_load(cli("inspect", st, "--head", "1").stdout)["tensors"]["data"]["head"]
    assert head == array[:1].tolist()
