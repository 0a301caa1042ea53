"""README examples at the default thread count and at --threads 1, side by side.

    python benchmarks/threads.py [--busy 4] [--examples copula,dp,pcn] [--rounds 1] > out.yaml

Issue 29, "done means": the default (`--threads 0`, resolved by cli/threads.py) must take at most
1.3x the wall time of `--threads 1`, on an idle machine and beside 4 busy processes (`--busy 4`
starts 4 spinning processes for the duration of the run). The examples are the README's, reduced
so that a pair runs in about a minute on 2 loaded cores (`--full` runs them at README size). The
environment has no OMP_NUM_THREADS, so the default is what a user gets. Each round runs default
and one-thread back to back (order alternating between rounds); the figure is the median wall time.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

DATA = os.environ.get("CORTEXKIT_SHARED_DATA", os.path.join(os.path.dirname(__file__), "..", "..",
                                                            "shared", "data"))

EXAMPLES = {
    # README "estimate-copula" (--steps 3000 there; -n 16000)
    "copula": ("cortexkit estimate-copula simulate --copula clayton:theta=3 -n {n} --seed 1 | "
               "cortexkit estimate-copula fit - --hidden 128 --depth 2 --steps {steps} {threads} "
               "-q -o /dev/null", {"n": 4000, "steps": 150}, {"n": 16000, "steps": 3000}),
    # README "dp-fairness-train" (the train verb; evaluate is a few seconds)
    "dp": ("head -n 30001 {data}/dpfair/adult/adult_purified.csv > train.csv && "
           "cortexkit dp-fairness-train train train.csv --label '>50K' --sensitive sex --gamma 0.05 "
           "--epsilon 1 -q {threads} -o /dev/null", {}, {}),
    # README "train-pcn" (--epochs 3 there)
    "pcn": ("cortexkit train-pcn train {data}/pcn/mnist_png_train10k_test10k.safetensors --depth 8 "
            "--steps 8 --epochs {epochs} -q {threads} -o /dev/null", {"epochs": 1}, {"epochs": 3}),
}


def spin(stop):
    while not stop.is_set():
        pass


def run_once(script: str, cwd: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    start = time.perf_counter()
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {script}\n{proc.stderr.decode()[-500:]}")
    return time.perf_counter() - start


def resolved_default() -> int:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run(["cortexkit", "estimate-copula", "fit", "--print-config"], env=env,
                         capture_output=True, check=True).stdout
    return yaml.safe_load(out)["threads"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--examples", default="copula,dp,pcn")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    stop = mp.Event()
    spinners = [mp.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    rows = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.examples.split(","):
                template, reduced, full = EXAMPLES[name]
                sizes = full if args.full else reduced
                times = {"default": [], "one": []}
                chosen = []
                for r in range(args.rounds):
                    order = ["default", "one"] if r % 2 == 0 else ["one", "default"]
                    for which in order:
                        if which == "default":
                            chosen.append(resolved_default())
                        script = template.format(data=DATA, threads="" if which == "default"
                                                 else "--threads 1", **sizes)
                        times[which].append(run_once(script, tmp))
                        print(f"{name} {which}: {times[which][-1]:.1f} s", file=sys.stderr)
                d, o = statistics.median(times["default"]), statistics.median(times["one"])
                rows[name] = {"command": template.format(data="DATA", threads="[--threads 1]",
                                                         **sizes),
                              "default_threads_resolved": chosen, "default_s": round(d, 2),
                              "one_thread_s": round(o, 2), "ratio_default_over_one": round(d / o, 3),
                              "within_1_3": d / o <= 1.3}
    finally:
        stop.set()
        for p in spinners:
            p.join(timeout=5)
    yaml.safe_dump({"busy_processes": args.busy, "cpus": os.cpu_count(),
                    "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
                    "reduced": not args.full, "rounds": args.rounds, "examples": rows},
                   sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
