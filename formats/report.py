"""YAML reports: machine-readable first, readable second."""

from __future__ import annotations

import math
import os
from typing import Any

import yaml

from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import suffix_format, write_text


def plain(obj: Any) -> Any:
    """Turn numpy/torch scalars and arrays, tuples and paths into plain YAML-able values."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, (str, bool, int)) or obj is None:
        return obj
    if isinstance(obj, float):  # np.float64 is a float subclass that safe_dump cannot write
        return float(obj) if not math.isnan(obj) else None
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    tolist = getattr(obj, "tolist", None)  # numpy arrays and scalars, torch tensors
    if tolist is not None:
        return plain(tolist())
    item = getattr(obj, "item", None)
    if item is not None:
        return plain(item())
    return str(obj)


class _ReportDumper(yaml.SafeDumper):
    """Mappings always in block style; lists of scalars (shapes, small vectors) on one line."""


def _represent_dict(dumper, data):
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False)


def _represent_list(dumper, data):
    flat = all(not isinstance(v, (dict, list)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_ReportDumper.add_representer(dict, _represent_dict)
_ReportDumper.add_representer(list, _represent_list)


def to_yaml(obj: Any, flow: bool | None = None) -> str:
    """YAML text: block mappings, one-line lists of scalars; ``flow=False`` for all-block."""
    if flow is False:
        return yaml.safe_dump(plain(obj), sort_keys=False, default_flow_style=False, width=100)
    return yaml.dump(plain(obj), Dumper=_ReportDumper, sort_keys=False, width=100)


def to_json(obj: Any) -> str:
    """JSON text of a report (NaN as null, as in YAML)."""
    import json

    def finite(value):  # JSON has no inf: written as the strings "inf" / "-inf"
        if isinstance(value, float) and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, list):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(plain(obj)), indent=2, allow_nan=False) + "\n"


def report_table(obj: Any):
    """A report that is a table, as a :class:`~cortexkit.formats.table.Table`: a list of flat
    records (per-epoch logs) or a mapping of equal-length lists of scalars; else None."""
    from cortexkit.formats.table import Table

    import numpy as np

    data = plain(obj)
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        names: list[str] = []
        for record in data:
            names += [k for k in record if k not in names]
        data = {n: [r.get(n) for r in data] for n in names}
    if not isinstance(data, dict) or not data:
        return None
    lengths = {len(v) if isinstance(v, list) else -1 for v in data.values()}
    if len(lengths) != 1 or -1 in lengths:
        return None
    columns, levels = {}, {}
    for name, values in data.items():
        if any(isinstance(v, (dict, list)) for v in values):
            return None
        if all(isinstance(v, (int, float, bool)) or v is None for v in values):
            columns[name] = np.array([np.nan if v is None else v for v in values],
                                     dtype=np.float64 if any(isinstance(v, float) or v is None
                                                             for v in values) else np.int64)
        else:
            texts = ["" if v is None else str(v) for v in values]
            levels[name] = sorted(set(texts))
            columns[name] = np.array([levels[name].index(t) for t in texts], dtype=np.int64)
    return Table(columns, levels, "<report>")


def write_report(obj: Any, target: str | os.PathLike | None = "-") -> None:
    """Write a report to a file (atomically) or stdout: JSON when the name ends in ``.json``,
    else YAML; a report that is a table (:func:`report_table`, e.g. a per-epoch log) also to
    ``.csv``/``.tsv``/``.npy``/``.npz``. Any other report given such a name is an error (the
    CLI base refuses ``-o`` before any work: :func:`check_report_target`)."""
    fmt = suffix_format(target)
    if fmt in ("csv", "tsv", "npy", "npz"):
        table = report_table(obj)
        if table is None:
            check_report_target(target, "")
        from cortexkit.formats.stdio import write_bytes
        from cortexkit.formats.table import encode_table

        write_bytes(target, encode_table(table, fmt), binary=fmt in ("npy", "npz"))
        return
    write_text(target, to_json(obj) if fmt == "json" else to_yaml(obj))


def check_report_target(target: str | os.PathLike | None, what: str = "-o") -> None:
    """A report is YAML or JSON: refuse a name that promises another format."""
    fmt = suffix_format(target)
    if fmt not in ("safetensors", "yaml", "json"):
        raise CortexError(f"{what} {target}".strip() + f": a report is YAML or JSON, not "
                          f"{fmt.upper()}; name the file .yaml or .json")


def read_yaml_file(path: str | os.PathLike, where: str, expect: type | None = dict,
                   what: str = "a mapping") -> Any:
    """A YAML file given to an option (``--limits FILE``, ``--prior FILE``), parsed, or a one-line
    error that starts with ``where`` (the option and its value): unreadable, not YAML, or not
    ``expect`` (an empty file reads as an empty ``expect``)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise CortexError(f"{where}: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CortexError(f"{where}: not valid YAML ({first})") from None
    if data is None and expect is not None:
        data = expect()
    if expect is not None and not isinstance(data, expect):
        raise CortexError(f"{where}: expected {what}, got {type(data).__name__}")
    return data
