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

Option types (:class:`Float`, :class:`Int`, :class:`OutputPath`, the ready ranges), size
guards and config-file values live in :mod:`cortexkit.cli.options`.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

import click

from cortexkit.cli.config import find_config_arg, load_config_file
from cortexkit.cli.options import META_PARAMS, check_sizes, common_options, epilog, make_finite
from cortexkit.cli.outputs import check_outputs, output_kind, output_option  # noqa: F401 - API
from cortexkit.cli.run import Run, resolved_config  # noqa: F401 - API
from cortexkit.cli.threads import resolve_threads
from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import check_binary_target

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
TORCH_PARAMS = ("seed", "device", "threads")
OUTPUT_KINDS = ("artifact", "table", "report", None)

class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwind like Ctrl-C (staged outputs removed), then exit
    128 + signum with one line ``cortexkit TOOL VERB: terminated``."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

class Failure(Exception):
    """An error raised while a command ran, tagged with the command's path for the message."""

    def __init__(self, command_path: str, error: BaseException, warned: list[str] | None = None):
        super().__init__(str(error))
        self.command_path = command_path
        self.error = error
        self.warned = warned or []  # warnings (numpy's ...) that came before the error

    @property
    def note(self) -> str:
        """The warnings before the error, for the end of its one line."""
        if not self.warned:
            return ""
        more = f" and {len(self.warned) - 1} more" if len(self.warned) > 1 else ""
        return f" (after a warning: {self.warned[0]}{more})"

# ---------------------------------------------------------------------------------------------
# click classes

class CortexCommand(click.Command):
    """A click command with the cortexkit grammar (config files, print-config, errors)."""

    def __init__(self, *args, writes: str | None = None, uses_torch: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.writes = writes
        self.uses_torch = uses_torch

    def make_context(self, info_name, args, parent=None, **extra):
        path = " ".join(filter(None, [parent.command_path if parent else "cortexkit", info_name]))
        config_path = find_config_arg(args)
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
        # Warnings (numpy's divide-by-zero, a library's UserWarning) never reach stderr raw:
        # before an error they become part of its one line, after a success each distinct one
        # is one line "cortexkit TOOL VERB: warning: ...".
        with warnings.catch_warnings(record=True) as caught:
            try:
                result = super().invoke(ctx)
            except (click.exceptions.Exit, click.Abort, click.ClickException):
                raise
            except Failure as failure:
                failure.warned = failure.warned or _warning_lines(caught)
                raise
            except (Terminated, KeyboardInterrupt) as exc:
                raise Failure(ctx.command_path, exc) from exc
            except Exception as exc:  # noqa: BLE001 - every error becomes one line (see main)
                raise Failure(ctx.command_path, exc, _warning_lines(caught)) from exc
        for line in _warning_lines(caught):
            click.echo(f"{ctx.command_path}: warning: {line}", err=True)
        return result

def _warning_lines(caught: list) -> list[str]:
    """Distinct warning messages, each on one line, in order."""
    lines: list[str] = []
    for item in caught:
        text = " ".join(str(item.message).split())
        if text and text not in lines:
            lines.append(text)
    return lines

class CortexGroup(click.Group):
    """A tool: a group of verbs sharing one name (``cortexkit sample-permutations fit``)."""

    command_class = CortexCommand

def _wrap(func: Callable, resolve: Callable[[click.Context], dict[str, str]] | None = None) -> Callable:
    @functools.wraps(func)
    def callback(**kwargs):
        ctx = click.get_current_context()
        resolve_threads(ctx)
        if resolve is not None:  # a verb's 'auto' values, resolved where --print-config sees them
            ctx.meta["cortexkit.why"] = resolve(ctx) or {}
            kwargs.update({k: ctx.params[k] for k in kwargs if k in ctx.params})
        if kwargs.get("print_config"):
            from cortexkit.formats.report import to_yaml

            click.echo(to_yaml(resolved_config(ctx), flow=False), nl=False)
            for key, why in ctx.meta.get("cortexkit.why", {}).items():
                click.echo(f"# {key.replace('_', '-')}: {why}")
            return None
        if output_kind(ctx) in ("artifact", "table"):
            check_binary_target(kwargs.get("output"))
        check_outputs(ctx)
        check_sizes(ctx)  # every option that sizes memory or time, before any work
        for name in META_PARAMS + TORCH_PARAMS:  # these live on the Run
            kwargs.pop(name, None)
        from cortexkit.formats.stdio import transaction

        with transaction():  # every write staged; all committed when func returns
            func(Run(ctx), **kwargs)
        return None

    return callback

def _build(func: Callable, name: str, writes: str | None, uses_torch: bool, help: str | None,
           attach: Callable[..., Callable], advanced: tuple[str, ...] = (),
           resolve: Callable[[click.Context], dict[str, str]] | None = None) -> click.Command:
    if writes not in OUTPUT_KINDS and not callable(writes):
        raise ValueError(f"writes must be one of {OUTPUT_KINDS} or a callable of the parameters")
    callback = _wrap(func, resolve)
    for option in reversed(common_options("either" if callable(writes) else writes, uses_torch)):
        callback = option(callback)
    cmd = attach(name=name, cls=CortexCommand, writes=writes, uses_torch=uses_torch,
                 help=help or func.__doc__, epilog=epilog(uses_torch),
                 context_settings=CONTEXT_SETTINGS)(callback)
    for param in cmd.params:
        make_finite(param)
    options = {p.name: p for p in cmd.params if isinstance(p, click.Option)}
    unknown = sorted(set(advanced) - set(options))
    if unknown:
        raise ValueError(f"{name}: advanced names unknown options {unknown}")
    for key in advanced:
        options[key].hidden = True
    return cmd

def verb(group: click.Group, name: str, *, output: str | None = None, torch_options: bool = False,
         help: str | None = None, advanced: tuple[str, ...] = (),
         resolve: Callable[[click.Context], dict[str, str]] | None = None) -> Callable[[Callable], click.Command]:
    """Declare a verb of a tool. Put click arguments/options *below* this decorator.

    ``output`` is ``"artifact"`` (binary, never to a terminal), ``"table"`` (a table artifact,
    or tensors sharing a row count: CSV/TSV/NPY/NPZ/YAML/JSON when ``-o``'s name says so),
    ``"report"`` (YAML; JSON for ``-o NAME.json``), None, or a callable of the parsed parameters
    returning one of these when an option decides (``sample --format table``).
    ``torch_options`` adds ``--seed``, ``--device``, ``--threads`` and seeds torch.
    ``advanced`` names options (parameter names) left out of ``--help`` and shown by ``--help-all``
    and the man page: hyperparameters whose defaults are the method's published ones.
    ``resolve(ctx)`` turns the verb's ``auto`` values into the ones used, in ``ctx.params``, before
    ``--print-config`` and the run see them, and returns {parameter: why}: printed as comments by
    ``--print-config``, kept in ``run.why``.
    """
    return lambda func: _build(func, name, output, torch_options, help, group.command, advanced, resolve)

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

