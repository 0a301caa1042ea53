"""The one table reader: per-column typing of CSV, NPY/NPZ, table artifacts, exact round trips."""

from __future__ import annotations

import numpy as np
import pytest

from cortexkit.formats import table as T
from cortexkit.formats import tables as raw
from cortexkit.formats.artifact import build_metadata, decode, encode
from cortexkit.formats.errors import CortexError

MIXED = b"age,workclass,score,label\n39,State-gov,0.5,>50K\n50,Private,,<=50K\n38,Private,1e-3,>50K\n"


def test_csv_columns_are_typed_one_by_one():
    table = T.parse_csv(MIXED, "m.csv")
    assert table.names == ["age", "workclass", "score", "label"]
    assert table.columns["age"].dtype == np.int64
    assert table.columns["score"].dtype == np.float64 and np.isnan(table.columns["score"][1])
    assert table.levels["workclass"] == ["Private", "State-gov"]
    assert table.columns["workclass"].tolist() == [1, 0, 0]
    assert table.strings("label") == [">50K", "<=50K", ">50K"]


def test_csv_round_trip_through_artifact_is_exact():
    table = T.parse_csv(MIXED, "m.csv")
    tensors, extra = T.to_tensors(table)
    data = encode(tensors, build_metadata(T.TABLE_KIND, version=T.TABLE_VERSION, extra=extra))
    back = T.parse_table(data, "t.st")
    assert back.names == table.names and back.levels == table.levels
    for n in table.names:
        np.testing.assert_array_equal(back.columns[n], table.columns[n])
        assert back.columns[n].dtype == table.columns[n].dtype
    assert T.to_csv(back) == MIXED.replace(b",,", b",nan,").replace(b"1e-3", b"0.001")


def test_stray_text_cell_in_numeric_column_names_line_and_column():
    with pytest.raises(CortexError, match=r"line 3, column 'age': 'forty'"):
        T.parse_csv(b"age,x\n1,2\nforty,3\n4,5\n", "a.csv")
    declared = T.parse_csv(b"age,x\n1,2\nforty,3\n4,5\n", "a.csv", ["age"])
    assert declared.levels["age"] == ["1", "4", "forty"]


def test_inf_and_overflow_are_numbers_then_refused_by_matrix():
    table = T.parse_csv(b"a,b\n1,inf\n2,1e400\n", "a.csv")
    assert table.columns["b"].dtype == np.float64 and not table.is_categorical("b")
    with pytest.raises(CortexError, match=r"column 'b', row 1 \(CSV line 2\): inf"):
        table.matrix()


def test_nul_bytes_and_bad_csv_are_errors():
    with pytest.raises(CortexError, match="NUL byte on line 2"):
        T.parse_csv(b"a,b\n1,\x002\n", "n.csv")
    with pytest.raises(CortexError, match="repeated column"):
        T.parse_csv(b"a,a\n1,2\n", "d.csv")
    with pytest.raises(CortexError, match="line 3 has 1 fields"):
        T.parse_csv(b"a,b\n1,2\n3\n", "w.csv")
    with pytest.raises(CortexError, match="empty input"):
        T.parse_table(b"", "e.csv")
    # a field past the csv module's limit: the file named, not csv.Error's traceback
    with pytest.raises(CortexError, match=r"big.csv: malformed CSV \(field larger than field limit"):
        T.parse_csv(b"a,b\n1," + b"x" * 200_000 + b"\n", "big.csv")


def test_declared_categorical_numeric_codes():
    table = T.parse_table(b"edu,y\n3,1\n1,0\n3,1\n6,0\n", "e.csv", categorical_columns=["edu"])
    assert table.levels["edu"] == ["1", "3", "6"] and table.columns["edu"].tolist() == [1, 0, 1, 2]
    with pytest.raises(CortexError, match="categorical"):
        table.matrix(["edu"])
    with pytest.raises(CortexError, match=r"not in the header"):
        T.parse_csv(b"a\n1\n", "a.csv", ["zzz"])


def test_npy_npz_and_old_table_schema():
    m = np.arange(6, dtype=np.int32).reshape(3, 2)
    assert T.parse_table(raw.write_npy(m), "m.npy").names == ["c0", "c1"]
    z = T.parse_table(raw.write_npz({"x": np.ones(3), "k": np.arange(3)}), "z.npz")
    assert sorted(z.names) == ["k", "x"] and z.n_rows == 3
    with pytest.raises(CortexError, match="1-D columns or one 2-D array"):
        T.parse_table(raw.write_npz({"x": np.ones((3, 2)), "k": np.arange(3)}), "z.npz")
    old = encode({"data": m}, build_metadata("table", extra={"cortexkit.columns": ["p", "q"]}))
    table = T.parse_table(old, "old.st")
    assert table.names == ["p", "q"] and table.columns["q"].tolist() == [1, 3, 5]


def test_wrong_kind_and_corrupt_levels_are_refused():
    other = encode({"w": np.ones(2)}, build_metadata("pcn-model"))
    with pytest.raises(CortexError, match="expected a 'table' artifact, got 'pcn-model'"):
        T.parse_table(other, "m.st")
    bad = encode({"a": np.array([0, 5])}, build_metadata(
        "table", version="2", extra={"cortexkit.columns": ["a"], "cortexkit.levels": {"a": ["x"]}}))
    with pytest.raises(CortexError, match="codes outside its 1 levels"):
        T.parse_table(bad, "b.st")
    newer = encode({"a": np.arange(2)}, build_metadata("table", version="9",
                                                       extra={"cortexkit.columns": ["a"]}))
    with pytest.raises(CortexError, match="newer cortexkit"):
        T.parse_table(newer, "n.st")


def test_codes_select_drop_rows_matrix():
    table = T.parse_csv(MIXED, "m.csv")
    codes, levels = table.codes("age")
    assert levels == ["38", "39", "50"] and codes.tolist() == [1, 2, 0]
    sub = table.drop(["workclass", "label"]).rows(np.array([0, 2]))
    np.testing.assert_array_equal(sub.matrix(), [[39, 0.5], [38, 1e-3]])
    with pytest.raises(CortexError, match=r"no column 'nope' \(the table has: age, workclass"):
        table.select(["nope"])
    assert decode(encode(*_tensors_meta(table)), "x").kind == "table"


def _tensors_meta(table):
    tensors, extra = T.to_tensors(table)
    return tensors, build_metadata("table", version="2", extra=extra)


def test_non_finite_cell_of_an_artifact_names_no_csv_line(tmp_path):
    table = T.from_matrix(np.array([[1.0], [np.nan]]), ["b"], source="t.st")
    with pytest.raises(CortexError, match=r"^t.st: column 'b', row 2: nan is not a finite"):
        table.check_finite()
