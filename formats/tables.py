"""Plain tables from outside: CSV (with a header), NPY and NPZ, to and from named arrays.

A CSV becomes one 2-D array ``data`` (rows, columns) of int64 when every cell is an integer,
else float64 (empty cells and ``nan`` are NaN); its header travels as the column names.
Values round-trip exactly: integers print as integers and floats in Python's shortest
round-tripping form.
"""

from __future__ import annotations

import csv
import io
import zipfile

import numpy as np

from cortexkit.formats.errors import CortexError

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def sniff(data: bytes) -> str:
    """Guess the format of input bytes: ``npy``, ``npz``, ``safetensors`` or ``csv``."""
    if data.startswith(NPY_MAGIC):
        return "npy"
    if data.startswith(ZIP_MAGIC):
        return "npz"
    if len(data) >= 9 and data[8:9] == b"{":
        return "safetensors"
    return "csv"


def _csv_rows(data: bytes, name: str) -> tuple[list[str], list[list[str]]]:
    """(header, body rows with stripped cells) from CSV bytes; every row as wide as the header
    (the checks of :func:`cortexkit.formats.table.csv_cells`: NUL bytes, UTF-8, field sizes)."""
    from cortexkit.formats.table import csv_cells

    return csv_cells(data, name)


def read_csv(data: bytes, name: str) -> tuple[np.ndarray, list[str]]:
    """(array (rows, columns), column names) from CSV bytes with a header row."""
    header, body = _csv_rows(data, name)
    cells = np.array(body, dtype=str)
    try:
        return cells.astype(np.int64), header
    except (ValueError, OverflowError):
        pass
    cells = np.where(cells == "", "nan", cells)
    try:
        return cells.astype(np.float64), header
    except ValueError:
        for j, column in enumerate(header):
            for i, cell in enumerate(cells[:, j]):
                try:
                    float(cell)
                except ValueError:
                    raise CortexError(
                        f"{name}: line {i + 2}, column '{column}': '{cell}' is not a number "
                        "(convert handles numeric tables; encode categories first)") from None
        raise


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    return str(value)


def write_csv(array: np.ndarray, columns: list[str] | None = None) -> bytes:
    """CSV bytes with a header for a 1-D or 2-D array."""
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise CortexError(f"CSV holds 1-D or 2-D tables, this tensor has shape {list(array.shape)}")
    if columns is None or len(columns) != array.shape[1]:
        columns = [f"c{j}" for j in range(array.shape[1])]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in array.tolist():
        writer.writerow([_cell(v) for v in row])
    return out.getvalue().encode("utf-8")


def read_npy(data: bytes, name: str) -> np.ndarray:
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CortexError(f"{name}: not a readable NPY file ({exc})") from None


def write_npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def read_npz(data: bytes, name: str) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CortexError(f"{name}: not a readable NPZ file ({exc})") from None
    if not arrays:
        raise CortexError(f"{name}: NPZ archive holds no arrays")
    return arrays


def write_npz(arrays: dict[str, np.ndarray]) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def read_csv_columns(data: bytes, name: str) -> tuple[list[str], dict[str, list[str]]]:
    """(header, column -> list of cell strings) from CSV bytes with a header row.

    Unlike :func:`read_csv` nothing is converted: mixed tables (numbers and categories) are for
    the tool that reads them to encode. Cells are stripped of surrounding blanks.
    """
    header, body = _csv_rows(data, name)
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise CortexError(f"{name}: CSV header repeats column name(s) {dup}")
    columns = {h: [row[j] for row in body] for j, h in enumerate(header)}
    return header, columns
