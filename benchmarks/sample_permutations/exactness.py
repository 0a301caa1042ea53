"""Figure 1: exactness. On S_4 every model's probabilities over the 24 permutations sum to 1
(every representation, mode, NFE and partition), and 10^6 samples from each of those samplers
are all valid and follow the probabilities the model reports (chi-square test). At n = 10,
--samples-n10 samples from every representation, mode and NFE are valid permutations (10^6 per
neural setting costs about an hour on 2 shared cores, so the default is 10^5; products get 10^6).
The inline code (the paper's baseline) is shown beside them: its mass is spread over all n^n
digit strings, so it is not valid by construction.

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/exactness.py [--samples 1000000]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import save  # noqa: E402

from cortexkit.tools.permutations import classical as C  # noqa: E402
from cortexkit.tools.permutations import neural as N  # noqa: E402
from cortexkit.tools.permutations import representations as R  # noqa: E402

REPS = ("lehmer", "fisher-yates", "insertion")


def net(n, rep, mode, seed=0):
    torch.manual_seed(seed)
    model = N.PermutationTransformer(N.NetConfig(n, rep, mode, d_model=32, layers=1, heads=2, ff=64, dropout=0.0))
    with torch.no_grad():  # sharpen the random head so the distribution is far from uniform
        model.head.weight.mul_(3)
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--samples-n10", type=int, default=100_000)
    args = parser.parse_args()
    from scipy.stats import chisquare
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    s4 = torch.tensor(list(itertools.permutations(range(4))))
    sums = {}
    s4_samples = {}
    worst = 0.0
    for rep in REPS:
        for mode in ("ar", "mlm"):
            m = net(4, rep, mode)
            settings = [(None, "contiguous")] if mode == "ar" else [
                (k, p) for k in (1, 2, 3, 4) for p in ("contiguous", "random")]
            for nfe, part in settings:
                lp = N.log_prob_codes(m, R.encode(s4, rep), nfe=nfe, partition=part,
                                      generator=torch.Generator().manual_seed(1))
                total = float(lp.double().exp().sum())
                worst = max(worst, abs(total - 1))
                key = f"{rep}/{mode}/nfe={nfe or 4}/{part}"
                sums[key] = round(total, 8)
                if part == "random" and nfe not in (2,):
                    continue
                code = N.sample_codes(m, args.samples, nfe=nfe, partition=part, batch_size=65536,
                                      generator=torch.Generator().manual_seed(1))
                x = R.decode(code, rep)
                valid = float(R.is_permutation(x).double().mean())
                lex = R.lehmer_encode(x)  # lexicographic index of each sample in S_4
                counts = torch.bincount(lex[:, 0] * 6 + lex[:, 1] * 2 + lex[:, 2], minlength=24).double()
                p = lp.double().exp()
                expected = (p / p.sum() * args.samples).numpy()
                big = expected >= 5  # lump the rare cells so the chi-square approximation holds
                obs = list(counts.numpy()[big]) + [counts.numpy()[~big].sum()]
                exp = list(expected[big]) + [expected[~big].sum()]
                if exp[-1] == 0:
                    obs, exp = obs[:-1], exp[:-1]
                chi = chisquare(obs, exp)
                s4_samples[key] = {"valid": valid, "chi2_pvalue": round(float(chi.pvalue), 4),
                                   "max_abs_freq_error": round(float((counts / args.samples - p).abs().max()), 5)}
                print(key, s4_samples[key], flush=True)
    ref = torch.tensor([2, 0, 3, 1])
    for name, model in {"mallows": C.mallows_from_theta(0.7, ref),
                        "gmallows": C.mallows_from_theta(torch.tensor([0.1, 1.0, -0.5, 0.0]), ref),
                        "rim": C.ProductModel("insertion", torch.log_softmax(torch.randn(4, 4).masked_fill(
                            ~R.legal_mask("insertion", 4), float("-inf")), 1), ref),
                        "plackett-luce": C.PlackettLuce(torch.tensor([1.0, -0.2, 0.3, -1.1], dtype=torch.float64))}.items():
        total = float(model.log_prob(s4).exp().sum())
        worst = max(worst, abs(total - 1))
        sums[name] = round(total, 12)
    torch.manual_seed(0)
    inline = N.PermutationTransformer(N.NetConfig(4, "inline", "mlm", d_model=32, layers=1, heads=2, ff=64))
    seqs = torch.tensor(list(itertools.product(range(4), repeat=4)))
    lp = N.log_prob_codes(inline, seqs, nfe=1)
    inline_valid_mass = float(lp[R.is_permutation(seqs)].exp().sum())

    n = 10
    validity = {}
    t0 = time.perf_counter()
    for rep in REPS:
        for mode in ("ar", "mlm"):
            m = net(n, rep, mode)
            for nfe in ([n] if mode == "ar" else [1, 2, 5, 10]):
                code = N.sample_codes(m, args.samples_n10, nfe=nfe, generator=g, batch_size=8192)
                x = R.decode(code, rep)
                validity[f"{rep}/{mode}/nfe={nfe}"] = float(R.is_permutation(x).double().mean())
                print(rep, mode, nfe, validity[f"{rep}/{mode}/nfe={nfe}"], flush=True)
        prod = C.ProductModel(rep, torch.log_softmax(torch.randn(n, n).masked_fill(
            ~R.legal_mask(rep, n), float("-inf")), 1), torch.randperm(n, generator=g))
        validity[f"{rep}/product/nfe=1"] = float(R.is_permutation(prod.sample(args.samples, g)).double().mean())
    result = {
        "s4_probability_sums": sums,
        "s4_max_abs_error": worst,
        "s4_samples_per_setting": args.samples,
        "s4_samples": s4_samples,
        "s4_all_valid": all(v["valid"] == 1.0 for v in s4_samples.values()),
        "s4_inline_untrained_mass_on_permutations": round(inline_valid_mass, 6),
        "n10_samples_per_neural_setting": args.samples_n10,
        "n10_samples_per_product": args.samples,
        "n10_valid_fraction": validity,
        "n10_all_valid": all(v == 1.0 for v in validity.values()),
        "sampling_seconds": round(time.perf_counter() - t0, 1),
    }
    save(result, args.out, "sample_permutations_exactness.yaml")


if __name__ == "__main__":
    main()
