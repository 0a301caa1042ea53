"""Byte-level input and output: ``-`` for stdin/stdout, and atomic writes.

Every output goes through :func:`write_bytes`: the bytes are complete before anything is
written, a file target is written to a temporary file beside it and renamed into place, so a
failed or interrupted command never leaves a partial file behind.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from cortexkit.formats.errors import CortexError

STDIO = "-"


def is_stdio(target: str | os.PathLike | None) -> bool:
    return target is None or str(target) == STDIO


def display_name(source: str | os.PathLike | None) -> str:
    return "<stdin>" if is_stdio(source) else str(source)


def read_bytes(source: str | os.PathLike | None) -> bytes:
    """Read a whole input, from a path or from stdin when ``source`` is ``-``."""
    if is_stdio(source):
        if sys.stdin is None or sys.stdin.isatty():
            raise CortexError("no input: give a FILE or pipe an artifact into stdin ('-')")
        return sys.stdin.buffer.read()
    path = Path(source)
    if not path.exists():
        raise CortexError(f"{path}: no such file")
    if path.is_dir():
        raise CortexError(f"{path}: is a directory, expected a file")
    return path.read_bytes()


def check_binary_target(target: str | os.PathLike | None) -> None:
    """Refuse, before any work, to send a binary artifact to a terminal (as gzip does)."""
    if is_stdio(target) and sys.stdout is not None and sys.stdout.isatty():
        raise CortexError(
            "refusing to write a binary artifact to a terminal; use -o FILE or pipe stdout"
        )


def write_bytes(target: str | os.PathLike | None, data: bytes, *, binary: bool = True) -> None:
    """Write ``data`` to a file atomically, or to stdout when ``target`` is ``-``/None."""
    if is_stdio(target):
        if binary:
            check_binary_target(target)
        out = sys.stdout.buffer
        out.write(data)
        out.flush()
        return
    path = Path(target)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise CortexError(f"{path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text(target: str | os.PathLike | None, text: str) -> None:
    write_bytes(target, text.encode("utf-8"), binary=False)
