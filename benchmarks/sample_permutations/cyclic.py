"""Figure 4: cyclic permutations, n = 10 (all 9! n-cycles, 20% for training).

1-NFE models (products of per-digit categoricals, maximum likelihood) on each representation;
optionally a small masked transformer read at several NFEs (--neural). In the same run the
anchors: a uniform shuffle (numpy), and the inline 1-NFE model (the paper's baseline that
cannot stay valid). Reported: held-out NLL (nats), exact probability mass on cycles (all 9!
cycles scored), and over 10^5 samples %valid, %cyclic, %unique, %novel (not in training).

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/cyclic.py [--neural] [--out r.yaml]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import save  # noqa: E402

from cortexkit.tools.permutations import classical as C  # noqa: E402
from cortexkit.tools.permutations import neural as N  # noqa: E402
from cortexkit.tools.permutations import representations as R  # noqa: E402


def all_cycles(n: int) -> torch.Tensor:
    """All (n-1)! n-cycles, by decoding every Sattolo draw vector (J_i in [1, n-1-i])."""
    radices = [n - 1 - i for i in range(n - 1)]
    total = math.factorial(n - 1)
    idx = torch.arange(total)
    digits = []
    for r in reversed(radices):
        digits.append(idx % r + 1)
        idx = idx // r
    draws = torch.stack(list(reversed(digits)) + [torch.zeros(total, dtype=torch.int64)], dim=1)
    return R.fisher_yates_decode(draws)


def keys(x: torch.Tensor) -> np.ndarray:
    n = x.shape[1]
    weights = torch.tensor([n ** (n - 1 - i) for i in range(n)], dtype=torch.int64)
    return (x.clamp(0, n - 1) * weights).sum(1).numpy()


def sample_stats(samples: torch.Tensor, train_keys: np.ndarray) -> dict:
    valid = R.is_permutation(samples)
    cyclic = R.is_cycle(samples)
    k = keys(samples[valid])
    return {"valid": float(valid.double().mean()), "cyclic": float(cyclic.double().mean()),
            "unique": len(np.unique(k)) / len(samples),
            "novel": float((~np.isin(k, train_keys)).sum()) / len(samples)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--neural", action="store_true", help="also train small masked models")
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = 10
    g = torch.Generator().manual_seed(0)
    cycles = all_cycles(n)
    assert R.is_cycle(cycles).all() and len(cycles) == math.factorial(n - 1)
    perm = torch.randperm(len(cycles), generator=g)
    n_train = len(cycles) // 5
    train, test = cycles[perm[:n_train]], cycles[perm[n_train:]]
    train_keys = keys(train)
    result = {"n": n, "cycles": len(cycles), "train": len(train), "test": len(test),
              "entropy_target": math.lgamma(n), "samples": args.samples, "one_nfe": {}}

    uniform = torch.as_tensor(np.random.default_rng(0).permuted(np.tile(np.arange(n), (args.samples, 1)), axis=1))
    result["anchor_uniform_shuffle"] = {"nll": math.lgamma(n + 1), "mass_on_cycles": 1 / n,
                                        **sample_stats(uniform, train_keys)}

    for rep in ("fisher-yates", "lehmer", "insertion", "inline"):
        if rep == "inline":  # product of per-position item marginals (no validity constraint)
            counts = torch.zeros(n, n, dtype=torch.float64)
            counts.scatter_add_(1, train.t(), torch.ones(n, len(train), dtype=torch.float64))
            logp = (counts / counts.sum(1, keepdim=True)).log()
            model = C.ProductModel("inline", logp, torch.arange(n))
            samples = model.sample_codes(args.samples, g)  # inline: codes are the sequences
            held = model.log_prob_codes(test)
            entry = {"nll_of_sequence": float(-held.mean()),
                     "mass_on_cycles": float(model.log_prob_codes(cycles).exp().sum()),
                     **sample_stats(samples, train_keys)}
        else:
            model = C.fit_product(train, rep, torch.arange(n), smoothing=0.0)
            held = model.log_prob(test)
            samples = model.sample(args.samples, g)
            entry = {"nll": float(-held.mean()), "mass_on_cycles": float(model.log_prob(cycles).exp().sum()),
                     **sample_stats(samples, train_keys)}
        result["one_nfe"][rep] = {k: round(v, 5) if isinstance(v, float) else v for k, v in entry.items()}
        print(rep, result["one_nfe"][rep], flush=True)

    if args.neural:
        result["neural_mlm"] = {}
        for rep in ("fisher-yates", "lehmer"):
            torch.manual_seed(0)
            net = N.PermutationTransformer(N.NetConfig(n, rep, "mlm", d_model=64, layers=2, heads=4, ff=128))
            code = R.encode(train, rep)
            hist = N.train(net, code, N.TrainConfig(epochs=args.epochs, batch_size=512, lr=2e-3, val_fraction=0.05),
                           generator=g, log=lambda m: print(rep, m, flush=True))
            test_code = R.encode(test[:20000], rep)
            by_nfe = {}
            for nfe in (1, 2, 5, 10):
                lp = N.log_prob_codes(net, test_code, nfe=nfe)
                s = R.decode(N.sample_codes(net, 20000, nfe=nfe, generator=g), rep)
                by_nfe[nfe] = {"nll": round(float(-lp.mean()), 4),
                               **{k: round(v, 4) for k, v in sample_stats(s, train_keys).items()}}
                print(rep, nfe, by_nfe[nfe], flush=True)
            result["neural_mlm"][rep] = {"epochs": len(hist["train_loss"]), "by_nfe": by_nfe}
    save(result, args.out, "sample_permutations_cyclic.yaml")


if __name__ == "__main__":
    main()
