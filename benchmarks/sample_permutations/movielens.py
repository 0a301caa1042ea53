"""Figure 5: movie re-ranking on MovieLens-100k (conditional distribution over rankings).

Movies with >= 100 ratings; users split 80/20 (seed 0); n in {10, 20}. Each example is a random
subset of n movies a user rated, ordered by rating with ties broken at random on every draw;
X_ref is a random order of those movies and the target is the insertion vector relative to
X_ref, so observing V_0..V_{r-1} means knowing the user's relative order of r of the movies.
The model (a transformer over the n movie-id tokens of X_ref followed by the n insertion
digits; autoregressive) completes the rest. For r in {0, n/4, n/2, 3n/4} we sample 32
completions per test example and report NDCG@5 (ratings as graded relevance, gain 2^rating-1)
of (a) the Borda aggregate of the 32 samples and (b) the mean over samples. Baselines on the
same examples: popularity order (training users' rating counts), popularity completion (observed
movies keep their observed order, the others are inserted by popularity), and uniform RIM
(random completion). Plackett-Luce (choix) on training users completes by PL given the
observed order as a further anchor.

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/movielens.py [--epochs 15]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import MOVIELENS, ndcg_at, need, save  # noqa: E402

from cortexkit.formats.rankings import read_rating_table, split_users  # noqa: E402
from cortexkit.tools.permutations import neural as N  # noqa: E402
from cortexkit.tools.permutations import representations as R  # noqa: E402


def examples(by_user, users, n, draws, rng):
    """(movie ids (m, n) = X_ref, orderings (m, n) of local indices, ratings (m, n))."""
    refs, orders, stars = [], [], []
    for user in users:
        rated = by_user.get(user, [])
        if len(rated) < n:
            continue
        for _ in range(draws):
            pick = rng.choice(len(rated), size=n, replace=False)
            movies = np.array([rated[p][0] for p in pick])  # a random order: X_ref
            r = np.array([rated[p][1] for p in pick])
            orders.append(np.lexsort((rng.random(n), -r)))  # by rating, ties at random
            refs.append(movies)
            stars.append(r)
    return np.array(refs), np.array(orders), np.array(stars, dtype=np.float64)


def complete_by_score(prefix_order: list, rest: list, score) -> list:
    """Insert ``rest`` items (in order) into ``prefix_order`` before the first lower-scored item."""
    out = list(prefix_order)
    for item in rest:
        slot = next((i for i, other in enumerate(out) if score[other] < score[item]), len(out))
        out.insert(slot, item)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--draws", type=int, default=20, help="training subsets per user")
    parser.add_argument("--sizes", default="10,20")
    parser.add_argument("--completions", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    import choix

    table = read_rating_table(need(MOVIELENS).read_bytes(), str(MOVIELENS))
    users_all = np.unique(table[:, 0].astype(np.int64))
    is_test = dict(zip(users_all.tolist(), split_users(users_all, 0.2, 0).tolist()))
    movie, counts = np.unique(table[:, 1].astype(np.int64), return_counts=True)
    keep = movie[counts >= 100]
    index = {int(m): i for i, m in enumerate(keep)}
    train_rows = np.array([not is_test[int(u)] for u in table[:, 0]])
    pop = np.zeros(len(keep))
    for m in table[train_rows, 1].astype(np.int64):
        if int(m) in index:
            pop[index[int(m)]] += 1
    by_user = {}
    for u, m, r in table:
        if int(m) in index:
            by_user.setdefault(int(u), []).append((index[int(m)], float(r)))
    train_users = [u for u in users_all.tolist() if not is_test[u]]
    test_users = [u for u in users_all.tolist() if is_test[u]]
    result = {"movies": len(keep), "train_users": len(train_users), "test_users": len(test_users),
              "epochs": args.epochs, "completions": args.completions, "by_n": {}}
    for n in [int(v) for v in args.sizes.split(",")]:
        rng = np.random.default_rng(n)
        tr_ref, tr_ord, _ = examples(by_user, train_users, n, args.draws, rng)
        te_ref, te_ord, te_rat = examples(by_user, test_users, n, 1, rng)
        code_tr = R.insertion_encode(torch.as_tensor(tr_ord))  # relative to X_ref = local 0..n-1
        code_te = R.insertion_encode(torch.as_tensor(te_ord))
        torch.manual_seed(0)
        net = N.PermutationTransformer(N.NetConfig(n, "insertion", "ar", d_model=64, layers=2, heads=4, ff=128,
                                                   context_vocab=len(keep), context_len=n, context_aligned=True))
        hist = N.train(net, code_tr, N.TrainConfig(epochs=args.epochs, batch_size=256, lr=2e-3, patience=5),
                       context=torch.as_tensor(tr_ref), generator=torch.Generator().manual_seed(0),
                       log=lambda msg: print(n, msg, flush=True))
        test_nll = float(-N.log_prob_codes(net, code_te, context=torch.as_tensor(te_ref)).mean())
        # Plackett-Luce anchor on training rankings of movie ids
        pl_data = [tuple(int(ref[i]) for i in order) for ref, order in zip(tr_ref, tr_ord)]
        pl = choix.ilsr_rankings(len(keep), pl_data, alpha=0.01)
        entry = {"train_examples": len(tr_ord), "test_examples": len(te_ord), "test_nll_ar": round(test_nll, 4),
                 "uniform_nll": round(math.lgamma(n + 1), 4), "epochs_run": len(hist["train_loss"]), "by_r": {}}
        g = torch.Generator().manual_seed(1)
        for r in sorted({0, n // 4, n // 2, 3 * n // 4}):
            m, k = len(te_ord), args.completions
            ctx = torch.as_tensor(te_ref).repeat_interleave(k, 0)
            prefix = code_te[:, :r].repeat_interleave(k, 0) if r else None
            code = N.sample_codes(net, m * k, prefix=prefix, context=ctx, generator=g, batch_size=4096)
            samples = R.insertion_decode(code).numpy().reshape(m, k, n)
            ranks = np.argsort(samples, axis=2).mean(1)  # Borda: mean position of each local item
            borda = np.argsort(ranks, axis=1, kind="stable")
            ours_borda = ndcg_at(borda, te_rat).mean()
            ours_mean = ndcg_at(samples.reshape(m * k, n), np.repeat(te_rat, k, 0)).mean()
            popscore = pop[te_ref]  # (m, n) popularity of each local item
            pop_order = np.argsort(-popscore, axis=1, kind="stable")
            comp_pop, comp_pl, comp_uni = [], [], []
            for row in range(m):
                observed = [int(i) for i in te_ord[row] if i < r]  # local items 0..r-1 in the user's order
                rest = list(range(r, n))
                comp_pop.append(complete_by_score(observed, rest, popscore[row]))
                comp_pl.append(complete_by_score(observed, rest, pl[te_ref[row]]))
                order = list(observed)
                for item in rest:  # uniform RIM completion
                    order.insert(int(rng.integers(0, len(order) + 1)), item)
                comp_uni.append(order)
            entry["by_r"][r] = {
                "ours_ar_borda_of_samples": round(float(ours_borda), 4),
                "ours_ar_mean_over_samples": round(float(ours_mean), 4),
                "popularity_order": round(float(ndcg_at(pop_order, te_rat).mean()), 4),
                "popularity_completion": round(float(ndcg_at(np.array(comp_pop), te_rat).mean()), 4),
                "plackett_luce_choix_completion": round(float(ndcg_at(np.array(comp_pl), te_rat).mean()), 4),
                "uniform_rim_completion": round(float(ndcg_at(np.array(comp_uni), te_rat).mean()), 4),
            }
            print(n, r, entry["by_r"][r], flush=True)
        rs = sorted(entry["by_r"])
        entry["checks"] = {
            "above_popularity_order_at_r_ge_n4": all(entry["by_r"][r]["ours_ar_borda_of_samples"]
                                                     > entry["by_r"][r]["popularity_order"] for r in rs if r >= n // 4 and r),
            "rising_with_r": all(entry["by_r"][a]["ours_ar_borda_of_samples"] <= entry["by_r"][b]["ours_ar_borda_of_samples"]
                                 for a, b in zip(rs, rs[1:])),
        }
        result["by_n"][n] = entry
    save(result, args.out, "sample_permutations_movielens.yaml")


if __name__ == "__main__":
    main()
