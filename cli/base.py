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
import os
import shlex
import sys
import warnings
from typing import Any, Callable, Iterable

import click

from cortexkit.cli.options import (META_PARAMS, check_sizes, common_options, config_key, epilog,
                                   find_config_arg, load_config_file, make_finite)
from cortexkit.cli.outputs import check_outputs, output_kind, output_option  # noqa: F401 - API
from cortexkit.cli.threads import after_import, resolve_threads
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


# ---------------------------------------------------------------------------------------------
# the run object

class Run:
    """What a running command gets: its configuration, I/O, messages and randomness."""

    def __init__(self, ctx: click.Context):
        command: CortexCommand = ctx.command  # type: ignore[assignment]
        self.command_path = ctx.command_path
        self.params = dict(ctx.params)
        self.threads = ctx.params.get("threads") or 0  # the number used, after resolution
        # "--threads" (given) or what capped the default ("CPU affinity", "OMP_NUM_THREADS",
        # "SLURM_CPUS_PER_TASK", "load average")
        self.threads_why = ctx.meta.get("cortexkit.threads_why", "--threads")
        self.config = resolved_config(ctx)
        self.why: dict[str, str] = dict(ctx.meta.get("cortexkit.why", {}))  # how 'auto' values were resolved
        self.output = ctx.params.get("output", "-")
        self.quiet = bool(ctx.params.get("quiet"))
        self.verbose = bool(ctx.params.get("verbose"))
        self.seed = ctx.params.get("seed")
        self.producer = shlex.join(["cortexkit", *sys.argv[1:]])
        self._device_name = ctx.params.get("device", "cpu")
        self._device = None
        self._stops: list[dict] = []
        if command.uses_torch:
            self.detail(f"threads: {self.threads} ({self.threads_why})")
            self._setup_torch(ctx.params.get("threads"))
            if self._device_name == "cuda":
                self.device  # noqa: B018 - --device cuda without CUDA fails now, not later

    # -- torch ------------------------------------------------------------------------------
    def _setup_torch(self, threads: int | None) -> None:
        """Threads and seed for torch, set when torch is first imported: a verb whose work
        needs no torch (a Gaussian copula, a classical permutation model) never pays the
        seconds of its import."""
        def setup(torch) -> None:
            if threads:
                torch.set_num_threads(threads)
            if self.seed is not None:
                torch.manual_seed(self.seed)

        after_import("torch", setup)

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
        """A warning on stderr, one line ``cortexkit TOOL VERB: warning: ...`` (silenced by ``-q``,
        which asks for no messages)."""
        if not self.quiet:
            click.echo(f"{self.command_path}: warning: {message}", err=True)

    def progress(self, iterable: Iterable | None = None, total: int | None = None,
                 desc: str | None = None, **kwargs):
        """A tqdm bar on stderr; off with ``-q`` or when stderr is not a terminal.

        A terminal that reports 0 columns or 0 rows (some batch shells, ``stty cols 0``, a
        pseudo-terminal nobody sized) gets 80 x 24: tqdm hides a bar whose row is past the
        terminal's last, so 0 rows alone would show nothing."""
        from tqdm.auto import tqdm

        disable = self.quiet or not sys.stderr.isatty()
        size = {}
        if not disable:
            try:
                columns, lines = os.get_terminal_size(sys.stderr.fileno())
            except (OSError, ValueError):
                columns = lines = 0
            if columns <= 0 or lines <= 0:
                size = {"ncols": columns if columns > 0 else 80,
                        "nrows": lines if lines > 0 else 24, "dynamic_ncols": False}
        size.setdefault("dynamic_ncols", True)
        return tqdm(iterable, total=total, desc=desc, file=sys.stderr, disable=disable,
                    leave=False, **size, **kwargs)

    def stopped(self, stage: str, ran: int, planned: int, unit: str, reason: str,
                **figures: Any) -> dict:
        """Say why a loop ended and keep the record for the artifact.

        Every training loop calls this once when it ends, whatever ended it: ``reason`` is one
        of ``completed``, ``time-limit``, ``patience``, ``step-cap``, ``converged``,
        ``interrupted`` or a short phrase. Prints ``STAGE: stopped after RAN of PLANNED UNIT
        (REASON)`` at normal verbosity (only ``completed`` runs stay quiet unless ``-v``) and
        stores the record under ``cortexkit.stopped`` in every artifact written afterwards.
        ``figures`` (best validation loss, the epoch it came from, ...) go into the record."""
        record = {"stage": stage, "ran": int(ran), "planned": int(planned), "unit": unit,
                  "reason": reason, **figures}
        self._stops.append(record)
        extra = "".join(f", {k.replace('_', ' ')} {_short(v)}" for k, v in figures.items())
        line = f"{stage}: stopped after {ran} of {planned} {unit} ({reason}{extra})"
        if reason == "completed":
            self.detail(line)
        else:
            self.info(line)
        return record

    def drop_options(self, *names: str) -> None:
        """Leave options that do not apply to this run (a Mallows model's network width) out
        of the config stored in its artifacts, so ``inspect`` shows only the ones that do.
        ``names`` are config keys (long option names without dashes)."""
        for name in names:
            self.config.pop(name, None)

    @property
    def stops(self) -> list[dict]:
        """The records of :meth:`stopped`, in order."""
        return list(self._stops)

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

        if self._stops and "cortexkit.stopped" not in (metadata or {}):
            metadata = {**(metadata or {}), "cortexkit.stopped": self.stops}
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


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def resolved_config(ctx: click.Context) -> dict[str, Any]:
    """The run's configuration: every option and argument except the meta ones."""
    from cortexkit.formats.report import plain

    return {config_key(param): plain(ctx.params[param.name]) for param in ctx.command.params
            if param.name in ctx.params and param.name not in META_PARAMS}


# ---------------------------------------------------------------------------------------------
# decorators


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


