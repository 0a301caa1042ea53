"""Option types, size guards and the options every command shares (config files: :mod:`.config`).

Numbers: use :class:`Float` and :class:`Int` (or the ready ones, :data:`POSITIVE`,
:data:`NONNEGATIVE`, :data:`UNIT`, :data:`POSITIVE_INT`, :data:`COUNT`) and declare the range
the method needs: NaN and inf are refused always (``Float(allow_inf=True)`` for an "unbounded"
default; a plain ``float`` or ``click.FloatRange`` option is made finite by the base anyway),
bounds are shown in ``--help``, and config-file values are converted just as strictly
(``num: 2.5`` for an integer is an error). Requests whose size is known up front go through
:func:`check_memory` / :func:`check_time`. Files a verb writes are :class:`OutputPath` options.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import click

from cortexkit.formats.errors import CortexError

# Options that steer a run but are not part of its configuration.
META_PARAMS = ("help_all", "config", "print_config", "quiet", "verbose", "debug", "output")


def _not_a_scalar(value: Any) -> bool:
    return isinstance(value, (bool, list, tuple, dict, set))


class Float(click.FloatRange):
    """A finite float, optionally bounded (``Float(min=0, min_open=True)`` = positive).

    NaN is always refused, inf unless ``allow_inf``; booleans, lists and mappings (from a config
    file) are refused rather than coerced."""

    name = "float"

    def __init__(self, min: float | None = None, max: float | None = None, *,
                 min_open: bool = False, max_open: bool = False, allow_inf: bool = False):
        super().__init__(min, max, min_open=min_open, max_open=max_open)
        self.allow_inf = allow_inf

    def convert(self, value, param, ctx):
        if _not_a_scalar(value):
            self.fail(f"{value!r} is not a number", param, ctx)
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if math.isinf(number) and not self.allow_inf:
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class AutoFloat(Float):
    """A :class:`Float` that also takes ``auto`` (resolved by the verb from the data)."""

    name = "auto|float"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        return super().convert(value, param, ctx)


class OffFloat(Float):
    """A non-negative weight, or ``off`` (= 0, the term disabled)."""

    name = "off|float"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "off":
            return 0.0
        return super().convert(value, param, ctx)


class AutoOffFloat(OffFloat):
    """A non-negative weight, ``off`` (= 0), or ``auto`` (resolved by the verb from the data)."""

    name = "auto|off|float"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        return super().convert(value, param, ctx)


class Int(click.IntRange):
    """An integer, optionally bounded. Refuses 2.5 (also from a config file), booleans, lists;
    takes ``1e6`` and ``2.0`` (integral values written as floats)."""

    name = "integer"

    def __init__(self, min: int | None = None, max: int | None = None, *,
                 min_open: bool = False, max_open: bool = False):
        super().__init__(min, max, min_open=min_open, max_open=max_open)

    def convert(self, value, param, ctx):
        if _not_a_scalar(value):
            self.fail(f"{value!r} is not an integer", param, ctx)
        if isinstance(value, str):
            text = value.strip()
            try:
                value = int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    self.fail(f"{value!r} is not an integer", param, ctx)
                value = number
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value) or abs(value) > 2**53:
                self.fail(f"{value!r} is not an integer", param, ctx)
            value = int(value)
        return super().convert(value, param, ctx)


class Size(Int):
    """An integer that sizes memory or run time (samples, steps, widths, depths, codebooks).

    The one size guard of every verb: ``bytes`` and ``seconds`` are what the run needs, as a
    number per unit (``Size(bytes=16)``: 16 bytes per item) or as a function
    ``(value, params) -> estimate`` of the value and every other parameter of the verb (their
    defaults filled in), a lower bound of the real cost. The base checks every Size option once
    the whole command line is parsed, before any work, and refuses (usage error, exit 2) a
    request past the memory available or past ``limit`` seconds (24 hours), saying the estimate,
    instead of hanging or failing deep in an allocator. ``max`` is the hard sanity bound for
    sizes whose cost depends on a model read later (``evaluate --steps``)."""

    def __init__(self, min: int = 1, max: int | None = None, *, bytes: Any = None,
                 seconds: Any = None, what: str = "items", limit: float = 24 * 3600.0,
                 bytes_each: int | None = None):
        super().__init__(min, max)
        self.bytes = bytes_each if bytes is None else bytes
        self.seconds = seconds
        self.what = what
        self.limit = limit

    def estimate(self, value: int, params: dict) -> tuple[float, float]:
        """(bytes, seconds) a run with this value needs, from the declaration."""
        def one(cost):
            if cost is None or value is None:
                return 0.0
            if callable(cost):
                return float(cost(value, params))
            return float(cost) * value
        return one(self.bytes), one(self.seconds)

    def check(self, value: int, params: dict, *, alone: bool = False) -> None:
        """Refuse ``value`` when its estimate is past the machine or the time limit (``alone``:
        only the per-unit costs, which need no other parameter)."""
        if alone and (callable(self.bytes) or callable(self.seconds)):
            return
        nbytes, seconds = self.estimate(value, params)
        what = f"{value} {self.what}"
        check_memory(what, nbytes)
        check_time(what, seconds, self.limit)

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        try:  # per-unit costs are refused while parsing (the config file's values too)
            self.check(number, {}, alone=True)
        except CortexError as exc:
            self.fail(str(exc), param, ctx)
        return number


class AutoSize(Size):
    """A :class:`Size` that also takes ``auto`` (resolved by the verb from the data)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        return super().convert(value, param, ctx)

    def check(self, value, params: dict, *, alone: bool = False) -> None:
        if value != "auto":
            super().check(value, params, alone=alone)


def Count(min: int = 1, max: int | None = None, *, bytes_each: int = 8,
          what: str = "items") -> Size:
    """A number of things the command holds in memory (samples, simulations), ``bytes_each``
    each: refused with the estimate when it exceeds the memory available."""
    return Size(min, max, bytes=bytes_each, what=what)


def check_sizes(ctx: click.Context) -> None:
    """Every :class:`Size` option of the command checked against the machine and the time limit
    with all parameters known (the base calls this before the verb body runs)."""
    params = {p.name: ctx.params.get(p.name, p.default) for p in ctx.command.params}
    given = click.core.ParameterSource.DEFAULT
    # the options the user gave first, so the refusal names the one they asked too much of
    order = sorted(ctx.command.params, key=lambda p: ctx.get_parameter_source(p.name) == given)
    for param in order:
        if isinstance(param.type, Size) and ctx.params.get(param.name) is not None:
            try:
                param.type.check(ctx.params[param.name], params)
            except CortexError as exc:
                raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


POSITIVE = Float(min=0, min_open=True)


NONNEGATIVE = Float(min=0)


UNIT = Float(0, 1)


POSITIVE_INT = Int(min=1)


COUNT = Int(min=0)


class Regex(click.ParamType):
    """A regular expression, compiled while parsing: a broken one (``'(['``) is a usage error
    naming the option, not an internal error deep in the method. The value stays text."""

    name = "regex"

    def convert(self, value, param, ctx):
        import re

        if not isinstance(value, str):
            self.fail(f"{value!r} is not a regular expression", param, ctx)
        try:
            re.compile(value)
        except re.error as exc:
            self.fail(f"{value!r} is not a valid regular expression ({exc})", param, ctx)
        return value


class OutputPath(click.ParamType):
    """A path the command will write. The base checks it before the verb body runs (see the
    module docstring); ``dash`` lets ``-`` mean stdout."""

    name = "path"

    def __init__(self, dash: bool = False):
        self.dash = dash

    def convert(self, value, param, ctx):
        if not isinstance(value, (str, os.PathLike)) or isinstance(value, bool):
            self.fail(f"{value!r} is not a path", param, ctx)
        text = os.fspath(value)
        if text == "-" and not self.dash:
            self.fail("cannot be - (stdout); give a file path", param, ctx)
        if not text:
            self.fail("empty path", param, ctx)
        return text


def _physical_memory() -> int | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"


def check_memory(what: str, nbytes: float, limit: float | None = None) -> None:
    """Refuse up front a request (``what``: "-n 10000000000 samples") that needs more memory
    than the machine has available (or ``limit`` bytes), saying the estimate."""
    available = _physical_memory() if limit is None else limit
    if available is not None and nbytes > available:
        raise CortexError(f"{what} would need about {_bytes(nbytes)} of memory, more than the "
                          f"{_bytes(available)} available; ask for less")


def check_time(what: str, seconds: float, limit: float = 24 * 3600.0) -> None:
    """Refuse up front a request whose estimated run time is past ``limit`` seconds."""
    if seconds > limit:
        hours = seconds / 3600
        raise CortexError(f"{what} would take about {hours:.3g} hours (limit "
                          f"{limit / 3600:.3g}); ask for less")


def _show_all_options(ctx: click.Context, _param, value) -> None:
    """``--help-all``: the help text with every option, the advanced and run-steering ones too."""
    if not value or ctx.resilient_parsing:
        return
    hidden = [p for p in ctx.command.params if getattr(p, "hidden", False)]
    for p in hidden:
        p.hidden = False
    try:
        click.echo(ctx.get_help(), color=ctx.color)
    finally:
        for p in hidden:
            p.hidden = True
    ctx.exit()


def common_options(writes: str | None, uses_torch: bool) -> list[Callable]:
    """The options every command shares. The run-steering ones are hidden from ``--help`` (one
    epilog line names them, so help fits a screen) and listed in full in the man pages."""
    options = [
        click.option("--help-all", is_flag=True, is_eager=True, expose_value=False, hidden=True,
                     callback=_show_all_options, help="Show every option and exit."),
        click.option("--config", type=click.Path(dir_okay=False, allow_dash=True), default=None,
                     is_eager=True, hidden=True,
                     help="YAML file of option values (keys are option names); the command "
                          "line wins."),
        click.option("--print-config", is_flag=True, hidden=True,
                     help="Print the resolved configuration as YAML and exit."),
        click.option("-q", "--quiet", is_flag=True, hidden=True,
                     help="No messages or progress bars."),
        click.option("-v", "--verbose", is_flag=True, hidden=True,
                     help="More messages (per-epoch metrics)."),
        click.option("--debug", is_flag=True, hidden=True, help="Show a traceback on errors."),
    ]
    if writes is not None:
        what = {"artifact": "artifact", "table": "table (.csv, .npz, ... by name)",
                "either": "artifact or table"}.get(writes, "YAML report (.json: JSON)")
        options.append(click.option("-o", "--output", type=OutputPath(dash=True), default="-",
                                    show_default=True, metavar="PATH",
                                    help=f"Where to write the {what} (- = stdout)."))
    if uses_torch:
        options += [
            click.option("--seed", type=int, default=0, show_default=True,
                         help="Random seed: same inputs, seed and machine give identical bytes."),
            click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
                         show_default=True, hidden=True, help="Where torch runs."),
            click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
                         hidden=True,
                         help="torch CPU threads (0 = fit the machine: CPU affinity, "
                              "OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, the load; --print-config "
                              "shows the number used)."),
        ]
    return options


def epilog(uses_torch: bool) -> str:
    torch_part = ", --device auto|cpu|cuda, --threads N" if uses_torch else ""
    return ("--help-all shows every option. Also: --config FILE.yaml, --print-config, -q, -v, --debug"
            + torch_part + " (man cortexkit).")


def make_finite(param: click.Parameter) -> None:
    """Every float option of every verb refuses NaN (and inf, unless its default is inf): a
    plain ``float`` or ``click.FloatRange`` becomes the :class:`Float` of the same bounds."""
    kind = param.type
    if not isinstance(kind, click.types.FloatParamType) or isinstance(kind, Float):
        return
    default = param.default if not callable(param.default) else None
    unbounded = isinstance(default, float) and math.isinf(default)
    if isinstance(kind, click.FloatRange):
        param.type = Float(kind.min, kind.max, min_open=kind.min_open, max_open=kind.max_open,
                           allow_inf=unbounded)
    else:
        param.type = Float(allow_inf=unbounded)


def option_set(*decorators: Callable) -> Callable:
    """Several click options as one decorator (applied in the order written), for option groups
    that more than one verb shares."""
    def apply(func: Callable) -> Callable:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func
    return apply
