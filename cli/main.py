"""The ``cortexkit`` entry point: a lazy registry of commands and the one place errors are shown."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback

import click

from cortexkit.cli.base import CONTEXT_SETTINGS, Failure, Terminated
from cortexkit.formats.errors import CortexError

# name -> "module:attribute"; modules are imported only when their command is needed, and no
# command module imports torch at import time, so `cortexkit --help` stays fast.
COMMANDS = {
    "inspect": "cortexkit.cli.inspect:command",
    "convert": "cortexkit.cli.convert:command",
    "simulate-npe": "cortexkit.cli.simulate_npe:group",
    "dp-fairness-train": "cortexkit.cli.dp_fairness_train:group",
    "sample-permutations": "cortexkit.cli.sample_permutations:group",
    "estimate-copula": "cortexkit.cli.estimate_copula:group",
    "train-pcn": "cortexkit.cli.train_pcn:group",
    "tokenize-eeg": "cortexkit.cli.tokenize_eeg:group",
    "fit-avatar": "cortexkit.cli.fit_avatar:group",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("cortexkit")
    except PackageNotFoundError:
        return "unknown"


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(version=None, package_name="cortexkit", prog_name="cortexkit",
                      message="%(prog)s %(version)s")
def cli():
    """cortexkit: seven research methods as Unix tools that read and write safetensors and YAML.

    Commands that write one artifact or report take -o PATH (- = stdout, the default; convert
    also takes it as a second argument). An output's name is a promise: .csv, .tsv, .npy, .npz,
    .yaml or .json get that format, anything else safetensors. Every command takes --config FILE.yaml,
    --print-config, -q, -v and --debug; torch commands also take --seed, --device and
    --threads. See man cortexkit.
    """


def describe(error: BaseException) -> str:
    """One line saying what went wrong."""
    if isinstance(error, (CortexError, ValueError)):
        text = str(error)
    elif isinstance(error, OSError) and error.strerror:
        text = f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    elif isinstance(error, MemoryError):
        text = "out of memory; try a smaller batch or input"
    else:
        text = (f"internal error: {type(error).__name__}: {error} "
                "(rerun with --debug for the traceback and please report it)")
    return " ".join(text.split()) or type(error).__name__


# A reader that closes early (``| head -c 100``): quiet, and the status a shell gives a process
# killed by SIGPIPE (128 + 13), as coreutils' tools end; one behaviour for every command.
BROKEN_PIPE = 128 + signal.SIGPIPE


def _quiet_stdout() -> None:
    """After a broken pipe (``| head``), stop Python complaining while it flushes stdout."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _terminate(signum, _frame) -> None:
    """SIGTERM/SIGHUP: unwind as Ctrl-C does (staged outputs and temporaries removed); further
    signals are ignored so the clean-up itself is not cut short."""
    for other in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(other, signal.SIG_IGN)
    raise Terminated(signum)


def _install_signal_handlers() -> None:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup's choice is kept
                signal.signal(signum, _terminate)
        except (ValueError, OSError):  # not the main thread
            pass


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    # OpenMP threads that sleep while they wait instead of spinning: on a node shared with other
    # jobs a spinning team stalls at every barrier (a small MLP step at 2 threads beside busy
    # processes: 88x the 1-thread time spinning, 1.3x sleeping; benchmarks/base/RESULTS.md).
    # Read once when torch loads its OpenMP runtime, so it is set before any torch import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _install_signal_handlers()
    debug = "--debug" in args[: args.index("--")] if "--" in args else "--debug" in args
    try:
        rv = cli.main(args, prog_name="cortexkit", standalone_mode=False)
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        path = ctx.command_path if ctx is not None else "cortexkit"
        hint = f" (see '{path} --help')" if isinstance(exc, click.UsageError) else ""
        click.echo(f"{path}: error: {' '.join(exc.format_message().split())}{hint}", err=True)
        sys.exit(exc.exit_code)
    except Failure as failure:
        if debug:
            traceback.print_exception(failure.error)
        if isinstance(failure.error, BrokenPipeError):
            _quiet_stdout()
            sys.exit(BROKEN_PIPE)
        if isinstance(failure.error, Terminated):
            click.echo(f"{failure.command_path}: terminated", err=True)
            sys.exit(128 + failure.error.signum)
        if isinstance(failure.error, KeyboardInterrupt):
            click.echo(f"{failure.command_path}: interrupted", err=True)
            sys.exit(130)
        click.echo(f"{failure.command_path}: error: {describe(failure.error)}{failure.note}",
                   err=True)
        sys.exit(1)
    except click.Abort:
        click.echo("cortexkit: aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except Terminated as exc:
        click.echo("cortexkit: terminated", err=True)
        sys.exit(128 + exc.signum)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(BROKEN_PIPE)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
