"""Start-up time of every cortexkit command beside `python -c pass`, in one run.

    OMP_NUM_THREADS=1 python benchmarks/startup.py [--repeat 5] > benchmarks/base/startup.yaml

For every tool verb: `--help` and `--print-config` (the verb resolved, its options checked, no
work); for the glue: `cortexkit --help`, `inspect` and `convert` of a 3-row file. Each is run
--repeat times, interleaved with `python -c pass`; the figure is the minimum wall time (the
least disturbed by other processes) and its ratio to python's. Issue 29 item 5's target:
`--help`, `inspect` and `convert` of a small file in <= 0.3 s on an idle core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import click
import yaml


def wall(cmd, cwd) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-300:]}")
    return time.perf_counter() - start


def commands(exe: str) -> dict[str, list[str]]:
    from cortexkit.cli.main import cli

    ctx = click.Context(cli, info_name="cortexkit")
    out = {"cortexkit --help": [exe, "--help"],
           "inspect small.st": [exe, "inspect", "small.st"],
           "convert small.csv -o small2.st": [exe, "convert", "small.csv", "-o", "small2.st"],
           "convert small.st -o small.tsv": [exe, "convert", "small.st", "-o", "small.tsv"]}
    for name in cli.list_commands(ctx):
        group = cli.get_command(ctx, name)
        if not isinstance(group, click.Group):
            continue
        for verb in group.list_commands(ctx):
            out[f"{name} {verb} --help"] = [exe, name, verb, "--help"]
            out[f"{name} {verb} --print-config"] = [exe, name, verb, "--print-config"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    exe = shutil.which("cortexkit") or os.path.join(os.path.dirname(sys.executable), "cortexkit")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "small.csv"), "w") as handle:
            handle.write("a,b\n1,2.5\n3,4.5\n5,6.5\n")
        subprocess.run([exe, "convert", "small.csv", "small.st"], cwd=tmp, check=True)
        rows, python = {}, []
        for label, cmd in commands(exe).items():
            times = []
            for _ in range(args.repeat):
                python.append(wall([sys.executable, "-c", "pass"], tmp))
                times.append(wall(cmd, tmp))
            rows[label] = min(times)
            print(f"{label}: {rows[label]:.3f} s", file=sys.stderr)
    base = min(python)
    load = os.getloadavg()
    report = {
        "python -c pass": round(base, 4),
        "loadavg_at_end": [round(x, 2) for x in load],
        "cpus": os.cpu_count(),
        "repeat": args.repeat,
        "commands": {k: {"s": round(v, 4), "over_python": round(v / base, 2)}
                     for k, v in rows.items()},
        "slowest": max(rows, key=rows.get),
    }
    yaml.safe_dump(report, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
