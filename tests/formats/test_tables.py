"""CSV/NPY/NPZ readers and writers: dtypes, exact round trips, clear errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cortexkit.formats import tables
from cortexkit.formats.errors import CortexError


def test_integer_csv_becomes_int64_with_its_header():
    array, columns = tables.read_csv(b"a,b\n1,2\n-3,4\n", "t.csv")
    assert columns == ["a", "b"] and array.dtype == np.int64
    np.testing.assert_array_equal(array, [[1, 2], [-3, 4]])


def test_mixed_csv_becomes_float64_and_empty_cells_nan():
    array, _ = tables.read_csv(b"a,b\n1,2.5\n,1e-3\n", "t.csv")
    assert array.dtype == np.float64
    assert np.isnan(array[1, 0]) and array[1, 1] == 1e-3


@pytest.mark.parametrize("data, fragment", [
    (b"", "empty CSV"),
    (b"a,b\n", "no data rows"),
    (b"a,b\n1,2\n3\n", "line 3 has 1 fields"),
    (b"a,b\n1,2\n3,x\n", "line 3, column 'b': 'x' is not a number"),
    (b"\xff\xfe\x00", "not UTF-8"),
])
def test_bad_csv_names_the_line(data, fragment):
    with pytest.raises(CortexError, match=fragment):
        tables.read_csv(data, "t.csv")


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
                  elements=st.floats(allow_nan=False, allow_infinity=True, width=64)))
def test_float_csv_round_trip_is_exact(array):
    back, columns = tables.read_csv(tables.write_csv(array, None), "t.csv")
    assert columns == [f"c{j}" for j in range(array.shape[1])]
    if back.dtype == np.int64:  # every cell was integral, so the CSV cannot say "float"
        back = back.astype(np.float64)
    assert back.tobytes() == array.tobytes()


def test_npy_and_npz_round_trip():
    array = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    assert tables.read_npy(tables.write_npy(array), "x").tobytes() == array.tobytes()
    arrays = {"a": array, "b": np.linspace(0, 1, 7, dtype=np.float32)}
    back = tables.read_npz(tables.write_npz(arrays), "x")
    assert set(back) == {"a", "b"} and all(back[k].dtype == arrays[k].dtype for k in arrays)


def test_sniffing():
    assert tables.sniff(tables.write_npy(np.zeros(2))) == "npy"
    assert tables.sniff(tables.write_npz({"a": np.zeros(2)})) == "npz"
    assert tables.sniff(b"a,b\n1,2\n") == "csv"
