"""Figure 7: sampling speed (permutations/s, decode included) on one core.

Ours: 1-NFE models (Mallows as a product over Lehmer digits; RIM over insertion vectors;
Fisher-Yates product) at n = 10 and 50, and the neural masked model at batch 1024 against NFE.
Anchors in the same run: numpy shuffles (Generator.permuted, argsort of uniforms), and the
Python samplers users call today (prefsampling Mallows and Plackett-Luce, mallows-models
Mallows, choix Plackett-Luce).

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/speed.py [--out result.yaml]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import median_time, save  # noqa: E402

from cortexkit.tools.permutations import classical as C  # noqa: E402
from cortexkit.tools.permutations import neural as N  # noqa: E402
from cortexkit.tools.permutations import representations as R  # noqa: E402


def rate(fn, count, repeats=5):
    return count / median_time(fn, repeats=repeats)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--batch", type=int, default=100_000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    g = torch.Generator().manual_seed(0)
    B = args.batch
    result = {"threads": 1, "batch": B, "by_n": {}}
    for n in (10, 50):
        entry = {}
        mallows = C.mallows_from_theta(0.3, torch.arange(n))
        rim = C.mallows_from_theta(0.3, torch.arange(n), "insertion")
        fy = C.ProductModel("fisher-yates", torch.log_softmax(
            torch.randn(n, n).masked_fill(~R.legal_mask("fisher-yates", n), float("-inf")), 1), torch.arange(n))
        entry["ours_mallows_lehmer"] = rate(lambda: mallows.sample(B, g), B)
        entry["ours_rim_insertion"] = rate(lambda: rim.sample(B, g), B)
        entry["ours_product_fisher_yates"] = rate(lambda: fy.sample(B, g), B)
        base = np.tile(np.arange(n), (B, 1))
        entry["numpy_permuted"] = rate(lambda: rng.permuted(base, axis=1), B)
        entry["numpy_argsort_uniform"] = rate(lambda: np.argsort(rng.random((B, n)), axis=1), B)
        small = 300 if n == 10 else 100
        try:
            import prefsampling.ordinal as po

            entry["prefsampling_mallows"] = rate(lambda: po.mallows(small, n, 0.3, seed=1), small, 3)
            entry["prefsampling_plackett_luce"] = rate(
                lambda: po.plackett_luce(small, n, list(np.linspace(1, 2, n)), seed=1), small, 3)
        except ImportError:
            entry["prefsampling_mallows"] = None
        try:
            import mallows_models

            sys.path.insert(0, os.path.dirname(mallows_models.__file__))
            import mallows_kendall as mk

            entry["mallows_models_sample"] = rate(lambda: mk.sample(small, n, phi=0.3), small, 3)
        except ImportError:
            entry["mallows_models_sample"] = None
        try:
            import choix

            params = np.linspace(0, 1, n)
            entry["choix_generate_rankings"] = rate(lambda: choix.generate_rankings(params, small, size=n), small, 3)
        except ImportError:
            entry["choix_generate_rankings"] = None
        ours = entry["ours_mallows_lehmer"]
        anchors = [v for k, v in entry.items() if k.split("_")[0] in ("prefsampling", "mallows", "choix") and v]
        entry["ratio_ours_mallows_over_numpy_permuted"] = ours / entry["numpy_permuted"]
        entry["ratio_ours_mallows_over_fastest_python_anchor"] = ours / max(anchors) if anchors else None
        result["by_n"][n] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in entry.items()}

    # neural masked model: perms/s vs NFE at batch 1024 (decode included)
    n = 10
    torch.manual_seed(0)
    net = N.PermutationTransformer(N.NetConfig(n, "insertion", "mlm", d_model=64, layers=2, heads=4, ff=128))
    neural = {}
    for nfe in (1, 2, 5, 10):
        def run():
            code = N.sample_codes(net, 1024, nfe=nfe, generator=g)
            R.decode(code, "insertion")
        neural[nfe] = round(rate(run, 1024, repeats=3), 1)
    result["neural_mlm_n10_batch1024_perms_per_s_by_nfe"] = neural
    result["targets"] = {"n10": ">= 100000/s", "n50": ">= 20000/s"}
    save(result, args.out, "sample_permutations_speed.yaml")


if __name__ == "__main__":
    main()
