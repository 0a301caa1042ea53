"""Shared helpers of the sample-permutations benchmarks (data, splits, timing, YAML out)."""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", REPO.parent / "shared" / "data")) / "perm"
SUSHI = DATA / "sushi" / "00014-00000001.soc"
MOVIELENS = DATA / "movielens-100k" / "u.data"


def need(path: Path) -> Path:
    if not path.exists():
        sys.exit(f"missing data: {path} (see shared/data/perm/PROVENANCE.md)")
    return path


def cortexkit(*args, capture=True) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "cortexkit"
    cmd = [str(exe), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=capture, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode != 0:
        sys.exit(f"failed: {shlex.join(cmd)}\n{proc.stderr.decode() if proc.stderr else ''}")
    return proc


def sushi_split(seed: int = 0, n_train: int = 4000):
    """PrefLib sushi orderings (5000, 10) shuffled by ``seed``; first 4000 train, rest test."""
    from cortexkit.formats.rankings import read_preflib

    orders = read_preflib(need(SUSHI).read_bytes(), str(SUSHI)).orderings
    perm = np.random.default_rng(seed).permutation(len(orders))
    x = orders[perm]
    return x[:n_train], x[n_train:]


def write_text_orders(path: Path, x: np.ndarray) -> Path:
    np.savetxt(path, x, fmt="%d", delimiter=",")
    return path


def median_time(fn, repeats: int = 5, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def save(result: dict, out: str | None, default_name: str) -> None:
    from cortexkit.formats.report import plain

    result = plain({"command": shlex.join([sys.executable.split("/")[-1], *sys.argv]), **result})
    text = yaml.safe_dump(result, sort_keys=False, width=100)
    target = Path(out) if out else REPO / "benchmarks" / "out" / default_name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(text)


def ndcg_at(orderings: np.ndarray, ratings: np.ndarray, k: int = 5) -> np.ndarray:
    """NDCG@k per row; ``orderings`` (m, n) local indices best first, ``ratings`` (m, n)."""
    gains = 2.0 ** ratings - 1
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = (np.take_along_axis(gains, orderings[:, :k], 1) * disc).sum(1)
    ideal = (np.sort(gains, axis=1)[:, ::-1][:, :k] * disc).sum(1)
    return dcg / ideal
