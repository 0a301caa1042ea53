"""YAML reports: machine-readable first, readable second."""

from __future__ import annotations

import math
import os
from typing import Any

import yaml

from cortexkit.formats.stdio import write_text


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


def write_report(obj: Any, target: str | os.PathLike | None = "-") -> None:
    """Write a report as YAML to a file (atomically) or stdout."""
    write_text(target, to_yaml(obj))
