"""How many CPU threads a torch command uses when the user does not say (``--threads 0``).

The default fits the machine the process runs on, not the machine torch was built for:

1. the CPUs this process may run on: its affinity mask (``taskset``, cgroups cpusets, Slurm's
   binding), and the cgroup CPU quota (``cpu.max``) when one is set;
2. capped by ``OMP_NUM_THREADS`` and ``SLURM_CPUS_PER_TASK`` when they are set (the first
   number of an ``OMP_NUM_THREADS`` list);
3. capped by the cores other processes leave free: the machine's CPU count minus its
   one-minute load average, at least 1. On a node shared with other jobs an OpenMP team larger
   than the free cores waits at every barrier for a preempted thread (a small copula fit ran
   5x slower at 2 threads than at 1 beside busy jobs; benchmarks/base/RESULTS.md);
4. a verb whose work may be too small to split measures it: the copula fit times a few steps
   at the resolved count and at one thread and keeps the faster (benchmarks/base/threads.py).

An explicit ``--threads N`` (command line or config file) is used as given. The number used is
what ``--print-config`` shows and what the artifact's stored config holds, so a run can be
repeated with the same thread count (and so the same bytes) on a machine under another load.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any, Callable


def _positive_int(text: str | None) -> int | None:
    if not text:
        return None
    first = text.split(",")[0].strip()
    try:
        value = int(first)
    except ValueError:
        return None
    return value if value > 0 else None


def _cgroup_quota() -> int | None:
    """CPUs allowed by a cgroup v2 quota (``cpu.max`` = "QUOTA PERIOD"), rounded up."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as handle:
            quota, period = handle.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def allowed_cpus() -> int:
    """CPUs this process may run on: the affinity mask, capped by a cgroup quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(count, quota) if quota else count)


def free_cpus() -> int:
    """The machine's CPUs less its one-minute load average (at least 1)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return os.cpu_count() or 1
    return max(1, int((os.cpu_count() or 1) - load + 0.5))


def default_threads(env: dict | None = None) -> tuple[int, str]:
    """(threads, why) for ``--threads 0``: the smallest of the limits in the module doc."""
    env = os.environ if env is None else env
    limits = [(allowed_cpus(), "CPU affinity")]
    for var in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK"):
        value = _positive_int(env.get(var))
        if value is not None:
            limits.append((value, var))
    limits.append((free_cpus(), "load average"))
    threads, why = min(limits, key=lambda item: item[0])
    return threads, why


def resolve_threads(ctx) -> None:
    """``--threads 0`` (the default) becomes the number the machine allows
    (:func:`cortexkit.cli.threads.default_threads`), in ``ctx.params``, so ``--print-config``
    and the artifact's config show the number used."""
    if "threads" not in ctx.params or ctx.params["threads"]:
        return
    ctx.params["threads"], ctx.meta["cortexkit.threads_why"] = default_threads()


class _AfterImport:
    """A meta-path finder that runs ``callback(module)`` once, right after ``name`` is first
    imported (and finds nothing itself: the normal finders load the module)."""

    def __init__(self, name: str, callback: Callable[[Any], None]):
        self.name, self.callback = name, callback

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, callback = spec.loader, self.callback
        original = loader.exec_module

        def exec_module(module):
            original(module)
            callback(module)

        loader.exec_module = exec_module
        return spec


def after_import(name: str, callback: Callable[[Any], None]) -> None:
    """Run ``callback(module)`` now if ``name`` is imported, else right after its import."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    for finder in [f for f in sys.meta_path if isinstance(f, _AfterImport) and f.name == name]:
        sys.meta_path.remove(finder)  # a later Run's settings replace an earlier one's
    sys.meta_path.insert(0, _AfterImport(name, callback))
