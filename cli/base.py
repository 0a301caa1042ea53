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
"""

from __future__ import annotations

import functools
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import click
import yaml

from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import check_binary_target

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
# Options that steer a run but are not part of its configuration.
META_PARAMS = ("config", "print_config", "quiet", "verbose", "debug", "output")
TORCH_PARAMS = ("seed", "device", "threads")
OUTPUT_KINDS = ("artifact", "report", None)


class Failure(Exception):
    """An error raised while a command ran, tagged with the command's path for the message."""

    def __init__(self, command_path: str, error: BaseException):
        super().__init__(str(error))
        self.command_path = command_path
        self.error = error


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
    """Read a ``--config`` YAML file into a default map keyed by parameter name."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as exc:
        raise CortexError(f"--config {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CortexError(f"--config {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CortexError(f"--config {path}: expected a mapping of option names to values")
    known = {config_key(p): p.name for p in command.params if p.name not in META_PARAMS}
    resolved = {}
    for key, value in data.items():
        name = known.get(str(key).lstrip("-").replace("_", "-"))
        if name is None:
            names = ", ".join(sorted(known))
            raise click.UsageError(f"--config {path}: unknown option '{key}' (known: {names})")
        resolved[name] = value
    return resolved


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
    def read_artifact(self, source, kind=None, *, framework: str = "pt", max_version=None):
        from cortexkit.formats.artifact import read_artifact

        return read_artifact(source, kind, framework=framework, max_version=max_version)

    def write_artifact(self, tensors: dict, kind: str, *, metadata: dict | None = None,
                       version: str = "1", target=None) -> None:
        """Write an artifact (to ``-o`` unless ``target``) with producer and config stamped in."""
        from cortexkit.formats.artifact import write_artifact

        write_artifact(self.output if target is None else target, tensors, kind, version=version,
                       producer=self.producer, config=self.config, metadata=metadata)

    def write_report(self, report: Any, target=None) -> None:
        """Write a YAML report (to ``-o`` unless ``target``)."""
        from cortexkit.formats.report import write_report

        write_report(report, self.output if target is None else target)


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
        options.append(click.option("-o", "--output", default="-", show_default=True,
                                    metavar="PATH", help=f"Where to write the {what} (- = stdout)."))
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
        for name in META_PARAMS + TORCH_PARAMS:  # these live on the Run
            kwargs.pop(name, None)
        func(Run(ctx), **kwargs)
        return None

    return callback


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
