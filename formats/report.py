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


def write_report(obj: Any, target: str | os.PathLike | None = "-") -> None:
    """Write a report to a file (atomically) or stdout: JSON when the name ends in ``.json``,
    else YAML. A name that promises a table format (``.csv``, ``.npy``, ...) is refused: the
    CLI base refuses it before any work (:func:`check_report_target`)."""
    check_report_target(target)
    fmt = suffix_format(target)
    write_text(target, to_json(obj) if fmt == "json" else to_yaml(obj))


def check_report_target(target: str | os.PathLike | None, what: str = "-o") -> None:
    """A report is YAML or JSON: refuse a name that promises another format."""
    fmt = suffix_format(target)
    if fmt not in ("safetensors", "yaml", "json"):
        raise CortexError(f"{what} {target}: a report is YAML or JSON, not {fmt.upper()}; name "
                          "the file .yaml or .json")
