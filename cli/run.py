"""The :class:`Run` each verb gets as its first argument: the resolved configuration, I/O
through formats/ (every write staged, see :mod:`.base`), messages, progress bars, random
generators, and the record of why each loop stopped."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any, Iterable

import click

from cortexkit.cli.config import config_key
from cortexkit.cli.options import META_PARAMS
from cortexkit.cli.threads import after_import
from cortexkit.formats.errors import CortexError

class Run:
    """What a running command gets: its configuration, I/O, messages and randomness."""

    def __init__(self, ctx: click.Context):
        command = ctx.command  # a CortexCommand (cli.base)
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
