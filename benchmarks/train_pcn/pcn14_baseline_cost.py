"""pcn14: what the first-try baseline check costs a train-pcn run. Runs the man page's first
example (MNIST 10k/10k, MLP depth 8, 3 epochs, scored on the test split) through the installed
command with the default --baseline (plain BP for Meta-PCN at its defaults) and with
--baseline none, alternating, and records each run's wall and CPU seconds (user + system of the
child) and the baseline figures from the artifact; writes YAML.

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn14_baseline_cost.py --repeats 1 \
        -o benchmarks/train_pcn/pcn14_baseline_cost.yaml
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA",
                          Path(__file__).resolve().parents[3] / "shared" / "data")) / "pcn"


def timed(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(wall, 1), round(cpu, 1), proc.stderr


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    exe = shutil.which("cortexkit") or str(Path(os.sys.executable).parent / "cortexkit")
    mnist = DATA / "mnist_png_train10k_test10k.safetensors"
    base = [exe, "train-pcn", "train", str(mnist), "--split", "train", "--test", str(mnist),
            "--arch", "mlp", "--depth", str(args.depth), "--epochs", str(args.epochs)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for label, extra in [("default", []), ("none", ["--baseline", "none"])]:
                out = Path(tmp) / f"{label}.st"
                wall, cpu, err = timed([*base, *extra, "-o", str(out)])
                from cortexkit.formats.artifact import read_artifact

                art = read_artifact(str(out), "pcn-model")
                check = art.meta_json("pcn.baseline") if "pcn.baseline" in art.metadata else None
                history = art.meta_json("pcn.history")
                rows.append({"run": label, "repeat": repeat, "wall_s": wall, "cpu_s": cpu,
                             "test_top1": round(100 * history[-1]["test_top1"], 2),
                             "baseline": check})
                print(rows[-1], flush=True)
    pairs = {r: [x for x in rows if x["run"] == r] for r in ("default", "none")}
    summary = {k: {"wall_s": round(sum(x["wall_s"] for x in v) / len(v), 1),
                   "cpu_s": round(sum(x["cpu_s"] for x in v) / len(v), 1)} for k, v in pairs.items()}
    summary["cpu_ratio"] = round(summary["default"]["cpu_s"] / summary["none"]["cpu_s"], 2)
    summary["wall_ratio"] = round(summary["default"]["wall_s"] / summary["none"]["wall_s"], 2)
    out = {"command": " ".join(base[1:]), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
           "runs": rows, "summary": summary}
    text = yaml.safe_dump(out, sort_keys=False, width=200)
    print(text) if args.output == "-" else Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
