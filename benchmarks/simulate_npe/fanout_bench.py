"""simulate-npe fan-out (issue 24): wall time of one simulate run locally, with --workers 2, as 4
shards (run at once) + merge, and on a Dask LocalCluster (2 worker processes, 1 thread each), and
whether every variant writes the local run's bytes (compared with the local file's command stamp).

    python benchmarks/simulate_npe/fanout_bench.py --task sir -n 20000 --chunk-size 2000 \
        --out benchmarks/simulate_npe/results/fanout.yaml
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

EXE = str(Path(sys.executable).with_name("cortexkit"))


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
    args = ap.parse_args()
    base = [EXE, "simulate-npe", "simulate", "--task", args.task, "-n", str(args.n), "--chunk-size",
            str(args.chunk_size), "--seed", "1", "--threads", "1"]
    work = Path(tempfile.mkdtemp())
    rows = {}
    rows["local"] = timed([base + ["-o", str(work / "local.st")]])
    rows["workers_2"] = timed([base + ["--workers", "2", "-o", str(work / "w2.st")]])
    t = timed([base + ["--shard", f"{i}/4", "-o", str(work / f"s{i}.st")] for i in range(4)])
    rows["shards_4_then_merge"] = t + timed([[EXE, "simulate-npe", "merge", *(str(work / f"s{i}.st") for i in range(4)),
                                              "-o", str(work / "merged.st")]])
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, worker_dashboard_address=None)
    rows["dask_cluster_start"] = time.perf_counter() - t0
    rows["dask_first_run"] = timed([base + ["--scheduler", cluster.scheduler_address, "-o", str(work / "d1.st")]])
    rows["dask_warm_run"] = timed([base + ["--scheduler", cluster.scheduler_address, "-o", str(work / "d2.st")]])
    cluster.close()
    same = {name: same_bytes(work / "local.st", work / f, work / "scratch.st")
            for name, f in (("workers_2", "w2.st"), ("shards_4_then_merge", "merged.st"),
                            ("dask_first_run", "d1.st"), ("dask_warm_run", "d2.st"))}
    report = {"task": args.task, "n": args.n, "chunk_size": args.chunk_size,
              "wall_s": {k: round(v, 2) for k, v in rows.items()},
              "ratio_to_local": {k: round(v / rows["local"], 2) for k, v in rows.items() if k != "dask_cluster_start"},
              "same_bytes_as_local": same}
    Path(args.out).write_text(yaml.safe_dump(report, sort_keys=False))
    print(yaml.safe_dump(report, sort_keys=False))


if __name__ == "__main__":
    main()
