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
                   timeout: float | None = None, encode=None, decode=None) -> torch.Tensor:
    """Run one chunk; theta (n, d) -> x (n, x_dim). Raises ValueError/RuntimeError naming the rows."""
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
    try:
        stdout, stderr = proc.communicate(encode(theta), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise RuntimeError(f"{where}: simulator command timed out after {timeout:g} s (--timeout)") from None
    except BaseException:
        _kill_group(proc)
        raise
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
    spec, theta, seed, first = args
    torch.set_num_threads(1)
    return simulate_chunk(spec, theta, seed, first)


def run_chunks(spec: SimulatorSpec, theta: torch.Tensor, chunk_ids: list[int], chunk_size: int, *, seed: int,
               workers: int = 1, timeout: float | None = None, encode=None, decode=None,
               on_done=None, first_index: int | None = None) -> dict[int, torch.Tensor]:
    """Simulate the given global chunks. ``theta`` holds exactly those chunks' rows, in order.
    Returns {chunk id: x}. On the first failure raises SimulationError carrying the finished chunks.
    Rows are numbered from chunk id * chunk_size, or consecutively from ``first_index`` when given
    (the chunk ids still pick the random streams)."""
    offsets, pos = {}, 0
    for c in chunk_ids:
        start = c * chunk_size if first_index is None else first_index + pos
        rows = min(chunk_size, theta.shape[0] - pos)
        offsets[c] = (pos, rows, start)
        pos += rows
    finished: dict[int, torch.Tensor] = {}
    x_dim = None

    def accept(c, x):
        nonlocal x_dim
        if x_dim is None:
            x_dim = x.shape[1]
        elif x.shape[1] != x_dim:
            p, rows, start = offsets[c]
            raise ValueError(f"simulations {start}..{start + rows - 1}: simulator returned x of dimension "
                             f"{x.shape[1]}, earlier chunks had {x_dim}")
        finished[c] = x
        if on_done is not None:
            on_done(c, x)

    def job(c):
        p, rows, start = offsets[c]
        return simulate_chunk(spec, theta[p:p + rows], chunk_seed(seed, c), start, timeout, encode, decode)

    try:
        if spec.kind == "command" and workers > 1:
            with ThreadPoolExecutor(workers) as ex:
                futures = {c: ex.submit(job, c) for c in chunk_ids}
                for c in chunk_ids:
                    accept(c, futures[c].result())
        elif spec.kind != "command" and (workers > 1 or timeout):
            _run_in_processes(spec, theta, chunk_ids, offsets, seed, workers, timeout, accept)
        else:
            for c in chunk_ids:
                accept(c, job(c))
    except SimulationError:
        raise
    except Exception as err:  # noqa: BLE001 - keep what finished, report the first failure
        raise SimulationError(str(err) if isinstance(err, (ValueError, RuntimeError)) else
                              f"{type(err).__name__}: {err}", finished) from err
    return finished


def _run_in_processes(spec, theta, chunk_ids, offsets, seed, workers, timeout, accept):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    pool = ctx.Pool(max(1, workers))
    try:
        pending = []
        for c in chunk_ids:
            p, rows, start = offsets[c]
            pending.append((c, pool.apply_async(_pool_worker, ((spec, theta[p:p + rows], chunk_seed(seed, c), start),))))
        for c, res in pending:
            p, rows, start = offsets[c]
            deadline = None if not timeout else timeout
            try:
                x = res.get(deadline)
            except mp.TimeoutError:
                # chunks ahead of this one may still finish; collect those already done
                for c2, r2 in pending:
                    if c2 != c and r2.ready() and r2.successful():
                        try:
                            accept(c2, r2.get(0))
                        except Exception:  # noqa: BLE001
                            pass
                raise RuntimeError(f"simulations {start}..{start + rows - 1}: simulator timed out after "
                                   f"{timeout:g} s (--timeout)") from None
            accept(c, x)
        pool.close()
    finally:
        pool.terminate()
        pool.join()
