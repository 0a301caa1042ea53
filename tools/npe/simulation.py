"""Running simulators in chunks: built-in tasks, Python callables and external programs.

The parameters to simulate are cut into fixed chunks of ``chunk_size`` rows. Chunk c (counted
from the start of the whole run, not of a shard) gets its own seed derived from (seed, c), so a
run gives the same numbers whether it is done at once, with ``workers`` processes, or as shards
that are merged afterwards.

Simulators:
* ``task:NAME[:FIDELITY]``  a built-in vectorised task (``tasks.py``), called with a torch.Generator;
* ``module:function``       ``function(theta) -> x`` with theta a float32 torch tensor (n, d) and x
                            (n, x_dim) as torch tensor or numpy array; torch and numpy global RNGs are
                            seeded per chunk;
* an external command       run by the shell once per chunk: a theta artifact (safetensors with
                            tensor ``theta`` (n, d)) on stdin, a safetensors with tensor ``x`` (n, x_dim)
                            expected on stdout; environment CORTEXKIT_SEED and CORTEXKIT_FIRST_INDEX.
"""
from __future__ import annotations

import importlib
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch


class SimulationError(Exception):
    """A chunk failed; ``finished`` maps chunk id -> x for the chunks that completed."""

    def __init__(self, message: str, finished: dict):
        super().__init__(message)
        self.finished = finished


@dataclass(frozen=True)
class SimulatorSpec:
    kind: str  # "task" | "callable" | "command"
    target: str  # task name / "module:function" / shell command
    fidelity: str = "hf"

    def describe(self) -> str:
        if self.kind == "task":
            return f"task {self.target} ({self.fidelity})"
        if self.kind == "callable":
            return f"callable {self.target}"
        return f"command {self.target!r}"


def chunk_seed(seed: int, chunk: int) -> int:
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(chunk)]).generate_state(1)[0])


def load_callable(target: str) -> Callable:
    module, _, name = target.partition(":")
    if not module or not name:
        raise ValueError(f"--simulator {target!r}: expected module:function (e.g. mymodel:simulate)")
    try:
        mod = importlib.import_module(module)
    except ImportError as err:
        raise ValueError(f"--simulator {target!r}: cannot import module {module!r} ({err}); "
                         "is it on PYTHONPATH?") from None
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise ValueError(f"--simulator {target!r}: module {module!r} has no function {name!r}")
    return fn


def _as_x(out, n: int, where: str) -> torch.Tensor:
    if isinstance(out, np.ndarray):
        out = torch.from_numpy(np.ascontiguousarray(out))
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"{where}: simulator returned {type(out).__name__}, expected an (n, x_dim) array")
    out = out.detach().cpu().float()
    if out.dim() == 1 and n == out.shape[0]:
        out = out[:, None]
    if out.dim() != 2 or out.shape[0] != n:
        raise ValueError(f"{where}: simulator returned shape {tuple(out.shape)}, expected ({n}, x_dim)")
    return out


def simulate_chunk(spec: SimulatorSpec, theta: torch.Tensor, seed: int, first_index: int,
                   timeout: float | None = None, encode=None, decode=None, running: set | None = None) -> torch.Tensor:
    """Run one chunk; theta (n, d) -> x (n, x_dim). Raises ValueError/RuntimeError naming the rows.
    ``running``: a set an external program's process is kept in while it runs (so it can be ended)."""
    n = theta.shape[0]
    where = f"simulations {first_index}..{first_index + n - 1}"
    if spec.kind == "task":
        from .tasks import get_task

        g = torch.Generator().manual_seed(seed)
        return _as_x(get_task(spec.target).simulator(spec.fidelity)(theta, g), n, where)
    if spec.kind == "callable":
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        return _as_x(load_callable(spec.target)(theta.clone()), n, where)
    env = dict(os.environ, CORTEXKIT_SEED=str(seed), CORTEXKIT_FIRST_INDEX=str(first_index))
    # own process group, so a hung program and everything it started can be ended together
    proc = subprocess.Popen(spec.target, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    if running is not None:
        running.add(proc)
    try:
        stdout, stderr = proc.communicate(encode(theta), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise RuntimeError(f"{where}: simulator command timed out after {timeout:g} s (--timeout)") from None
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        if running is not None:
            running.discard(proc)
    if proc.returncode != 0:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()
        why = f": {tail[-1]}" if tail else ""
        raise RuntimeError(f"{where}: simulator command exited with status {proc.returncode}{why}")
    try:
        x = decode(stdout)
    except Exception as err:  # noqa: BLE001 - whatever the program wrote, say it plainly
        raise ValueError(f"{where}: simulator command did not write a safetensors with tensor 'x' on stdout ({err})") from None
    return _as_x(x, n, where)


def _kill_group(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


def _pool_worker(args):
    spec, theta, seed, first, timeout, encode, decode = args
    torch.set_num_threads(1)
    return simulate_chunk(spec, theta, seed, first, timeout, encode, decode)


def _remote_chunk(spec, theta, seed, first, timeout, encode, decode):
    """One chunk as a Dask task (a module-level function, so workers import it by name)."""
    torch.set_num_threads(1)
    return simulate_chunk(spec, theta, seed, first, timeout, encode, decode)


@dataclass(frozen=True)
class Piece:
    """Rows ``start..stop-1`` simulated in one simulator call seeded from chunk ``chunk``; rows
    ``keep`` (a sub-range) are the ones the caller keeps. A shard boundary that cuts a built-in
    task's chunk simulates the whole chunk and keeps its own rows, so the numbers never depend
    on where the shards fall."""

    chunk: int
    start: int
    stop: int
    keep: tuple[int, int]
    part: int = 0  # rows into its chunk where a cut piece starts: 0 keeps the chunk's seed

    def seed(self, seed: int) -> int:
        """The chunk's seed; a piece cut out of a chunk after its first row gets its own, so two
        shards never share a random stream."""
        if not self.part:
            return chunk_seed(seed, self.chunk)
        return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(self.chunk), int(self.part)]).generate_state(1)[0])


def run_chunks(spec: SimulatorSpec, theta: torch.Tensor, chunk_ids: list[int], chunk_size: int, *, seed: int,
               workers: int = 1, timeout: float | None = None, encode=None, decode=None,
               on_done=None, first_index: int | None = None) -> dict[int, torch.Tensor]:
    """Simulate the given global chunks. ``theta`` holds exactly those chunks' rows, in order.
    Returns {chunk id: x}. Rows are numbered from chunk id * chunk_size, or consecutively from
    ``first_index`` when given (the chunk ids still pick the random streams)."""
    pieces, pos = [], 0
    for c in chunk_ids:
        rows = min(chunk_size, theta.shape[0] - pos)
        start = c * chunk_size if first_index is None else first_index + pos
        pieces.append(Piece(c, start, start + rows, (start, start + rows)))
        pos += rows
    base = pieces[0].start if pieces else 0
    return run_pieces(spec, theta, pieces, seed=seed, offset=base, workers=workers, timeout=timeout,
                      encode=encode, decode=decode, on_done=on_done)


def run_pieces(spec: SimulatorSpec, theta: torch.Tensor, pieces: list[Piece], *, seed: int, offset: int = 0,
               workers: int = 1, timeout: float | None = None, encode=None, decode=None, on_done=None,
               scheduler: str | None = None) -> dict[int, torch.Tensor]:
    """Simulate ``pieces`` (theta row r is run row ``offset + r``) -> {chunk: x of its kept rows}.

    At most ``workers`` pieces run at once (threads for external programs, spawned processes for
    Python simulators, or the tasks of a Dask cluster at ``scheduler``). After the first failure
    no new piece is dispatched; the pieces already running are waited for and kept if they
    succeed. Raises SimulationError carrying every finished piece (in whatever order it finished)."""
    finished: dict[int, torch.Tensor] = {}
    x_dim = [None]

    def accept(piece, x):
        if x_dim[0] is None:
            x_dim[0] = x.shape[1]
        elif x.shape[1] != x_dim[0]:
            raise ValueError(f"simulations {piece.start}..{piece.stop - 1}: simulator returned x of dimension "
                             f"{x.shape[1]}, earlier chunks had {x_dim[0]}")
        a, b = piece.keep
        finished[piece.chunk] = x[a - piece.start:b - piece.start]
        if on_done is not None:
            on_done(piece, finished[piece.chunk])

    def args(piece):
        rows = theta[piece.start - offset:piece.stop - offset]
        return spec, rows, piece.seed(seed), piece.start, timeout, encode, decode

    if scheduler:  # an external program's --timeout acts inside the task, a Python one's from here
        backend = _DaskBackend(scheduler, args, None if spec.kind == "command" else timeout)
    elif spec.kind == "command" and workers > 1:
        backend = _ThreadBackend(workers, args)
    elif spec.kind != "command" and (workers > 1 or timeout):
        backend = _ProcessBackend(workers, args, timeout)
    else:
        backend = _SerialBackend(args)
    try:
        _dispatch(pieces, backend, accept)
    except SimulationError:
        raise
    except Exception as err:  # noqa: BLE001 - keep what finished, report the first failure
        raise SimulationError(str(err) if isinstance(err, (ValueError, RuntimeError)) else
                              f"{type(err).__name__}: {err}", finished) from err
    return finished


def _dispatch(pieces, backend, accept) -> None:
    """Keep ``backend.limit`` pieces in flight; stop dispatching at the first failure, wait for
    the ones running, accept every success, then raise the first failure."""
    queue, running, error = list(pieces), {}, None
    try:
        while running or (queue and error is None):
            while queue and error is None and len(running) < backend.limit:
                piece = queue.pop(0)
                running[backend.submit(piece)] = piece
            for handle, outcome in backend.wait_first(running):
                piece = running.pop(handle)
                try:
                    accept(piece, backend.result(handle, piece) if outcome is None else _raise(outcome))
                except Exception as err:  # noqa: BLE001
                    error = error or err
                    if backend.abandon_on_error:
                        for other in list(running):
                            backend.cancel(other)
                            running.pop(other)
    except BaseException as stop:  # Ctrl-C, SIGTERM: end the pieces still running, at once
        if not isinstance(stop, Exception):
            backend.abort()
        raise
    finally:
        backend.close()
    if error is not None:
        raise error


def _raise(err):
    raise err


class _SerialBackend:
    limit, abandon_on_error = 1, False

    def __init__(self, args):
        self.args, self.done = args, {}

    def submit(self, piece):
        try:
            self.done[piece.chunk] = (simulate_chunk(*self.args(piece)), None)
        except Exception as err:  # noqa: BLE001
            self.done[piece.chunk] = (None, err)
        return piece.chunk

    def wait_first(self, running):
        return [(h, self.done[h][1]) for h in list(running)]

    def result(self, handle, piece):
        return self.done.pop(handle)[0]

    def cancel(self, handle): ...

    def abort(self): ...

    def close(self): ...


class _FutureBackend:
    """concurrent.futures futures with a per-piece deadline measured from dispatch (``timeout``)."""

    abandon_on_error = False

    def __init__(self, limit, args, timeout=None):
        self.limit, self.args, self.timeout, self.deadline = max(1, limit), args, timeout, {}

    def _track(self, future):
        if self.timeout:
            self.deadline[future] = time.monotonic() + self.timeout
        return future

    def wait_first(self, running):
        from concurrent.futures import FIRST_COMPLETED, wait

        wait_for = None
        if self.deadline:
            wait_for = max(0.0, min(self.deadline[f] for f in running) - time.monotonic())
        done, _ = wait(list(running), timeout=wait_for, return_when=FIRST_COMPLETED)
        if done:
            return [(f, None) for f in done]
        late = [f for f in running if self.deadline.get(f, float("inf")) <= time.monotonic()]
        out = []
        for f in late:
            piece = running[f]
            out.append((f, RuntimeError(f"simulations {piece.start}..{piece.stop - 1}: simulator timed out after "
                                        f"{self.timeout:g} s (--timeout)")))
        return out

    def result(self, handle, piece):
        self.deadline.pop(handle, None)
        return handle.result()

    def cancel(self, handle):
        handle.cancel()

    def abort(self): ...


class _ThreadBackend(_FutureBackend):
    """External programs, one thread each; on an interruption the running programs are ended
    (they run in sessions of their own, so Ctrl-C does not reach them)."""

    def __init__(self, workers, args):
        super().__init__(workers, args)
        self.pool, self.programs = ThreadPoolExecutor(workers), set()

    def submit(self, piece):
        return self.pool.submit(simulate_chunk, *self.args(piece), running=self.programs)

    def abort(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
        for proc in list(self.programs):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self):
        self.pool.shutdown(wait=True)


class _ProcessBackend(_FutureBackend):
    """A spawn pool; a piece past its deadline is given up and the pool terminated at the end."""

    def __init__(self, workers, args, timeout):
        import multiprocessing as mp

        super().__init__(workers, args, timeout)
        self.pool = mp.get_context("spawn").Pool(max(1, workers))

    def submit(self, piece):
        from concurrent.futures import Future

        future = Future()
        self.pool.apply_async(_pool_worker, (self.args(piece),), callback=future.set_result,
                              error_callback=future.set_exception)
        return self._track(future)

    def close(self):
        self.pool.terminate()
        self.pool.join()


class _DaskBackend:
    """Pieces as tasks of a Dask distributed cluster: at most one per worker thread in flight, the
    same seeds as a local run. A worker that dies is the scheduler's to handle (it reruns the task
    elsewhere, up to distributed.scheduler.allowed-failures times, then reports KilledWorker)."""

    abandon_on_error = False

    def __init__(self, address, args, timeout=None):
        try:
            from distributed import Client
        except ImportError:
            raise RuntimeError("--scheduler needs Dask distributed: pip install 'cortexkit[dist]'") from None
        import uuid

        try:  # an address, or the scheduler file of `dask scheduler --scheduler-file FILE`
            self.client = Client(scheduler_file=address, timeout=30) if address.endswith(".json") \
                else Client(address, timeout=30)
        except (OSError, ValueError) as err:
            raise RuntimeError(f"--scheduler {address}: cannot reach the Dask scheduler ({err})") from None
        self.args, self.run, self.timeout, self.deadline = args, uuid.uuid4().hex[:8], timeout, {}
        self.limit = max(1, sum(self.client.nthreads().values()))

    def submit(self, piece):
        future = self.client.submit(_remote_chunk, *self.args(piece), key=f"simulate-npe-{self.run}-{piece.chunk}",
                                    pure=False, retries=0)
        if self.timeout:
            self.deadline[future.key] = time.monotonic() + self.timeout
        return future

    def wait_first(self, running):
        from distributed import wait

        wait_for = None
        if self.deadline:
            wait_for = max(0.0, min(self.deadline[f.key] for f in running) - time.monotonic())
        try:
            done, _ = wait(list(running), timeout=wait_for, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = ()
        if done:
            return [(f, None) for f in done]
        out = []
        for f in running:
            if self.deadline.get(f.key, float("inf")) <= time.monotonic():
                piece = running[f]
                f.cancel()
                out.append((f, RuntimeError(f"simulations {piece.start}..{piece.stop - 1}: simulator timed out "
                                            f"after {self.timeout:g} s (--timeout)")))
        return out

    def result(self, handle, piece):
        try:
            return handle.result()
        except (ValueError, RuntimeError):
            raise
        except Exception as err:  # noqa: BLE001 - KilledWorker, a lost connection
            raise RuntimeError(f"simulations {piece.start}..{piece.stop - 1}: the Dask task failed "
                               f"({type(err).__name__}: {err})") from None

    def cancel(self, handle):
        handle.cancel()

    def abort(self): ...  # close() releases the futures and the scheduler drops their tasks

    def close(self):
        self.client.close()
