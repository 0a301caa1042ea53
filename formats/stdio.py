"""Byte-level input and output: ``-`` for stdin/stdout, checked targets, all-or-none writes.

Every output goes through :func:`write_bytes`. Outside a command it writes at once, atomically:
a regular-file target is written to a temporary file beside it and renamed into place. Inside a
command (the CLI base opens a :func:`transaction` around every verb) the write is *staged*: the
temporary file is written now, and every staged output of the command is renamed into place
together when the command succeeds, or removed when it fails or is interrupted, so a command
leaves all of its outputs or none.

Targets that are not regular files (``/dev/null``, a FIFO, a terminal or another character
device) are opened and written through, never renamed over. A symlink is followed: its target
is replaced atomically and the link kept. New files get the mode ``0666 & ~umask`` (as ``cp``
and ``gzip`` create them); a replaced file keeps its permission bits. Messages name the user's
path, never the temporary file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

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
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CortexError(f"{path}: cannot read ({exc.strerror or exc})") from None


# An output's suffix is a promise (DESIGN.md): a table or report written to one of these is
# written in that format; any other name (and stdout) gets safetensors.
SUFFIX_FORMATS = {".csv": "csv", ".tsv": "tsv", ".npy": "npy", ".npz": "npz", ".yaml": "yaml",
                  ".yml": "yaml", ".json": "json"}
TEXT_FORMATS = ("csv", "tsv", "yaml", "json")


def suffix_format(target: str | os.PathLike | None) -> str:
    """The format an output's name promises: ``csv``, ``tsv``, ``npy``, ``npz``, ``yaml``,
    ``json``, or ``safetensors`` for stdout, special files and every other name."""
    if is_stdio(target):
        return "safetensors"
    path = Path(target)
    if _is_special(path):
        return "safetensors"
    return SUFFIX_FORMATS.get(path.suffix.lower(), "safetensors")


def check_binary_target(target: str | os.PathLike | None) -> None:
    """Refuse, before any work, to send a binary artifact to a terminal (as gzip does)."""
    if is_stdio(target) and sys.stdout is not None and sys.stdout.isatty():
        raise CortexError(
            "refusing to write a binary artifact to a terminal; use -o FILE or pipe stdout"
        )


# ---------------------------------------------------------------------------------------------
# targets

def _is_special(path: Path) -> bool:
    """An existing target that is not a regular file or folder (device, FIFO, socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _real_target(path: Path) -> Path:
    """The file a write to ``path`` lands in: symlinks followed (a dangling one too)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def check_target(target: str | os.PathLike | None, what: str = "-o") -> None:
    """Fail now, naming ``what`` and the user's path, if ``target`` cannot be written later.

    A target can be written when it is ``-``, an existing special file we may open for writing,
    or a path (after symlinks) whose folder exists and lets us create files, and that is not a
    folder itself. The folder is probed by creating and removing a temporary file, which is
    what the write will do (``os.access`` is wrong for root and for read-only mounts).
    """
    if is_stdio(target):
        return
    text = str(target)
    if not text:
        raise CortexError(f"{what or 'output'}: empty path")
    path = Path(text)
    if what:
        text = f"{what} {text}"  # messages say which option: "--scores nodir/s.st: ..."
    if path.is_dir():
        raise CortexError(f"{text}: is a folder, expected a file path")
    if _is_special(path):
        if not os.access(path, os.W_OK):
            raise CortexError(f"{text}: not writable")
        return
    real = _real_target(path)
    if real.is_dir():
        raise CortexError(f"{text}: links to a folder, expected a file path")
    folder = real.parent
    if not folder.exists():
        raise CortexError(f"{text}: cannot write, folder {folder} does not exist")
    if not folder.is_dir():
        raise CortexError(f"{text}: cannot write, {folder} is not a folder")
    probe = _temporary_name(real)
    try:  # armed before the file exists: a signal at any point leaves no probe behind
        os.close(_create(probe))
    except OSError as exc:
        raise CortexError(f"{text}: cannot write in folder {folder} "
                          f"({exc.strerror or exc})") from None
    finally:
        _remove(probe)


def _new_file_mode(real: Path) -> int:
    try:
        current = os.stat(real)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
    return stat.S_IMODE(current.st_mode)


# ---------------------------------------------------------------------------------------------
# one write

def _temporary_name(real: Path, suffix: str = "") -> str:
    """A fresh name for a temporary file beside ``real`` (not created yet).

    Temporaries are named first and created after, so whoever removes them on failure holds
    the name before the file exists: a SIGTERM between creating the file and arming its
    removal (as with ``mkstemp``, which returns the name only once the file is there) would
    leave a 0-byte ``.NAME.*.tmp`` behind."""
    folder = real.parent if str(real.parent) else Path(".")
    return str(folder / f".{real.name}.{secrets.token_hex(4)}.tmp{suffix}")


def _create(tmp: str) -> int:
    """Create ``tmp`` exclusively (mode 0600 until the final mode is set); its descriptor."""
    return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)


def _write_temporary(path: Path, data: bytes, tmp: str | None = None) -> tuple[str, Path]:
    """Write ``data`` to the temporary file ``tmp`` (named by :func:`_temporary_name` beside
    the real target, and already armed for removal by the caller); (temp path, real target)."""
    real = _real_target(path)
    if tmp is None:
        tmp = _temporary_name(real)
    try:
        folder = Path(tmp).parent
        if not folder.is_dir():
            raise CortexError(f"{real}: folder {folder} does not exist")
        with os.fdopen(_create(tmp), "wb") as handle:
            os.fchmod(handle.fileno(), _new_file_mode(real))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        _remove(tmp)
        if isinstance(exc, OSError):
            raise CortexError(f"{path}: cannot write ({exc.strerror or exc})") from None
        raise
    return tmp, real


def _write_through(path: Path, data: bytes) -> None:
    """Write into an existing special file (device, FIFO): open it, never replace it."""
    try:
        with open(path, "wb", buffering=0) as handle:
            view = memoryview(data)
            while view:
                written = handle.write(view)
                view = view[written:]
    except OSError as exc:
        raise CortexError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _write_stdout(data: bytes, binary: bool) -> None:
    if binary:
        check_binary_target(STDIO)
    out = sys.stdout.buffer
    # A buffered write that fails part-way (the reader closed: ``| head -c 100``) returns the
    # count it wrote instead of raising; write on, so the broken pipe surfaces as BrokenPipeError
    # (status 141, as coreutils) and a short write is never a silent success.
    view = memoryview(data)
    while view:
        written = out.write(view)
        if not written:
            raise BrokenPipeError(32, "Broken pipe")
        view = view[written:]
    out.flush()


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def _rename(tmp: str, real: Path, shown: Path) -> None:
    try:
        os.replace(tmp, real)
    except BaseException as exc:
        _remove(tmp)
        if isinstance(exc, OSError):
            raise CortexError(f"{shown}: cannot write ({exc.strerror or exc})") from None
        raise


# ---------------------------------------------------------------------------------------------
# a command's outputs, committed together

@dataclass
class _Staged:
    shown: Path | None           # the user's path (None = stdout)
    real: Path | None = None     # where the rename lands (symlinks followed)
    tmp: str | None = None       # the finished temporary file, for regular targets
    data: bytes | None = None    # bytes held for stdout and special targets
    binary: bool = True
    file: bool = False           # a path handed to a library (stage_file)


@dataclass
class Outputs:
    """The staged outputs of one command (see the module docstring)."""

    staged: list[_Staged] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)  # made by this command, newest last

    def _drop(self, shown: Path | None) -> None:
        for item in [s for s in self.staged if s.shown == shown]:
            if item.tmp:
                _remove(item.tmp)
            self.staged.remove(item)

    def stage(self, target, data: bytes, binary: bool = True) -> None:
        if is_stdio(target):
            if binary:
                check_binary_target(STDIO)
            self.staged.append(_Staged(None, data=data, binary=binary))
            return
        path = Path(target)
        self._drop(path)  # a second write to one target replaces the first
        if _is_special(path):
            self.staged.append(_Staged(path, data=data))
            return
        item = _Staged(path, real=_real_target(path))
        item.tmp = _temporary_name(item.real)
        self.staged.append(item)  # named and registered first: an interrupt removes the temp
        _write_temporary(path, data, item.tmp)

    def stage_file(self, target, suffix: str = "") -> str:
        """A temporary path beside ``target`` for a library that writes files itself (the
        name keeps ``suffix``, e.g. ``.png``, so the library picks the format). It is renamed
        into place at commit if the library wrote it, and removed if the command fails."""
        path = Path(target)
        self._drop(path)
        real = _real_target(path)
        item = _Staged(path, real=real, file=True, tmp=_temporary_name(real, suffix))
        self.staged.append(item)  # armed before the name is probed
        try:
            os.close(_create(item.tmp))
        except OSError as exc:
            raise CortexError(f"{path}: cannot write ({exc.strerror or exc})") from None
        os.unlink(item.tmp)  # a name reserved in our folder; the library creates the file
        return item.tmp

    def commit(self) -> None:
        """Stdout and special files first (a broken pipe or a blocked FIFO then leaves no file
        behind), then the renames, which do not fail once the temporaries are written."""
        items, self.staged = self.staged, []
        try:
            for item in items:
                if item.file and item.tmp is not None:
                    if not os.path.exists(item.tmp):  # the library never wrote it
                        item.tmp = None
                    elif _is_special(item.shown):
                        with open(item.tmp, "rb") as handle:
                            item.data = handle.read()
                        _remove(item.tmp)
                        item.tmp = None
                    else:
                        os.chmod(item.tmp, _new_file_mode(item.real))
            for item in items:
                if item.data is not None:
                    if item.shown is None:
                        _write_stdout(item.data, item.binary)
                    else:
                        _write_through(item.shown, item.data)
            for item in items:
                if item.tmp is not None:
                    tmp, item.tmp = item.tmp, None
                    _rename(tmp, item.real, item.shown)
        finally:
            for item in items:
                if item.tmp is not None:
                    _remove(item.tmp)

    def discard(self) -> None:
        items, self.staged = self.staged, []
        for item in items:
            if item.tmp is not None:
                _remove(item.tmp)
        folders, self.folders = self.folders, []
        for folder in reversed(folders):  # what a failed command made, if it is empty again
            try:
                folder.rmdir()
            except OSError:
                pass

    def make_folder(self, folder: Path) -> None:
        missing = []
        for part in [folder, *folder.parents]:
            if part.exists():
                break
            missing.append(part)
        for part in reversed(missing):
            self.folders.append(part)  # armed before it exists
            try:
                part.mkdir()
            except FileExistsError:
                self.folders.remove(part)
            except OSError as exc:
                raise CortexError(f"{folder}: cannot make the folder ({exc.strerror or exc})") from None
        if not folder.is_dir():
            raise CortexError(f"{folder}: not a folder")


_current: Outputs | None = None


def in_command() -> bool:
    """True inside a command's :func:`transaction` (the CLI base opens one around every verb)."""
    return _current is not None


@contextlib.contextmanager
def transaction() -> Iterator[Outputs]:
    """Stage every :func:`write_bytes` inside the block; commit them all if it succeeds."""
    global _current
    outputs, previous = Outputs(), _current
    _current = outputs
    try:
        yield outputs
    except BaseException:
        outputs.discard()
        raise
    else:
        outputs.commit()
    finally:
        _current = previous


def write_bytes(target: str | os.PathLike | None, data: bytes, *, binary: bool = True,
                now: bool = False) -> None:
    """Write ``data`` to ``target`` (``-``/None = stdout).

    Inside a :func:`transaction` the write is staged unless ``now``: use ``now`` for what must
    survive the command failing (checkpoints, the finished part of a failed run). Outside, or
    with ``now``, it is written at once, atomically.
    """
    if _current is not None and not now:
        _current.stage(target, data, binary)
        return
    if is_stdio(target):
        _write_stdout(data, binary)
        return
    path = Path(target)
    if _is_special(path):
        _write_through(path, data)
        return
    tmp, real = _write_temporary(path, data)
    _rename(tmp, real, path)


def make_folder(folder: str | os.PathLike) -> None:
    """``mkdir -p`` for an output folder (``--obj-dir``): inside a command, the folders it makes
    are removed again (when empty) if the command fails, so a failed run (a full disk) leaves
    no empty folder behind."""
    if _current is not None:
        _current.make_folder(Path(folder))
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise CortexError(f"{folder}: cannot make the folder ({exc.strerror or exc})") from None


def write_text(target: str | os.PathLike | None, text: str, *, now: bool = False) -> None:
    write_bytes(target, text.encode("utf-8"), binary=False, now=now)


@contextlib.contextmanager
def output_file(target: str | os.PathLike, suffix: str | None = None) -> Iterator[str]:
    """A path for a library that writes a file itself (matplotlib, MNE, glTF writers).

    ``with output_file("fig.png") as tmp: fig.savefig(tmp)``: the library writes a temporary
    file beside the target (keeping its extension), which is committed with the command's other
    outputs (or at once, atomically, outside a command)."""
    suffix = Path(target).suffix if suffix is None else suffix
    if _current is not None:
        yield _current.stage_file(target, suffix)
        return
    with transaction() as outputs:
        yield outputs.stage_file(target, suffix)
