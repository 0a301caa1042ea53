"""simulate-npe fan-out (issue 24): wall time of one simulate run locally, with --workers 2, as 4
shards (run at once) + merge, and on a Dask LocalCluster (2 worker processes, 1 thread each), and
whether every variant writes the local run's bytes (compared with the local file's command stamp).

    python benchmarks/simulate_npe/fanout_bench.py --task sir -n 20000 --chunk-size 2000 \
        --out benchmarks/simulate_npe/results/fanout.yaml

With --sleep S the simulator is instead an external program that waits S seconds per call (a
stand-in for an expensive simulator whose time is not this machine's CPU: a solver on other
nodes, a licence queue) and adds seeded noise, so the rows say whether the fan-out overlaps the
calls; --parallel P sets --workers, the number of shards and the Dask workers alike.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

EXE = str(Path(sys.executable).with_name("cortexkit"))
SLOW_MODEL = """\
import os, sys, time
import numpy as np
from safetensors.numpy import load, save
theta = load(sys.stdin.buffer.read())["theta"]
time.sleep(float(os.environ["FANOUT_SLEEP"]))
rng = np.random.default_rng(int(os.environ["CORTEXKIT_SEED"]))
x = theta + rng.normal(size=theta.shape)
sys.stdout.buffer.write(save({"x": x.astype(np.float32)}))
"""


def same_bytes(a, b, scratch):
    from cortexkit.formats.artifact import CONFIG, KIND, PRODUCER, VERSION, read_artifact, write_artifact

    ra, rb = read_artifact(str(a)), read_artifact(str(b))
    extra = {k: v for k, v in rb.metadata.items() if k not in (KIND, VERSION, PRODUCER, CONFIG)}
    write_artifact(str(scratch), dict(rb.tensors), rb.kind, producer=ra.producer, config=ra.config, metadata=extra)
    return Path(scratch).read_bytes() == Path(a).read_bytes()


def timed(cmds):
    """Start the commands at once, wait for all; wall seconds."""
    t = time.perf_counter()
    procs = [subprocess.Popen(c, stderr=subprocess.PIPE) for c in cmds]
    for p in procs:
        _, err = p.communicate()
        if p.returncode:
            sys.exit(err.decode())
    return time.perf_counter() - t


def main():
    from distributed import LocalCluster

    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="sir")
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--chunk-size", type=int, default=2000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds per call of an external stand-in model")
    ap.add_argument("--parallel", type=int, default=2, help="--workers and Dask workers")
    ap.add_argument("--shards", type=int, default=4)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp())
    if args.sleep:
        (work / "prior.yaml").write_text("- {name: a, dist: uniform, low: 0.0, high: 1.0}\n"
                                         "- {name: b, dist: uniform, low: 0.0, high: 1.0}\n")
        (work / "model.py").write_text(SLOW_MODEL)
        os.environ["FANOUT_SLEEP"] = str(args.sleep)  # the commands' and the Dask workers' environment
        source = ["--prior", str(work / "prior.yaml"), "--simulator-cmd", f"{sys.executable} {work / 'model.py'}"]
    else:
        source = ["--task", args.task]
    base = [EXE, "simulate-npe", "simulate", *source, "-n", str(args.n), "--chunk-size",
            str(args.chunk_size), "--seed", "1", "--threads", "1"]
    par, shards = args.parallel, args.shards
    rows = {}
    rows["local"] = timed([base + ["-o", str(work / "local.st")]])
    rows[f"workers_{par}"] = timed([base + ["--workers", str(par), "-o", str(work / "w2.st")]])
    t = timed([base + ["--shard", f"{i}/{shards}", "-o", str(work / f"s{i}.st")] for i in range(shards)])
    rows[f"shards_{shards}_then_merge"] = t + timed([[EXE, "simulate-npe", "merge",
                                                      *(str(work / f"s{i}.st") for i in range(shards)),
                                                      "-o", str(work / "merged.st")]])
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=par, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, worker_dashboard_address=None)
    rows["dask_cluster_start"] = time.perf_counter() - t0
    rows["dask_first_run"] = timed([base + ["--scheduler", cluster.scheduler_address, "-o", str(work / "d1.st")]])
    rows["dask_warm_run"] = timed([base + ["--scheduler", cluster.scheduler_address, "-o", str(work / "d2.st")]])
    cluster.close()
    same = {name: same_bytes(work / "local.st", work / f, work / "scratch.st")
            for name, f in ((f"workers_{par}", "w2.st"), (f"shards_{shards}_then_merge", "merged.st"),
                            ("dask_first_run", "d1.st"), ("dask_warm_run", "d2.st"))}
    report = {"task": f"external model, {args.sleep:g} s per call" if args.sleep else args.task,
              "n": args.n, "chunk_size": args.chunk_size, "parallel": par, "shards": shards,
              "wall_s": {k: round(v, 2) for k, v in rows.items()},
              "ratio_to_local": {k: round(v / rows["local"], 2) for k, v in rows.items() if k != "dask_cluster_start"},
              "same_bytes_as_local": same}
    Path(args.out).write_text(yaml.safe_dump(report, sort_keys=False))
    print(yaml.safe_dump(report, sort_keys=False))


if __name__ == "__main__":
    main()
