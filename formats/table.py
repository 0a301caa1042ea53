"""Tables, the common currency between tools: named columns, each its own array.

A :class:`Table` is an ordered mapping of column name -> 1-D numpy array (all the same length),
plus the levels of its categorical columns, whose arrays hold int64 codes into those levels.
One reader, :func:`read_table`, takes every table a user or another tool has:

- CSV with a header row: each column is typed on its own: int64 when every cell is an integer,
  float64 when every cell is a number (empty cells and ``nan`` are NaN; ``inf`` is kept as inf),
  categorical when no cell is a number or when the column is named in ``categorical``. A column
  that is mostly numbers with a stray text cell is an error naming the line and column;
- NPY: a 1-D array is one column ``c0``, a 2-D array its columns ``c0 .. c{k-1}``;
- NPZ: 1-D arrays of one length are columns named by their keys; one 2-D array is split as NPY
  (an ``arrays`` artifact, which ``convert`` makes of NPY/NPZ input, is read the same way);
- a ``table`` artifact (:func:`write_table`): one tensor per column, the order in
  ``cortexkit.columns`` and the levels in ``cortexkit.levels``. The first schema (one 2-D
  tensor ``data`` and the header in ``cortexkit.columns``) is still read.

Tools turn a table into what they need (a float matrix of chosen columns, codes of a label) with
the methods here, so the same errors come out for every tool.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from cortexkit.formats.errors import CortexError

TABLE_KIND = "table"
TABLE_VERSION = "2"
ARRAYS_KIND = "arrays"  # convert's kind for NPY/NPZ input: named tensors of any shape
COLUMNS_KEY = "cortexkit.columns"
LEVELS_KEY = "cortexkit.levels"
_RESERVED = {"__metadata__"}


@dataclass
class Table:
    """Named columns of one length; ``levels[name]`` lists the categories of a coded column."""

    columns: dict[str, np.ndarray]
    levels: dict[str, list[str]] = field(default_factory=dict)
    source: str = "<table>"
    csv: bool = False  # read from CSV: messages give the file's line numbers too

    def __post_init__(self) -> None:
        lengths = {name: len(np.asarray(col)) for name, col in self.columns.items()}
        for name, col in self.columns.items():
            if np.asarray(col).ndim != 1:
                raise CortexError(f"{self.source}: column '{name}' is not 1-D "
                                  f"(shape {list(np.shape(col))})")
        if len(set(lengths.values())) > 1:
            raise CortexError(f"{self.source}: columns of different lengths {lengths}")
        for name in self.levels:
            if name not in self.columns:
                raise CortexError(f"{self.source}: levels for unknown column '{name}'")

    # -- shape --------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self.columns)

    @property
    def n_rows(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __len__(self) -> int:
        return self.n_rows

    def is_categorical(self, name: str) -> bool:
        return name in self.levels

    # -- access -------------------------------------------------------------------------------
    def require(self, names: Iterable[str], what: str = "column") -> None:
        """Fail naming every column of ``names`` the table lacks, and what it has."""
        missing = [n for n in names if n not in self.columns]
        if missing:
            held = ", ".join(self.names) or "none"
            raise CortexError(f"{self.source}: no {what} {', '.join(map(repr, missing))} "
                              f"(the table has: {held})")

    def column(self, name: str) -> np.ndarray:
        self.require([name])
        return self.columns[name]

    def strings(self, name: str) -> list[str]:
        """A column as text: category names for a coded column, numbers as CSV writes them."""
        col = self.column(name)
        if name in self.levels:
            levels = self.levels[name]
            return [levels[int(c)] for c in col]
        return [_cell(v) for v in col.tolist()]

    def select(self, names: Sequence[str]) -> "Table":
        self.require(names)
        return Table({n: self.columns[n] for n in names},
                     {n: self.levels[n] for n in names if n in self.levels}, self.source, self.csv)

    def drop(self, names: Iterable[str]) -> "Table":
        gone = set(names)
        self.require(gone)
        return self.select([n for n in self.names if n not in gone])

    def rows(self, index) -> "Table":
        """The rows at ``index`` (a slice, boolean mask or integer array) of every column (their
        row numbers are no longer the file's, so the subset does not count as CSV)."""
        return Table({n: c[index] for n, c in self.columns.items()}, dict(self.levels), self.source)

    def matrix(self, names: Sequence[str] | None = None, *, dtype=np.float64,
               finite: bool = True) -> np.ndarray:
        """Columns ``names`` (default all) as one (rows, columns) array of ``dtype``.

        Categorical columns are refused (encode them first); with ``finite`` a NaN or inf is
        an error naming the column and line.
        """
        names = self.names if names is None else list(names)
        self.require(names)
        coded = [n for n in names if n in self.levels]
        if coded:
            raise CortexError(f"{self.source}: column(s) {', '.join(map(repr, coded))} are "
                              "categorical, expected numbers")
        if not names:
            return np.zeros((self.n_rows, 0), dtype=dtype)
        out = np.stack([np.asarray(self.columns[n]) for n in names], axis=1).astype(dtype)
        if finite and out.dtype.kind == "f":
            self.check_finite(names)
        return out

    def check_finite(self, names: Sequence[str] | None = None) -> None:
        """Fail on the first NaN/inf of the numeric columns ``names``, naming line and column."""
        for name in self.names if names is None else names:
            col = np.asarray(self.columns[name])
            if col.dtype.kind != "f" or name in self.levels:
                continue
            bad = np.flatnonzero(~np.isfinite(col))
            if bad.size:
                i = int(bad[0])
                line = f" (CSV line {i + 2})" if self.csv else ""
                raise CortexError(f"{self.source}: column '{name}', row {i + 1}{line}: {col[i]} "
                                  f"is not a finite number ({bad.size} such cell(s))")

    def codes(self, name: str) -> tuple[np.ndarray, list[str]]:
        """(int64 codes, level names) of a column: its own levels if categorical, else the
        sorted distinct values of an integer (or integral float) column, as text."""
        col = self.column(name)
        if name in self.levels:
            return np.asarray(col, dtype=np.int64), list(self.levels[name])
        values = np.asarray(col)
        if values.dtype.kind == "f":
            self.check_finite([name])
        uniques, codes = np.unique(values, return_inverse=True)
        return codes.astype(np.int64), [_cell(v) for v in uniques.tolist()]


# ---------------------------------------------------------------------------------------------
# building tables

def from_matrix(array: np.ndarray, names: Sequence[str] | None = None,
                source: str = "<table>") -> Table:
    """A table of the columns of a 1-D or 2-D array (names ``c0..`` unless given)."""
    array = np.asarray(array)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise CortexError(f"{source}: a table is 1-D or 2-D, this array has shape "
                          f"{list(array.shape)}")
    if names is None:
        names = [f"c{j}" for j in range(array.shape[1])]
    if len(names) != array.shape[1]:
        raise CortexError(f"{source}: {len(names)} column names for {array.shape[1]} columns")
    _check_names(names, source)
    return Table({n: np.ascontiguousarray(array[:, j]) for j, n in enumerate(names)}, {}, source)


def categorical(values: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """(int64 codes, sorted levels) of a sequence of strings."""
    levels = sorted(set(values))
    index = {level: i for i, level in enumerate(levels)}
    return np.array([index[v] for v in values], dtype=np.int64), levels


def _check_names(names: Sequence[str], source: str) -> None:
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if list(names).count(n) > 1})
        raise CortexError(f"{source}: repeated column name(s) {dup}")
    for n in names:
        if not n or n in _RESERVED:
            raise CortexError(f"{source}: column name {n!r} is not allowed")


# ---------------------------------------------------------------------------------------------
# CSV

def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    return str(value)


def _parse_int(cell: str):
    try:
        return int(cell)
    except ValueError:
        return None


def _parse_float(cell: str):
    if cell == "":
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return None


def csv_cells(data: bytes, name: str) -> tuple[list[str], list[list[str]]]:
    """(header, body rows of stripped cells) from CSV bytes (TSV when the header line has tabs
    and no commas); every row as wide as the header."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CortexError(f"{name}: not UTF-8 text, so not a CSV table") from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise CortexError(f"{name}: NUL byte on line {line}, so not a CSV table")
    first = text.split("\n", 1)[0]
    delimiter = "\t" if "\t" in first and "," not in first else ","  # TSV read as CSV is
    try:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row]
    except csv.Error as exc:
        raise CortexError(f"{name}: malformed CSV ({exc})") from None
    if not rows:
        raise CortexError(f"{name}: empty CSV (expected a header row and data rows)")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    if not body:
        raise CortexError(f"{name}: CSV has a header but no data rows")
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise CortexError(f"{name}: line {number} has {len(row)} fields, the header has "
                              f"{len(header)}")
    _check_names(header, name)
    return header, [[cell.strip() for cell in row] for row in body]


def parse_csv(data: bytes, name: str, categorical_columns: Iterable[str] = ()) -> Table:
    """A :class:`Table` from CSV bytes with a header row (typing rules in the module doc)."""
    header, body = csv_cells(data, name)
    declared = set(categorical_columns)
    unknown = sorted(declared - set(header))
    if unknown:
        raise CortexError(f"{name}: categorical column(s) {unknown} are not in the header "
                          f"({', '.join(header)})")
    columns: dict[str, np.ndarray] = {}
    levels: dict[str, list[str]] = {}
    for j, column in enumerate(header):
        cells = [row[j] for row in body]
        if column in declared:
            columns[column], levels[column] = categorical(cells)
            continue
        ints = [_parse_int(c) for c in cells]
        if all(v is not None for v in ints):
            if all(-2**63 <= v < 2**63 for v in ints):
                columns[column] = np.array(ints, dtype=np.int64)
                continue
        floats = [_parse_float(c) for c in cells]
        bad = [i for i, v in enumerate(floats) if v is None]
        if not bad:
            columns[column] = np.array(floats, dtype=np.float64)
        elif len(bad) == len(cells) - sum(c == "" for c in cells):  # no cell is a number
            columns[column], levels[column] = categorical(cells)
        else:
            i = bad[0]
            raise CortexError(f"{name}: line {i + 2}, column '{column}': '{cells[i]}' is not a "
                              f"number, but {len(cells) - len(bad)} other cells are (fix the "
                              "cell, or declare the column categorical)")
    return Table(columns, levels, name, csv=True)


def to_csv(table: Table, delimiter: str = ",") -> bytes:
    """CSV bytes with a header (TSV with ``delimiter="\\t"``); categorical columns written back
    as their level strings."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", delimiter=delimiter)
    writer.writerow(table.names)
    texts = [table.strings(n) for n in table.names]
    for row in zip(*texts):
        writer.writerow(row)
    return out.getvalue().encode("utf-8")


# ---------------------------------------------------------------------------------------------
# artifacts

def to_tensors(table: Table) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """(tensors, metadata extras) of a table artifact: one tensor per column."""
    if not table.columns:
        raise CortexError(f"{table.source}: a table needs at least one column")
    _check_names(table.names, table.source)
    tensors = {}
    for n, col in table.columns.items():
        col = np.ascontiguousarray(col)
        if col.dtype.kind not in "biuf":
            raise CortexError(f"{table.source}: column '{n}' has dtype {col.dtype}; store text "
                              "columns as categorical codes")
        tensors[n] = col
    extra: dict[str, object] = {COLUMNS_KEY: table.names}
    if table.levels:
        extra[LEVELS_KEY] = {n: table.levels[n] for n in table.names if n in table.levels}
    return tensors, extra


def from_artifact(artifact) -> Table:
    """A :class:`Table` from a decoded ``table`` artifact (either schema)."""
    name = artifact.source
    tensors = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v)
               for k, v in artifact.tensors.items()}
    try:
        order = artifact.meta_json(COLUMNS_KEY)
        levels = artifact.meta_json(LEVELS_KEY, {}) or {}
    except json.JSONDecodeError:
        raise CortexError(f"{name}: table metadata is not valid JSON") from None
    if artifact.version in (None, "1") and set(tensors) == {"data"}:
        return from_matrix(tensors["data"], order, name)
    if order is None:
        order = sorted(tensors)
    if not isinstance(order, list) or sorted(map(str, order)) != sorted(tensors):
        raise CortexError(f"{name}: table metadata lists columns {order}, the file holds "
                          f"tensors {sorted(tensors)}")
    if not isinstance(levels, dict):
        raise CortexError(f"{name}: table levels must map column names to lists")
    for col, lev in levels.items():
        if col not in tensors or not isinstance(lev, list):
            raise CortexError(f"{name}: malformed levels for column '{col}'")
        codes = tensors[col]
        if codes.dtype.kind not in "iu" or (codes.size and (codes.min() < 0
                                                            or codes.max() >= len(lev))):
            raise CortexError(f"{name}: categorical column '{col}' holds codes outside its "
                              f"{len(lev)} levels")
    return Table({n: tensors[n].reshape(-1) if tensors[n].ndim == 0 else tensors[n]
                  for n in order}, {k: [str(x) for x in v] for k, v in levels.items()}, name)


def _register_schema() -> None:
    from cortexkit.formats.schema import Schema, register

    # columns are checked by from_artifact; the schema refuses versions from a newer cortexkit
    register(Schema(TABLE_KIND, version=int(TABLE_VERSION)))


_register_schema()


def encode_table(table: Table, fmt: str) -> bytes:
    """The bytes of ``table`` in ``fmt``: ``csv``/``tsv`` (categories as their level strings),
    ``npy`` (one (rows, columns) array; categories as codes), ``npz`` (one array per column),
    ``yaml``/``json`` (a mapping of column name -> list of values)."""
    from cortexkit.formats import tables as raw

    if fmt in ("csv", "tsv"):
        return to_csv(table, delimiter="," if fmt == "csv" else "\t")
    if fmt == "npy":
        arrays = [np.asarray(table.columns[n]) for n in table.names]
        return raw.write_npy(np.stack(arrays, axis=1).astype(np.result_type(*arrays)))
    if fmt == "npz":
        return raw.write_npz({n: np.asarray(c) for n, c in table.columns.items()})
    if fmt in ("yaml", "json"):
        from cortexkit.formats.report import to_json, to_yaml

        data = {n: (table.strings(n) if n in table.levels else table.columns[n].tolist())
                for n in table.names}
        return (to_json(data) if fmt == "json" else to_yaml(data, flow=False)).encode("utf-8")
    raise CortexError(f"no table format '{fmt}'")


def from_tensors(tensors: dict, source: str = "<artifact>") -> Table:
    """A wide table of an artifact's tensors when they share their first dimension (rows): a
    1-D tensor is one column ``name``, an (rows, k, ...) tensor the columns ``name[j]``
    (``name[j][l]`` ...). Anything else is an error naming ``cortexkit convert``."""
    arrays = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in tensors.items()}
    rows = {a.shape[0] if a.ndim else None for a in arrays.values()}
    if len(rows) != 1 or None in rows:
        shapes = ", ".join(f"{k} {list(a.shape)}" for k, a in sorted(arrays.items()))
        raise CortexError(f"{source}: its tensors ({shapes}) do not share a row count, so they "
                          "make no one table; write safetensors (-o FILE.st) and take one out "
                          "with 'cortexkit convert FILE.st --tensor NAME OUT.csv'")
    columns: dict[str, np.ndarray] = {}
    for name in sorted(arrays):
        array = arrays[name]
        if array.ndim == 1:
            columns[name] = array
            continue
        flat = array.reshape(array.shape[0], -1)
        for j, index in enumerate(np.ndindex(*array.shape[1:])):
            columns[name + "".join(f"[{i}]" for i in index)] = flat[:, j]
    return Table(columns, {}, source)


def write_table(target: str | os.PathLike | None, table: Table, *, producer: str = "",
                config: dict | None = None, metadata: dict | None = None) -> None:
    """Write ``table`` in the format its name promises (``.csv``, ``.tsv``, ``.npy``, ``.npz``,
    ``.yaml``, ``.json``), else as a ``table`` artifact (atomically, or to stdout for ``-``)."""
    from cortexkit.formats.artifact import write_artifact
    from cortexkit.formats.stdio import TEXT_FORMATS, suffix_format, write_bytes

    fmt = suffix_format(target)
    if fmt != "safetensors":
        write_bytes(target, encode_table(table, fmt), binary=fmt not in TEXT_FORMATS)
        return
    tensors, extra = to_tensors(table)
    write_artifact(target, tensors, TABLE_KIND, version=TABLE_VERSION, producer=producer,
                   config=config, metadata={**(metadata or {}), **extra})


# ---------------------------------------------------------------------------------------------
# the one reader

def _from_arrays(arrays: dict, name: str) -> Table:
    """NPZ-style arrays as a table: one 2-D array is split into columns ``c0..``, else every
    array is a 1-D column named by its key."""
    if len(arrays) == 1 and next(iter(arrays.values())).ndim == 2:
        return from_matrix(next(iter(arrays.values())), None, name)
    shapes = {k: list(v.shape) for k, v in arrays.items()}
    if any(v.ndim != 1 for v in arrays.values()):
        raise CortexError(f"{name}: a table holds 1-D columns or one 2-D array (shapes {shapes})")
    return Table(dict(arrays), {}, name)


def parse_table(data: bytes, name: str, *, categorical_columns: Iterable[str] = (),
                fmt: str = "auto") -> Table:
    """A :class:`Table` from bytes of CSV, NPY, NPZ or a table artifact (``fmt`` or sniffed)."""
    from cortexkit.formats import tables as raw

    if not data:
        raise CortexError(f"{name}: empty input, expected a table (CSV, NPY, NPZ or artifact)")
    fmt = raw.sniff(data) if fmt == "auto" else fmt
    declared = list(categorical_columns)
    if fmt == "csv":
        return parse_csv(data, name, declared)
    if fmt == "npy":
        table = from_matrix(raw.read_npy(data, name), None, name)
    elif fmt == "npz":
        table = _from_arrays(raw.read_npz(data, name), name)
    elif fmt == "safetensors":
        from cortexkit.formats.artifact import check_kind, decode

        artifact = decode(data, name, framework="np")
        if artifact.kind == ARRAYS_KIND:  # convert's NPY/NPZ artifact: read as NPZ is
            table = _from_arrays(dict(artifact.tensors), name)
        else:
            if artifact.version not in (None, "1", TABLE_VERSION) and artifact.kind == TABLE_KIND:
                raise CortexError(f"{name}: table schema version {artifact.version} was written "
                                  "by a newer cortexkit; upgrade cortexkit")
            check_kind(artifact, TABLE_KIND)
            table = from_artifact(artifact)
    else:
        raise CortexError(f"{name}: unknown table format '{fmt}'")
    for col in declared:
        table.require([col])
        if col not in table.levels:
            codes, levels = table.codes(col)
            table.columns[col], table.levels[col] = codes, levels
    return table


def read_table(source: str | os.PathLike | None, *, categorical_columns: Iterable[str] = (),
               fmt: str = "auto") -> Table:
    """Read a table from a path or stdin (``-``): CSV, NPY, NPZ or a ``table`` artifact."""
    from cortexkit.formats.stdio import display_name, read_bytes

    return parse_table(read_bytes(source), display_name(source),
                       categorical_columns=categorical_columns, fmt=fmt)
