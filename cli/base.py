"""The shared base of every cortexkit command: one grammar, written once.

A tool module builds its commands with :func:`tool_group` and :func:`verb` (top-level glue
commands with :func:`command`). The base gives each of them

* ``--config FILE.yaml`` (keys are option names; the command line wins), ``--print-config``;
* ``-q/--quiet``, ``-v/--verbose``, ``--debug``;
* ``-o/--output`` (``-`` = stdout, the default) when the command writes something;
* ``--seed``, ``--device``, ``--threads`` when the command uses torch;
* one-line errors ``cortexkit TOOL VERB: error: ...`` with exit 1 (usage errors exit 2);
* a :class:`Run` handed to the function as its first argument, which owns I/O, messages,
  progress bars, random generators and the resolved configuration.

Nothing here imports torch at module import time: ``--help`` must stay fast.

How a tool declares its outputs
-------------------------------
Every file a verb writes is declared as an option (or argument) of type :class:`OutputPath`,
most simply with :func:`output_option`::

    @verb(group, "score", output="report")
    @click.argument("model_file", metavar="MODEL")
    @output_option("--scores", "scores_path", metavar="PATH", help="Per-row scores artifact.")
    @output_option("--plot", metavar="PNG", help="Histogram of the scores (needs matplotlib).")
    def score(run, model_file, scores_path, plot): ...

The base then, before the verb body runs, checks ``-o`` and every given output path: its
folder exists and lets us create files, it is not a folder, no two outputs are the same file.
Inside the body write only through the :class:`Run`: ``run.write_artifact(...)``,
``run.write_report(...)``, ``run.write_table(...)``, ``run.write_bytes(...)``,
``run.write_figure(fig, plot)``, or, for a library that writes a file itself,
``with run.output_file(path) as tmp: library.save(tmp)``. Every write is staged and all of them
are committed together when the verb returns: a verb that fails (error, Ctrl-C, SIGTERM,
SIGHUP) leaves none of its outputs and no temporary files. What must survive a failure (a
checkpoint, the finished part of a failed run) is written with ``now=True``.

Numbers: use :class:`Float` and :class:`Int` (or the ready ones, :data:`POSITIVE`,
:data:`NONNEGATIVE`, :data:`UNIT`, :data:`POSITIVE_INT`, :data:`COUNT`) and declare the range
the method needs: NaN and inf are refused always (``Float(allow_inf=True)`` for an "unbounded"
default; a plain ``float`` or ``click.FloatRange`` option is made finite by the base anyway),
bounds are shown in ``--help``, and config-file values are converted just as strictly
(``num: 2.5`` for an integer is an error).
Requests whose size is known up front go through :func:`check_memory` / :func:`check_time`.
"""

from __future__ import annotations

import functools
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import click
import yaml

from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import check_binary_target, check_target

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
# Options that steer a run but are not part of its configuration.
META_PARAMS = ("help_all", "config", "print_config", "quiet", "verbose", "debug", "output")
TORCH_PARAMS = ("seed", "device", "threads")
OUTPUT_KINDS = ("artifact", "report", None)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwind like Ctrl-C (staged outputs removed), then exit
    128 + signum with one line ``cortexkit TOOL VERB: terminated``."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Failure(Exception):
    """An error raised while a command ran, tagged with the command's path for the message."""

    def __init__(self, command_path: str, error: BaseException):
        super().__init__(str(error))
        self.command_path = command_path
        self.error = error


# ---------------------------------------------------------------------------------------------
# option types

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


class Count(Int):
    """A number of things the command will hold in memory (samples, simulations): refused at
    parse time, with the estimate, when ``bytes_each`` per item already exceeds the memory the
    machine has available (``sample -n 10000000000``), instead of failing deep in an allocator."""

    def __init__(self, min: int = 1, max: int | None = None, *, bytes_each: int = 8,
                 what: str = "items"):
        super().__init__(min, max)
        self.bytes_each = bytes_each
        self.what = what

    def convert(self, value, param, ctx):
        count = super().convert(value, param, ctx)
        try:
            check_memory(f"{count} {self.what}", count * self.bytes_each)
        except CortexError as exc:
            self.fail(str(exc), param, ctx)
        return count


POSITIVE = Float(min=0, min_open=True)
NONNEGATIVE = Float(min=0)
UNIT = Float(0, 1)
POSITIVE_INT = Int(min=1)
COUNT = Int(min=0)


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


def check_outputs(ctx: click.Context) -> None:
    """Before any work: every declared output path can be written, and no two are one file."""
    seen: dict[str, str] = {}
    for param in ctx.command.params:
        if not isinstance(param.type, OutputPath):
            continue
        value = ctx.params.get(param.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        label = _output_label(param)
        for one in values:
            if one is None:
                continue
            check_target(one, label)
            key = "-" if one == "-" else os.path.realpath(one)
            special = key != "-" and os.path.exists(key) and not os.path.isfile(key)
            if key in seen and not special:
                raise CortexError(f"{label} {one}".strip() + f": the same file as {seen[key]}; give each "
                                  "output its own path")
            seen[key] = f"{label} {one}".strip()


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


# ---------------------------------------------------------------------------------------------
# click classes

def _find_config_arg(args: list[str]) -> str | None:
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


class CortexCommand(click.Command):
    """A click command with the cortexkit grammar (config files, print-config, errors)."""

    def __init__(self, *args, writes: str | None = None, uses_torch: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.writes = writes
        self.uses_torch = uses_torch

    def make_context(self, info_name, args, parent=None, **extra):
        path = " ".join(filter(None, [parent.command_path if parent else "cortexkit", info_name]))
        config_path = _find_config_arg(args)
        if config_path is not None:
            try:
                extra["default_map"] = load_config_file(config_path, self)
            except CortexError as exc:
                raise Failure(path, exc) from exc
            except click.UsageError as exc:
                exc.ctx = click.Context(self, info_name=info_name, parent=parent)
                raise
        if "--print-config" in args:  # a template needs no inputs
            for param in self.params:
                param.required = False
        return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.ClickException, Failure):
            raise
        except (Terminated, KeyboardInterrupt) as exc:
            raise Failure(ctx.command_path, exc) from exc
        except Exception as exc:  # noqa: BLE001 - every error becomes one line (see main)
            raise Failure(ctx.command_path, exc) from exc


class CortexGroup(click.Group):
    """A tool: a group of verbs sharing one name (``cortexkit sample-permutations fit``)."""

    command_class = CortexCommand


# ---------------------------------------------------------------------------------------------
# the run object

class Run:
    """What a running command gets: its configuration, I/O, messages and randomness."""

    def __init__(self, ctx: click.Context):
        command: CortexCommand = ctx.command  # type: ignore[assignment]
        self.command_path = ctx.command_path
        self.params = dict(ctx.params)
        self.config = resolved_config(ctx)
        self.output = ctx.params.get("output", "-")
        self.quiet = bool(ctx.params.get("quiet"))
        self.verbose = bool(ctx.params.get("verbose"))
        self.seed = ctx.params.get("seed")
        self.producer = shlex.join(["cortexkit", *sys.argv[1:]])
        self._device_name = ctx.params.get("device", "cpu")
        self._device = None
        if command.uses_torch:
            self._setup_torch(ctx.params.get("threads"))
            if self._device_name == "cuda":
                self.device  # noqa: B018 - --device cuda without CUDA fails now, not later

    # -- torch ------------------------------------------------------------------------------
    def _setup_torch(self, threads: int | None) -> None:
        import torch

        if threads:
            torch.set_num_threads(threads)
        if self.seed is not None:
            torch.manual_seed(self.seed)

    @property
    def device(self):
        """The torch device of ``--device`` (``auto`` = cuda when available, else cpu)."""
        if self._device is None:
            import torch

            name = self._device_name or "cpu"
            if name == "auto":
                name = "cuda" if torch.cuda.is_available() else "cpu"
            if name == "cuda" and not torch.cuda.is_available():
                raise CortexError("--device cuda: no CUDA device is available; use --device cpu")
            self._device = torch.device(name)
        return self._device

    def torch_generator(self, offset: int = 0):
        """A seeded CPU torch.Generator (``--seed`` plus ``offset``)."""
        import torch

        generator = torch.Generator()
        generator.manual_seed((self.seed or 0) + offset)
        return generator

    def numpy_rng(self, offset: int = 0):
        """A seeded numpy Generator (``--seed`` plus ``offset``)."""
        import numpy as np

        return np.random.default_rng((self.seed or 0) + offset)

    # -- messages ---------------------------------------------------------------------------
    def info(self, message: str) -> None:
        """A message for the user on stderr (silenced by ``-q``)."""
        if not self.quiet:
            click.echo(message, err=True)

    def detail(self, message: str) -> None:
        """A message shown only with ``-v`` (per-epoch metrics and the like)."""
        if self.verbose and not self.quiet:
            click.echo(message, err=True)

    def warn(self, message: str) -> None:
        click.echo(f"{self.command_path}: warning: {message}", err=True)

    def progress(self, iterable: Iterable | None = None, total: int | None = None,
                 desc: str | None = None, **kwargs):
        """A tqdm bar on stderr; off with ``-q`` or when stderr is not a terminal."""
        from tqdm.auto import tqdm

        disable = self.quiet or not sys.stderr.isatty()
        return tqdm(iterable, total=total, desc=desc, file=sys.stderr, disable=disable,
                    leave=False, dynamic_ncols=True, **kwargs)

    # -- artifacts and reports --------------------------------------------------------------
    def read_artifact(self, source, kind=None, *, framework: str = "pt", max_version=None,
                      check: bool = True):
        """Read an artifact, checking its kind and its registered schema (formats/schema.py)."""
        from cortexkit.formats.artifact import read_artifact

        return read_artifact(source, kind, framework=framework, max_version=max_version,
                             check=check)

    def write_artifact(self, tensors: dict, kind: str, *, metadata: dict | None = None,
                       version: str = "1", target=None, now: bool = False) -> None:
        """Write an artifact (to ``-o`` unless ``target``) with producer and config stamped in.

        Staged until the verb succeeds; ``now=True`` writes at once and keeps the file even if
        the verb then fails (checkpoints, the finished part of a failed run)."""
        from cortexkit.formats.artifact import write_artifact

        write_artifact(self.output if target is None else target, tensors, kind, version=version,
                       producer=self.producer, config=self.config, metadata=metadata, now=now)

    def write_report(self, report: Any, target=None) -> None:
        """Write a YAML report (to ``-o`` unless ``target``)."""
        from cortexkit.formats.report import write_report

        write_report(report, self.output if target is None else target)

    def write_table(self, table, target=None, *, metadata: dict | None = None) -> None:
        """Write a :class:`~cortexkit.formats.table.Table` as a ``table`` artifact."""
        from cortexkit.formats.table import write_table

        write_table(self.output if target is None else target, table, producer=self.producer,
                    config=self.config, metadata=metadata)

    def write_bytes(self, data: bytes, target=None, *, binary: bool = True,
                    now: bool = False) -> None:
        """Write raw bytes (CSV text, a format of the field) to ``-o`` unless ``target``."""
        from cortexkit.formats.stdio import write_bytes

        write_bytes(self.output if target is None else target, data, binary=binary, now=now)

    def output_file(self, target, suffix: str | None = None):
        """``with run.output_file(path) as tmp: library.save(tmp)``: a staged temporary path
        beside ``path`` (same extension) for libraries that write files themselves."""
        from cortexkit.formats.stdio import output_file

        return output_file(target, suffix)

    def write_figure(self, figure, target, **savefig_kwargs) -> None:
        """Save a matplotlib figure to ``target`` (format from its extension), staged."""
        with self.output_file(target) as tmp:
            figure.savefig(tmp, **savefig_kwargs)


def resolved_config(ctx: click.Context) -> dict[str, Any]:
    """The run's configuration: every option and argument except the meta ones."""
    from cortexkit.formats.report import plain

    return {config_key(param): plain(ctx.params[param.name]) for param in ctx.command.params
            if param.name in ctx.params and param.name not in META_PARAMS}


# ---------------------------------------------------------------------------------------------
# decorators

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


def _common_options(writes: str | None, uses_torch: bool) -> list[Callable]:
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
        what = "artifact" if writes == "artifact" else "YAML report"
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
                         hidden=True, help="torch CPU threads (0 = torch's default)."),
        ]
    return options


def _epilog(uses_torch: bool) -> str:
    torch_part = ", --device auto|cpu|cuda, --threads N" if uses_torch else ""
    return ("--help-all shows every option. Also: --config FILE.yaml, --print-config, -q, -v, --debug"
            + torch_part + " (man cortexkit).")


def _wrap(func: Callable, writes: str | None) -> Callable:
    @functools.wraps(func)
    def callback(**kwargs):
        ctx = click.get_current_context()
        if kwargs.get("print_config"):
            from cortexkit.formats.report import to_yaml

            click.echo(to_yaml(resolved_config(ctx), flow=False), nl=False)
            return None
        if writes == "artifact":
            check_binary_target(kwargs.get("output"))
        check_outputs(ctx)
        for name in META_PARAMS + TORCH_PARAMS:  # these live on the Run
            kwargs.pop(name, None)
        from cortexkit.formats.stdio import transaction

        with transaction():  # every write staged; all committed when func returns
            func(Run(ctx), **kwargs)
        return None

    return callback


def _make_finite(param: click.Parameter) -> None:
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


def _build(func: Callable, name: str, writes: str | None, uses_torch: bool, help: str | None,
           attach: Callable[..., Callable], advanced: tuple[str, ...] = ()) -> click.Command:
    if writes not in OUTPUT_KINDS:
        raise ValueError(f"writes must be one of {OUTPUT_KINDS}")
    callback = _wrap(func, writes)
    for option in reversed(_common_options(writes, uses_torch)):
        callback = option(callback)
    cmd = attach(name=name, cls=CortexCommand, writes=writes, uses_torch=uses_torch,
                 help=help or func.__doc__, epilog=_epilog(uses_torch),
                 context_settings=CONTEXT_SETTINGS)(callback)
    for param in cmd.params:
        _make_finite(param)
    options = {p.name: p for p in cmd.params if isinstance(p, click.Option)}
    unknown = sorted(set(advanced) - set(options))
    if unknown:
        raise ValueError(f"{name}: advanced names unknown options {unknown}")
    for key in advanced:
        options[key].hidden = True
    return cmd


def verb(group: click.Group, name: str, *, output: str | None = None, torch_options: bool = False,
         help: str | None = None, advanced: tuple[str, ...] = ()) -> Callable[[Callable], click.Command]:
    """Declare a verb of a tool. Put click arguments/options *below* this decorator.

    ``output`` is ``"artifact"`` (binary, never to a terminal), ``"report"`` (YAML) or None.
    ``torch_options`` adds ``--seed``, ``--device``, ``--threads`` and seeds torch.
    ``advanced`` names options (parameter names) left out of ``--help`` and shown by ``--help-all``
    and the man page: hyperparameters whose defaults are the method's published ones.
    """
    return lambda func: _build(func, name, output, torch_options, help, group.command, advanced)


def command(name: str, *, output: str | None = None, torch_options: bool = False,
            help: str | None = None, advanced: tuple[str, ...] = ()) -> Callable[[Callable], click.Command]:
    """Declare a top-level command (``cortexkit inspect``) with the same grammar as a verb."""
    return lambda func: _build(func, name, output, torch_options, help, click.command, advanced)


def require_matplotlib() -> None:
    """Fail before any work, in one line naming the extra, when ``--plot`` is asked without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CortexError("--plot needs matplotlib: pip install 'cortexkit[plot]'") from None


def tool_group(name: str, help: str) -> CortexGroup:
    """The click group of one tool; its verbs are declared with :func:`verb`."""
    return CortexGroup(name=name, help=help, context_settings=CONTEXT_SETTINGS)


def option_set(*decorators: Callable) -> Callable:
    """Several click options as one decorator (applied in the order written), for option groups
    that more than one verb shares."""
    def apply(func: Callable) -> Callable:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func
    return apply
