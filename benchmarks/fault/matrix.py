"""The fault matrix as a benchmark: run tests/cli/test_fault_matrix.py and test_fault_reproducers.py
once, count the cases of each class and the non-clean ones (a failure is a traceback, an internal
error, a multi-line message, a wrong exit status, a file left behind or a hang), and write YAML.

    python benchmarks/fault/matrix.py -o benchmarks/fault/matrix.yaml

The anchor is issue 30's own run of the matrix (1,143 cases; its non-clean counts are in the issue).
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
FILES = ["tests/cli/test_fault_matrix.py", "tests/cli/test_fault_reproducers.py"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        start = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               f"--junitxml={junit}", *FILES], cwd=REPO, capture_output=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        classes = collections.defaultdict(lambda: collections.Counter())
        for case in ET.parse(junit).getroot().iter("testcase"):
            name = case.get("name").split("[")[0]
            outcome = ("failed" if case.find("failure") is not None or case.find("error") is not None
                       else "skipped" if case.find("skipped") is not None else "passed")
            classes[f"{Path(case.get('classname').replace('.', '/')).name}::{name}"][outcome] += 1
    total = collections.Counter()
    for counts in classes.values():
        total.update(counts)
    report = {
        "command": "python benchmarks/fault/matrix.py",
        "pytest_exit_status": proc.returncode,
        "cases_run": total["passed"] + total["failed"],
        "cases_skipped_not_applicable": total["skipped"],
        "non_clean": total["failed"],
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "by_class": {k: dict(v) for k, v in sorted(classes.items())},
        "anchor_issue_30": {"cases": 1143, "tracebacks": 0, "hangs": 0, "clobbered_files": 0,
                            "accepted_bad_input_first_three_tools": 16,
                            "note": "the issue's own matrix (subprocesses) before this work"},
    }
    text = yaml.safe_dump(report, sort_keys=False)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
