"""Readers of dp-fairness-train's own inputs: tables as columns of cells, constraint spec files."""
from __future__ import annotations

from pathlib import Path

from cortexkit.formats.errors import CortexError

BUILTIN_CONSTRAINTS = ("demographic-parity", "equalized-odds", "fnr", "none")


class Columns(dict):
    """A table as column name -> (rows,) cell strings, what the encoder reads; ``categorical``
    names the columns the table itself declares categorical (coded columns with levels)."""

    def __init__(self, columns=(), categorical=(), source: str = "<table>"):
        super().__init__(columns)
        self.categorical = set(categorical)
        self.source = source


def as_columns(table) -> Columns:
    """A formats.table.Table (or a plain mapping of cell lists) as :class:`Columns`."""
    if isinstance(table, Columns):
        return table
    if hasattr(table, "strings") and hasattr(table, "levels"):
        return Columns({name: table.strings(name) for name in table.names}, table.levels, table.source)
    return Columns({k: [str(v) for v in vals] for k, vals in table.items()})


def read_columns(source, categorical=()) -> Columns:
    """A table (CSV, NPY/NPZ or table artifact; path or ``-``) read by formats.table.read_table,
    as :class:`Columns`; ``categorical`` declares numerically coded columns categorical."""
    from cortexkit.formats.table import read_table

    return as_columns(read_table(source, categorical_columns=list(categorical)))


def read_constraint_spec(constraint: str):
    """The parsed YAML of a ``--constraint FILE`` (None for a built-in constraint name)."""
    from cortexkit.formats.report import read_yaml_file

    if constraint in BUILTIN_CONSTRAINTS:
        return None
    path = Path(constraint)
    if not path.is_file():
        raise CortexError(f"--constraint {constraint!r}: not one of {', '.join(BUILTIN_CONSTRAINTS)} "
                          "and not a YAML file")
    return read_yaml_file(path, constraint, expect=None)
