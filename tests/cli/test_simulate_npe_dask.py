"""simulate-npe simulate --scheduler: chunks as tasks of a real Dask distributed cluster (issue 24).

One LocalCluster (two worker processes of one thread on 127.0.0.1) serves the module. The
simulator that kills workers is a Python function whose parameter column 0 is the row index
(--theta), so it knows which chunk it is running and dies with SIGKILL on the chosen one.
"""
import json
import os
import sys
import textwrap

import pytest
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(__file__))
from test_simulate_npe import same_bytes  # noqa: E402

distributed = pytest.importorskip("distributed")
TOOL = "simulate-npe"
KILLSIM = textwrap.dedent("""\
    import json, os, signal
    from pathlib import Path
    import torch
    CONTROL = Path(__file__).with_name("kill.json")
    def simulate(theta):
        control = json.loads(CONTROL.read_text())
        if int(round(float(theta[0, 0]))) == control["row"] and control.get("hang"):
            import threading
            threading.Event().wait(40)  # hangs (past --timeout), holding its worker's thread
        elif int(round(float(theta[0, 0]))) == control["row"]:
            with open(control["mark"], "a") as f:  # one line per kill
                f.write("killed\\n")
            if control["always"] or Path(control["mark"]).read_text().count("\\n") == 1:
                os.kill(os.getpid(), signal.SIGKILL)
        return torch.stack([theta[:, 0] * 2, theta[:, 1] + torch.randn(theta.shape[0])], 1)
    """)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import dask
    from distributed import LocalCluster

    mods = tmp_path_factory.mktemp("dasksim")
    (mods / "killsim.py").write_text(KILLSIM)
    old = os.environ.get("PYTHONPATH")
    # the workers import killsim: spawned worker processes take this process's sys.path, the command its env
    os.environ["PYTHONPATH"] = os.pathsep.join([str(mods), *([old] if old else [])])
    sys.path.insert(0, str(mods))
    try:
        # one rerun of a task whose worker died, then KilledWorker (the default allows 3)
        with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
            local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                 dashboard_address=None, worker_dashboard_address=None)
        yield local.scheduler_address, mods
        local.close()
    finally:
        sys.path.remove(str(mods))
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def control(mods, row=-1, always=False, hang=False):
    (mods / "kill.json").write_text(json.dumps({"row": row, "always": always, "hang": hang,
                                                "mark": str(mods / "kills.txt")}))
    (mods / "kills.txt").unlink(missing_ok=True)


def kills(mods):
    path = mods / "kills.txt"
    return path.read_text().count("\n") if path.exists() else 0


def test_dask_run_gives_the_local_bytes(cli, cluster, tmp_path):
    address, _ = cluster
    common = ["simulate", "--task", "ou", "-n", "60", "--chunk-size", "10", "--seed", "3"]
    assert cli(TOOL, *common, "-o", tmp_path / "local.st").returncode == 0
    p = cli(TOOL, *common, "--scheduler", address, "-o", tmp_path / "dask.st")
    assert p.returncode == 0, p.stderr
    assert same_bytes(tmp_path / "local.st", tmp_path / "dask.st", tmp_path / "restamped.st")
    # the man page's form: the scheduler file of `dask scheduler --scheduler-file sched.json`, which the
    # scheduler writes at start-up ({"type": "Scheduler", "address": ...}); Client.write_scheduler_file
    # cannot stand in once tasks have run (distributed 2026.8 dumps worker metrics with tuple keys)
    (tmp_path / "sched.json").write_text(json.dumps({"type": "Scheduler", "address": address}))
    p = cli(TOOL, *common, "--scheduler", tmp_path / "sched.json", "-o", tmp_path / "file.st")
    assert p.returncode == 0, p.stderr
    assert same_bytes(tmp_path / "local.st", tmp_path / "file.st", tmp_path / "restamped.st")


_LOCAL = {}


@pytest.fixture
def killsim_run(cli, cluster, tmp_path_factory):
    """Parameters whose column 0 is the row index, the options of a killsim run, and its local result
    (made once for the module)."""
    _, mods = cluster
    if "run" in _LOCAL:
        return _LOCAL["run"]
    folder = tmp_path_factory.mktemp("killsim")
    g = torch.Generator().manual_seed(0)
    save_file({"theta": torch.stack([torch.arange(60, dtype=torch.float32), torch.rand(60, generator=g)], 1)},
              str(folder / "theta.st"))
    common = ["simulate", "--theta", folder / "theta.st", "--simulator", "killsim:simulate", "--chunk-size", "10",
              "--seed", "4"]
    control(mods)
    local = cli(TOOL, *common, "-o", folder / "local.st", env={"PYTHONPATH": str(mods)})
    assert local.returncode == 0, local.stderr
    _LOCAL["run"] = common, folder / "local.st"
    return _LOCAL["run"]


def test_a_worker_killed_mid_run_reruns_its_chunk_on_a_live_worker(cli, cluster, killsim_run, tmp_path):
    address, mods = cluster
    common, local = killsim_run
    control(mods, row=30)  # the worker that runs rows 30..39 first dies
    p = cli(TOOL, *common, "--scheduler", address, "-o", tmp_path / "dask.st")
    assert p.returncode == 0, p.stderr
    assert kills(mods) == 2  # killed once, then rerun (the second line) and finished
    assert same_bytes(local, tmp_path / "dask.st", tmp_path / "restamped.st")


def test_a_chunk_that_kills_every_worker_fails_in_one_line_keeping_the_rest(cli, cluster, killsim_run, tmp_path,
                                                                            one_line_error):
    address, mods = cluster
    common, local = killsim_run
    control(mods, row=30, always=True)
    out = tmp_path / "dask.st"
    p = cli(TOOL, *common, "--scheduler", address, "-o", out)
    one_line_error(p, f"{TOOL} simulate", "simulations 30..39: the Dask task failed (KilledWorker", f"kept in {out}.partial")
    assert kills(mods) == 2 and not out.exists()
    from cortexkit.formats.artifact import read_artifact

    done = json.loads(read_artifact(f"{out}.partial").metadata["npe.done"])
    assert [30, 40] not in done and all(b <= 30 or a >= 40 for a, b in done) and done[0][0] == 0
    control(mods)
    r = cli(TOOL, *common, "--scheduler", address, "--resume", f"{out}.partial", "-o", out)
    assert r.returncode == 0, r.stderr
    assert same_bytes(local, out, tmp_path / "restamped.st")


def test_a_hung_python_simulator_times_out_on_the_cluster(cli, cluster, killsim_run, tmp_path, one_line_error):
    """Last in the module: the hung task keeps a worker thread for 40 s (Dask cannot stop it)."""
    address, mods = cluster
    common, _ = killsim_run
    control(mods, row=30, hang=True)
    out = tmp_path / "dask.st"
    p = cli(TOOL, *common, "--scheduler", address, "--timeout", "8", "-o", out)
    one_line_error(p, f"{TOOL} simulate", "simulations 30..39: simulator timed out after 8 s", f"kept in {out}.partial")
    kept = sims_index(f"{out}.partial")
    assert kept[:30] == list(range(30)) and 30 not in kept


def sims_index(path):
    from safetensors.torch import load_file

    return load_file(str(path))["index"].tolist()
