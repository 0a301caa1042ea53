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
4. one thread when the verb says its work is small (:func:`threads_for_work`): under
   ``SMALL_WORK_FLOPS`` floating-point operations per step, splitting an operation across
   threads costs more than it saves (measured in benchmarks/base/threads.py).

An explicit ``--threads N`` (command line or config file) is used as given. The number used is
what ``--print-config`` shows and what the artifact's stored config holds, so a run can be
repeated with the same thread count (and so the same bytes) on a machine under another load.
"""

from __future__ import annotations

import math
import os

# Below this many floating-point operations per training step a second thread does not pay
# (benchmarks/base/threads.py, "work size" table).
SMALL_WORK_FLOPS = 1e9


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


def threads_for_work(threads: int, flops_per_step: float) -> int:
    """One thread for work under :data:`SMALL_WORK_FLOPS` per step, else ``threads``."""
    return 1 if flops_per_step < SMALL_WORK_FLOPS else threads
