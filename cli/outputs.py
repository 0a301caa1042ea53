"""What a command writes, checked before any work: every output path can be written, its name
promises a format the command writes (DESIGN.md: an output's suffix is a promise), and no two
outputs are one file."""

from __future__ import annotations

import os
from typing import Callable

import click

from cortexkit.cli.options import OutputPath
from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import check_target


def output_option(*decls: str, **kwargs) -> Callable:
    """``click.option`` for a secondary output file (``--scores``, ``--plot``, ``--log``):
    type :class:`OutputPath`, metavar PATH, checked before the work starts."""
    kwargs.setdefault("metavar", "PATH")
    kwargs.setdefault("default", None)
    return click.option(*decls, type=OutputPath(dash=kwargs.pop("dash", False)), **kwargs)


def _output_label(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        if "-o" in param.opts:
            return "-o"
        longs = [o for o in param.opts if o.startswith("--")]
        return longs[0] if longs else param.opts[0]
    return ""  # an argument: the path alone names it


def output_kind(ctx: click.Context) -> str | None:
    """What the command's ``-o`` receives: ``artifact``, ``table`` or ``report`` (or None), as
    the verb declared it (a callable of the parameters when an option decides)."""
    writes = getattr(ctx.command, "writes", None)
    return writes(ctx.params) if callable(writes) else writes


def check_suffix(ctx: click.Context) -> None:
    """Before any work: ``-o``'s name promises a format this command can write (DESIGN.md: an
    output's suffix is a promise)."""
    from cortexkit.formats.report import check_report_target
    from cortexkit.formats.stdio import suffix_format

    target = ctx.params.get("output")
    kind = output_kind(ctx)
    if target is None or kind is None:
        return
    if kind == "report":
        check_report_target(target)
        return
    fmt = suffix_format(target)
    if kind == "artifact" and fmt != "safetensors":
        stem = os.path.splitext(str(target))[0]
        raise CortexError(f"-o {target}: this command writes a safetensors artifact, which has no "
                          f"{fmt.upper()} form; write -o {stem}.st, then take its tensors out with "
                          f"'cortexkit convert {stem}.st {target}'")


def check_outputs(ctx: click.Context) -> None:
    """Before any work: every declared output path can be written, its name promises a format
    the command writes, and no two are one file."""
    check_suffix(ctx)
    seen: dict[str, str] = {}
    for param in ctx.command.params:
        if not isinstance(param.type, OutputPath):
            continue
        value = ctx.params.get(param.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        label = _output_label(param)
        for one in values:
            if one is None or (one == "-" and param.default == "-"):
                continue  # stdout by default: not a clash with an output given explicitly
            check_target(one, label)
            key = "-" if one == "-" else os.path.realpath(one)
            special = key != "-" and os.path.exists(key) and not os.path.isfile(key)
            if key in seen and not special:
                raise CortexError(f"{label} {one}".strip() + f": the same file as {seen[key]}; give each "
                                  "output its own path")
            seen[key] = f"{label} {one}".strip()
