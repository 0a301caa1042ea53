"""Issue 22 item 1: autoregressive sampling speed (one thread, decode included).

In one run, at n = 10 and n = 50: numpy's shuffle (Generator.permuted), the 1-NFE model
(a masked model of the default architecture sampled in one forward pass), the default AR
model (d 64, 2 layers, 4 heads, ff 128; insertion codes) sampled by incremental decoding
(KV cache) and, as the reference, by one full forward pass per digit; item-conditioned AR
(one item-id token per digit, the MovieLens set-up); beam search of width 16 at n = 10
(rows searched per second). Then the same through the installed CLI (`sample -v` reports
its own throughput, net of start-up). Weights are random: speed does not depend on them.

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/ar_speed.py --out result.yaml

``--quick`` shrinks batches (the shared machine); the YAML says which sizes ran.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import cortexkit, save  # noqa: E402

from cortexkit.formats.artifact import write_artifact  # noqa: E402
from cortexkit.tools.permutations import model as M  # noqa: E402
from cortexkit.tools.permutations import neural as N  # noqa: E402
from cortexkit.tools.permutations import representations as R  # noqa: E402


CPU_RATES = {}


def best_rate(fn, count, repeats=3, key=None):
    """count / the fastest of ``repeats`` wall times; the CPU-time rate (process_time, the one
    thread's own time, which other jobs on a shared machine do not inflate) goes to CPU_RATES."""
    times, cpu = [], []
    for _ in range(repeats):
        began, began_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    CPU_RATES.setdefault("last", []).append(count / min(cpu))
    return count / min(times)


def net_for(n, mode, vocab=0):
    torch.manual_seed(0)
    extra = dict(context_vocab=vocab + 1, context_len=n, context_aligned=True) if vocab else {}
    return N.PermutationTransformer(N.NetConfig(n, "insertion", mode, **extra)).eval()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--quick", action="store_true", help="smaller batches (shared machine)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    sizes = {10: 20000, 50: 4000} if not args.quick else {10: 8192, 50: 2048}
    result = {"threads": 1, "quick": args.quick, "rows": sizes, "by_n": {}}
    for n, rows in sizes.items():
        e = {}
        base = np.tile(np.arange(n), (rows, 1))
        e["numpy_permuted"] = best_rate(lambda: rng.permuted(base, axis=1), rows)
        mlm = net_for(n, "mlm")
        e["mlm_1nfe"] = best_rate(lambda: R.decode(N.sample_codes(mlm, rows, nfe=1, generator=g),
                                                   "insertion"), rows)
        ar = net_for(n, "ar")
        e["ar_incremental"] = best_rate(lambda: R.decode(N.sample_codes(ar, rows, generator=g),
                                                         "insertion"), rows)
        small = max(256, rows // (8 if n == 10 else 16))
        e["ar_full_forward_reference"] = best_rate(
            lambda: R.decode(N.sample_codes(ar, small, generator=g, incremental=False), "insertion"), small, 1)
        vocab = 1000
        ctx = torch.randint(0, vocab, (rows, n), generator=g)
        arc = net_for(n, "ar", vocab)
        e["ar_items_incremental"] = best_rate(
            lambda: R.decode(N.sample_codes(arc, rows, context=ctx, generator=g), "insertion"), rows)
        e["ar_items_full_forward_reference"] = best_rate(
            lambda: R.decode(N.sample_codes(arc, small, context=ctx[:small], generator=g, incremental=False),
                             "insertion"), small, 1)
        e["ar_incremental_us_per_digit"] = 1e6 / (e["ar_incremental"] * n)
        e["ar_items_incremental_us_per_digit"] = 1e6 / (e["ar_items_incremental"] * n)
        e["speedup_incremental_over_full_forward"] = e["ar_incremental"] / e["ar_full_forward_reference"]
        e["ratio_ar_incremental_over_numpy"] = e["ar_incremental"] / e["numpy_permuted"]
        e["ratio_ar_incremental_over_mlm_1nfe"] = e["ar_incremental"] / e["mlm_1nfe"]
        if n == 10:
            beam_rows = 1024 if not args.quick else 512
            bctx = ctx[:beam_rows]
            e["ar_beam16_rows_per_s"] = best_rate(
                lambda: N.beam_search_codes(ar, beam_rows, beam_width=16, keep=1), beam_rows)
            e["ar_items_beam16_rows_per_s"] = best_rate(
                lambda: N.beam_search_codes(arc, beam_rows, beam_width=16, keep=1, context=bctx), beam_rows)
            e["ar_items_beam16_full_forward_reference"] = best_rate(
                lambda: N.beam_search_codes(arc, 64, beam_width=16, keep=1, context=bctx[:64],
                                            incremental=False), 64, 1)
        result["by_n"][n] = {k: round(float(v), 3) for k, v in e.items()}
        rates = [k for k in e if not k.startswith(("ratio", "speedup")) and not k.endswith("us_per_digit")]
        result["by_n"][n]["cpu_time_rates"] = {k: round(v, 1) for k, v in zip(rates, CPU_RATES.pop("last"))}
        print(n, result["by_n"][n], flush=True)

    # through the installed command: sample -v reports its own throughput (start-up excluded)
    cli = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, rows in sizes.items():
            model = M.PermutationModel("ar", n, "insertion", torch.arange(n), net=net_for(n, "ar"))
            tensors, meta = model.to_tensors()
            path = Path(tmp) / f"ar{n}.st"
            write_artifact(path, tensors, "permutation-model", metadata=meta)
            line = cortexkit("sample-permutations", "sample", path, "-n", rows, "--threads", 1, "-v",
                             "-o", Path(tmp) / "s.st").stderr.decode()
            cli[f"sample_n{n}"] = line.strip().splitlines()[-1]
            if n == 10:
                line = cortexkit("sample-permutations", "sample", path, "--strategy", "beam", "--beam-width",
                                 16, "--threads", 1, "-v", "-o", Path(tmp) / "b.st").stderr.decode()
                cli["beam16_one_row_n10"] = line.strip().splitlines()[-1]
    result["cli_sample_-v"] = cli
    per_s = {k: float(re.search(r": ([\d,]+)/s", v).group(1).replace(",", "")) for k, v in cli.items()}
    result["cli_per_s"] = per_s
    result["targets"] = {"ar_n10": ">= 10000/s", "ar_n50": ">= 1000/s", "beam16_n10": ">= 1000 rows/s"}
    save(result, args.out, "sample_permutations_ar_speed.yaml")


if __name__ == "__main__":
    main()
