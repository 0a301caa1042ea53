"""Readers of dp-fairness-train's own inputs: tables as columns of cells, constraint spec files."""
from __future__ import annotations

from pathlib import Path

from cortexkit.formats.errors import CortexError

BUILTIN_CONSTRAINTS = ("demographic-parity", "equalized-odds", "fnr", "none")


def read_columns(source) -> dict[str, list[str]]:
    """A CSV table (path or ``-``) as column name -> (rows,) cell strings."""
    from cortexkit.formats.stdio import display_name, read_bytes
    from cortexkit.formats.tables import read_csv_columns

    _, columns = read_csv_columns(read_bytes(source), display_name(source))
    return columns


def read_constraint_spec(constraint: str):
    """The parsed YAML mapping of a ``--constraint FILE`` (None for a built-in constraint name)."""
    import yaml

    if constraint in BUILTIN_CONSTRAINTS:
        return None
    path = Path(constraint)
    if not path.is_file():
        raise CortexError(f"--constraint {constraint!r}: not one of {', '.join(BUILTIN_CONSTRAINTS)} "
                          "and not a YAML file")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise CortexError(f"{constraint}: not valid YAML ({str(exc).splitlines()[0]})") from None
