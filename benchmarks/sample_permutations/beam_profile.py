"""Issue 22 item 1, the beam-16 miss: what a width-16 beam search costs against sampling, in
one process, one thread, CPU time (the default AR model, random weights, n = 10, insertion
codes), and where its time goes (cProfile, top functions by own time).

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/beam_profile.py --out result.yaml
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import save  # noqa: E402

from cortexkit.tools.permutations import neural as N  # noqa: E402


def _timed(fn):
    began = time.process_time()
    fn()
    return time.process_time() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=512, help="rows searched per timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = N.PermutationTransformer(N.NetConfig(10, "insertion", "ar")).eval()
    N.ar_beam_search_codes(net, 64, beam_width=16)  # warm-up
    beam_times, sample_times = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same load
        beam_times.append(_timed(lambda: N.ar_beam_search_codes(net, args.rows, beam_width=16)))
        sample_times.append(_timed(lambda: N.ar_sample_codes(net, 16 * args.rows)))
    beam, sample = args.rows / min(beam_times), 16 * args.rows / min(sample_times)
    ratios = sorted(16 * b / s for b, s in zip(beam_times, sample_times))  # one row searched, in draws
    profile = cProfile.Profile()
    profile.enable()
    N.ar_beam_search_codes(net, args.rows, beam_width=16)
    profile.disable()
    stats = pstats.Stats(profile)
    total = stats.total_tt
    top = sorted(((v[2], f"{k[0].split('/')[-1]}:{k[1]}({k[2]})") for k, v in stats.stats.items()), reverse=True)[:8]
    save({"beam16_rows_per_cpu_s": beam, "sample_perms_per_cpu_s": sample,
          "beam16_cost_in_samples_best": sample / beam,
          "beam16_cost_in_samples_median_pair": ratios[len(ratios) // 2],
          "profile_share": {name: round(t / total, 3) for t, name in top}}, args.out, "beam_profile.yaml")


if __name__ == "__main__":
    main()
