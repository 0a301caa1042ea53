"""``--config FILE.yaml``: option values from a YAML mapping, converted by each option's own type
as strictly as on the command line, and the name each option has there."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import yaml

from cortexkit.cli.options import META_PARAMS, Int
from cortexkit.formats.errors import CortexError


def find_config_arg(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg == "--":
            return None
        if arg == "--config" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def load_config_file(path: str, command: click.Command) -> dict[str, Any]:
    """Read a ``--config`` YAML file into a default map keyed by parameter name.

    Values are converted by the option's own type, as strictly as on the command line: a list
    or mapping where one value belongs, ``2.5`` for an integer, ``yes`` for a number are errors
    naming the file and the key."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise CortexError(f"--config {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CortexError(f"--config {path}: not UTF-8 text, so not a YAML config") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CortexError(f"--config {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CortexError(f"--config {path}: expected a mapping of option names to values")
    params = {config_key(p): p for p in command.params if p.name not in META_PARAMS}
    resolved = {}
    for key, value in data.items():
        param = params.get(str(key).lstrip("-").replace("_", "-"))
        if param is None:
            names = ", ".join(sorted(params))
            raise click.UsageError(f"--config {path}: unknown option '{key}' (known: {names})")
        resolved[param.name] = _config_value(path, key, param, value)
    return resolved


def _config_value(path: str, key: Any, param: click.Parameter, value: Any) -> Any:
    """One config value checked and converted by its parameter's type."""
    where = f"--config {path}: {key}"
    many = param.multiple or (param.nargs != 1)
    if value is None:
        return None
    if many:
        if not isinstance(value, list):
            value = [value]
        items = value
    else:
        if isinstance(value, (list, tuple, dict)):
            raise click.UsageError(f"{where}: expected one value, got a "
                                   f"{'mapping' if isinstance(value, dict) else 'list'}")
        items = [value]
    if isinstance(param, click.Option) and param.is_flag and not isinstance(value, bool):
        raise click.UsageError(f"{where}: expected true or false, got {value!r}")
    kind = param.type
    for item in items:
        if isinstance(item, (list, dict)):
            raise click.UsageError(f"{where}: expected a value, got {item!r}")
        if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
            if isinstance(item, bool) or isinstance(item, str) and not item.strip():
                raise click.UsageError(f"{where}: expected a number, got {item!r}")
            if isinstance(kind, click.types.IntParamType) and isinstance(item, float) \
                    and not isinstance(kind, Int) and item != int(item):
                raise click.UsageError(f"{where}: expected an integer, got {item!r}")
        if isinstance(kind, click.types.StringParamType) and isinstance(item, bool):
            raise click.UsageError(f"{where}: expected text, got {item!r} (quote it)")
        try:
            kind.convert(str(item) if isinstance(kind, click.Choice) else item, param, None)
        except click.BadParameter as exc:
            raise click.UsageError(f"{where}: {exc.format_message()}") from None
    if isinstance(param.type, click.Choice):
        return [str(v) for v in value] if many else str(value)
    return value


def config_key(param: click.Parameter) -> str:
    """The name a parameter has in config files: its long option without dashes (or its name)."""
    if isinstance(param, click.Option):
        longs = [opt[2:] for opt in param.opts if opt.startswith("--")]
        if longs:
            return longs[0]
    return (param.name or "").replace("_", "-")
