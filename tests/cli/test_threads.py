"""--threads 0 (the default) fits the machine: affinity, OMP_NUM_THREADS, SLURM_CPUS_PER_TASK,
the load and the size of the work; the number used is what --print-config and the artifact say."""

import os
import subprocess
import sys

import pytest
import yaml

from cortexkit.cli import threads as T

VERB = ["estimate-copula", "fit"]  # a torch verb; --print-config needs no input


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK")}
    env.update(extra)
    return env


def printed_threads(exe, *args, env=None, preexec_fn=None) -> int:
    proc = subprocess.run([exe, *VERB, *args, "--print-config"], capture_output=True,
                          env=env or clean_env(), preexec_fn=preexec_fn, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)["threads"]


def machine(monkeypatch, cpus=8, load=0.0, quota=None):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(T, "_cgroup_quota", lambda: quota)


@pytest.mark.parametrize("env, load, quota, expected, why", [
    ({}, 0.0, None, 8, "CPU affinity"),
    ({"OMP_NUM_THREADS": "3"}, 0.0, None, 3, "OMP_NUM_THREADS"),
    ({"OMP_NUM_THREADS": "4,2"}, 0.0, None, 4, "OMP_NUM_THREADS"),  # a nested list: the first
    ({"SLURM_CPUS_PER_TASK": "2"}, 0.0, None, 2, "SLURM_CPUS_PER_TASK"),
    ({"OMP_NUM_THREADS": "5", "SLURM_CPUS_PER_TASK": "6"}, 0.0, None, 5, "OMP_NUM_THREADS"),
    ({"OMP_NUM_THREADS": "junk", "SLURM_CPUS_PER_TASK": "0"}, 0.0, None, 8, "CPU affinity"),
    ({}, 6.4, None, 2, "load average"),  # 8 CPUs, 6.4 busy: 1.6 free -> 2
    ({}, 20.0, None, 1, "load average"),  # oversubscribed: one thread, never zero
    ({}, 0.0, 3, 3, "CPU affinity"),  # a cgroup quota of 3 CPUs caps the affinity count
])
def test_each_limit_caps_the_default(monkeypatch, env, load, quota, expected, why):
    machine(monkeypatch, load=load, quota=quota)
    assert T.default_threads(env) == (expected, why)


def test_installed_command_under_each_variable_and_an_affinity_mask(cortexkit_exe):
    assert printed_threads(cortexkit_exe, env=clean_env(OMP_NUM_THREADS="1")) == 1
    assert printed_threads(cortexkit_exe, env=clean_env(SLURM_CPUS_PER_TASK="1")) == 1
    one_cpu = sorted(os.sched_getaffinity(0))[:1]
    masked = printed_threads(cortexkit_exe, preexec_fn=lambda: os.sched_setaffinity(0, one_cpu))
    assert masked == 1
    unmasked = printed_threads(cortexkit_exe)
    assert 1 <= unmasked <= len(os.sched_getaffinity(0))
    assert printed_threads(cortexkit_exe, "--threads", "3") == 3  # given: used as given
    assert printed_threads(cortexkit_exe, "--threads", "3",
                           env=clean_env(OMP_NUM_THREADS="1")) == 3


SCRIPT = """
import os, sys
os.sched_getaffinity = lambda pid: set(range(8))
os.cpu_count = lambda: 8
os.getloadavg = lambda: ({load}, 0.0, 0.0)
from cortexkit.cli import threads
threads._cgroup_quota = lambda: None
from cortexkit.cli.main import main
main({args!r})
"""


@pytest.mark.parametrize("env, load, expected", [
    ({}, 0.0, 8), ({"OMP_NUM_THREADS": "3"}, 0.0, 3), ({"SLURM_CPUS_PER_TASK": "2"}, 0.0, 2),
    ({}, 5.0, 3)])
def test_print_config_shows_the_number_used_on_an_eight_cpu_machine(env, load, expected):
    script = SCRIPT.format(load=load, args=[*VERB, "--print-config"])
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          env=clean_env(**env), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["threads"] == expected
