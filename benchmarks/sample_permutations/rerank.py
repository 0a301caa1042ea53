"""Issue 22 item 3: MovieLens-100k re-ranking through the installed CLI, paired per user.

Data: the CLI's MovieLens reader (`formats.rankings.ratings_to_orders`: movies with >= 100
ratings, local item k of a row = the k-th most popular of its movies on training users), users
split 80/20 by seed 0 (`split_users`). Training rows: ``--draws`` random n-subsets per training
user, each ordered by rating (ties at random); test rows: one n-subset per test user. Each test
row reveals the user's relative order of r of its n movies (a random subset, the same for every
method), r in {0, n/4, n/2}; every method ranks all n, scored by NDCG@5 with gain 2^rating - 1.

Ours (all `cortexkit sample-permutations`): `fit --model ar --representation insertion
--condition items --group users` on the training rows (early stopping on held-out users), then
`sample --items TEST --given-file EVIDENCE` with `--strategy mbr --metric ndcg@5` (and `ndcg`,
the Borda-like grading of every position) from ``--mbr-samples`` draws, `--strategy beam
--beam-width 16`, and one plain draw (the sampler). Anchors in the same run on the same rows:
popularity (revealed order kept, the others merged in by training popularity), Plackett-Luce
(choix `ilsr_rankings` on the same training rows, movie ids): PL mode (revealed order kept,
others merged in by strength) and the PL sampler given the revealed order (exact: the revealed
items' Gumbel keys drawn top-down, each truncated below the previous, the others free; expected
NDCG over ``--pl-draws`` draws), and our MBR decoder on PL samples as an extra row (not an anchor).
Reported: mean NDCG@5 per method and paired per-user differences ours - anchor with SEs.

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/rerank.py --out result.yaml
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import MOVIELENS, cortexkit, ndcg_at, need, save  # noqa: E402

from cortexkit.formats.artifact import write_artifact  # noqa: E402
from cortexkit.formats.rankings import ratings_to_orders, read_rating_table  # noqa: E402
from cortexkit.tools.permutations import mbr  # noqa: E402


def merge_completion(given: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Revealed items keep their order; every other item is inserted before the first placed
    item of lower score (others taken by decreasing score). ``given`` (m, r), ``score`` (m, n)."""
    m, n = score.shape
    out = np.empty((m, n), dtype=np.int64)
    for row in range(m):
        placed = [int(i) for i in given[row]]
        rest = [i for i in np.argsort(-score[row], kind="stable") if i not in set(placed)]
        for item in rest:
            slot = next((p for p, other in enumerate(placed) if score[row, other] < score[row, item]), len(placed))
            placed.insert(slot, int(item))
        out[row] = placed
    return out


def pl_conditional_samples(logw: np.ndarray, given: np.ndarray, draws: int, rng) -> np.ndarray:
    """Exact Plackett-Luce draws given the revealed relative order: ``(m, draws, n)``.

    PL = sorting Gumbel keys ``log w_i + G_i``. Given the order s_1..s_r of the revealed items,
    their keys are drawn top-down: k_1 ~ Gumbel(log sum_{t>=1} w_{s_t}), k_t ~ Gumbel(log
    sum_{u>=t} w_{s_u}) truncated below k_{t-1}; the other items' keys are free."""
    m, n = logw.shape
    keys = logw[:, None, :] + rng.gumbel(size=(m, draws, n))
    r = given.shape[1]
    if r:
        lw = np.take_along_axis(logw, given, 1)  # (m, r) in revealed order
        tail = np.logaddexp.accumulate(lw[:, ::-1], axis=1)[:, ::-1]  # log sum_{u>=t} w
        prev = np.full((m, draws), np.inf)
        for t in range(r):
            g = tail[:, t:t + 1] + rng.gumbel(size=(m, draws))
            k = -np.logaddexp(-prev, -g)  # Gumbel(tail_t) truncated at prev
            keys[np.arange(m)[:, None], np.arange(draws)[None, :], given[:, t:t + 1]] = k
            prev = k
    return np.argsort(-keys, axis=2, kind="stable")


def item_features(ids: np.ndarray, theta: dict, pop: dict) -> np.ndarray:
    """Per-token features (m, n, 22) of movie ids: PL log-strength on training rows, log(1 +
    training popularity), release year (z-scored), 19 genre flags from u.item."""
    table = {}
    for line in (MOVIELENS.parent / "u.item").read_bytes().decode("latin-1").splitlines():
        f = line.split("|")
        if len(f) < 24:
            continue
        year = float(f[2][-4:]) if f[2][-4:].isdigit() else 1990.0
        table[int(f[0])] = [(year - 1990.0) / 15.0] + [float(v) for v in f[5:24]]
    rows = [[theta.get(int(i), 0.0), np.log1p(pop.get(int(i), 0))] + table[int(i)] for i in ids.ravel()]
    return np.asarray(rows, dtype=np.float32).reshape(*ids.shape, -1)


def paired(a: np.ndarray, b: np.ndarray) -> dict:
    d = a - b
    return {"diff": round(float(d.mean()), 4), "se": round(float(d.std(ddof=1) / len(d) ** 0.5), 4),
            "z": round(float(d.mean() / max(d.std(ddof=1) / len(d) ** 0.5, 1e-12)), 2)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--sizes", default="10,20")
    parser.add_argument("--draws", type=int, default=20, help="training subsets per user")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--lr", default="2e-3")
    parser.add_argument("--dropout", default="0.1")
    parser.add_argument("--mbr-samples", type=int, default=256)
    parser.add_argument("--pl-draws", type=int, default=64)
    parser.add_argument("--condition", choices=["items", "features"], default="items",
                        help="items: movie-id tokens; features: per-movie features (PL strength and "
                             "popularity on training rows, year, genres)")
    parser.add_argument("--fit-args", default="", help="extra fit options, space separated")
    parser.add_argument("--work", default=None, help="keep models and files here (default: a temp dir)")
    args = parser.parse_args()
    import choix

    table = read_rating_table(need(MOVIELENS).read_bytes(), str(MOVIELENS))
    result = {"data": str(MOVIELENS), "min_ratings": 100, "split": "users 80/20, seed 0",
              "mbr_samples": args.mbr_samples, "pl_draws": args.pl_draws, "epochs": args.epochs,
              "patience": args.patience, "lr": args.lr, "dropout": args.dropout, "fit_args": args.fit_args,
              "condition": args.condition,
              "by_n": {}}
    tmp_ctx = tempfile.TemporaryDirectory()
    work = Path(args.work or tmp_ctx.name)
    work.mkdir(parents=True, exist_ok=True)
    for n in [int(v) for v in args.sizes.split(",")]:
        train = ratings_to_orders(table, n, split="train", rng=np.random.default_rng(n), draws=args.draws)
        test = ratings_to_orders(table, n, split="test", rng=np.random.default_rng(1000 + n), draws=1)
        meta = {"permutations.n": str(n)}
        write_artifact(work / f"train{n}.st", {"orderings": train.orderings.astype(np.int16),
                                              "items": train.items, "users": train.users}, "permutations", metadata=meta)
        write_artifact(work / f"test{n}.st", {"orderings": test.orderings.astype(np.int16), "items": test.items},
                       "permutations", metadata=meta)
        # Plackett-Luce on the same training rows (movie ids)
        movies = np.unique(np.concatenate([train.items.ravel(), test.items.ravel()]))
        index = {int(m): i for i, m in enumerate(movies)}
        gid_tr = np.vectorize(index.get)(train.items)
        gid_te = np.vectorize(index.get)(test.items)
        began = time.perf_counter()
        theta = choix.ilsr_rankings(len(movies), [tuple(g[o]) for g, o in zip(gid_tr, train.orderings)], alpha=0.01)
        pl_s = time.perf_counter() - began
        cond = ["--condition", "items"]
        ctx_opt = ["--items", work / f"test{n}.st"]
        if args.condition == "features":
            from safetensors.numpy import save_file

            is_train = np.isin(table[:, 0].astype(np.int64), np.unique(train.users))
            pop = dict(zip(*np.unique(table[is_train, 1].astype(np.int64), return_counts=True)))  # ratings by training users
            th = {int(mv): float(theta[i]) for i, mv in enumerate(movies)}
            save_file({"context": item_features(train.items, th, pop)}, str(work / f"ctx_train{n}.st"))
            save_file({"context": item_features(test.items, th, pop)}, str(work / f"ctx_test{n}.st"))
            cond = ["--condition", "features", "--context", work / f"ctx_train{n}.st"]
            ctx_opt = ["--context", work / f"ctx_test{n}.st"]
        model = work / f"ar{n}_{args.condition}.st"
        began = time.perf_counter()
        if not model.exists():
            proc = cortexkit("sample-permutations", "fit", work / f"train{n}.st", "--model", "ar",
                             "--representation", "insertion", *cond, "--group", "users",
                             "--epochs", args.epochs, "--patience", args.patience, "--lr", args.lr,
                             "--dropout", args.dropout, *args.fit_args.split(), "--threads", 1, "-o", model)
            fit_line = proc.stderr.decode().strip().splitlines()[-1]
        else:
            fit_line = "(reused)"
        fit_s = time.perf_counter() - began
        print(n, fit_line, f"{fit_s:.0f} s", flush=True)
        logw = theta[gid_te]  # (m, n) per local item
        ratings = test.ratings.astype(np.float64)
        m = len(test.orderings)
        pos_true = np.argsort(test.orderings, 1)
        rng = np.random.default_rng(7)
        entry = {"train_rows": len(train.orderings), "train_users": len(set(train.users.tolist())),
                 "test_users": m, "fit": fit_line, "fit_seconds": round(fit_s, 1),
                 "pl_fit_seconds": round(pl_s, 2), "by_r": {}}
        for r in sorted({0, n // 4, n // 2}):
            # a random r-subset of each row, listed in the user's order
            subset = np.argsort(rng.random((m, n)), 1)[:, :r]
            given = np.take_along_axis(subset, np.argsort(np.take_along_axis(pos_true, subset, 1), 1), 1)
            ev = []
            if r:
                np.save(work / f"ev{n}_{r}.npy", given)
                ev = ["--given-file", work / f"ev{n}_{r}.npy"]
            base = ["sample-permutations", "sample", model, *ctx_opt, *ev, "--threads", 1,
                    "--seed", r + 1]
            scores, timing = {}, {}
            for name, opts in (("ours_mbr_ndcg@5", ["--strategy", "mbr", "--metric", "ndcg@5",
                                                     "--mbr-samples", args.mbr_samples]),
                               ("ours_mbr_ndcg", ["--strategy", "mbr", "--metric", "ndcg",
                                                   "--mbr-samples", args.mbr_samples]),
                               ("ours_beam16", ["--strategy", "beam", "--beam-width", 16]),
                               ("ours_sampler", ["-n", 1])):
                began = time.perf_counter()
                cortexkit(*base, *opts, "-o", work / "out.st")
                timing[name] = round(time.perf_counter() - began, 2)
                from safetensors.numpy import load

                x = load((work / "out.st").read_bytes())["orderings"].astype(np.int64)
                assert x.shape == (m, n)
                if r:  # every method honours the revealed order
                    pos = np.argsort(x, 1)
                    assert (np.diff(np.take_along_axis(pos, given, 1), axis=1) > 0).all(), name
                scores[name] = ndcg_at(x, ratings)
            popularity = -np.tile(np.arange(n, dtype=np.float64), (m, 1))  # local 0 = most popular
            scores["popularity"] = ndcg_at(merge_completion(given, popularity), ratings)
            scores["pl_mode"] = ndcg_at(merge_completion(given, logw), ratings)
            draws = pl_conditional_samples(logw, given, args.pl_draws, rng)
            scores["pl_sampler"] = ndcg_at(draws.reshape(-1, n), np.repeat(ratings, args.pl_draws, 0)).reshape(m, -1).mean(1)
            pl_many = pl_conditional_samples(logw, given, args.mbr_samples, rng)
            scores["pl_samples_mbr_ndcg@5_extra"] = ndcg_at(mbr.decode(pl_many, "ndcg@5").orderings, ratings)
            anchors = ("popularity", "pl_mode", "pl_sampler")
            means = {k: round(float(v.mean()), 4) for k, v in scores.items()}
            best = max(anchors, key=lambda a: means[a])
            rows = {"ndcg@5": means, "seconds": timing, "best_anchor": best,
                    "paired_vs_best_anchor": {o: paired(scores[o], scores[best]) for o in scores if o.startswith("ours")},
                    "paired_mbr5_vs": {a: paired(scores["ours_mbr_ndcg@5"], scores[a]) for a in
                                       (*anchors, "pl_samples_mbr_ndcg@5_extra", "ours_beam16", "ours_sampler")}}
            rows["above_best_anchor"] = {o: bool(means[o] > means[best]) for o in scores if o.startswith("ours")}
            entry["by_r"][r] = rows
            print(n, r, rows, flush=True)
        result["by_n"][n] = entry
    result["target"] = "ours above the best anchor (popularity, PL mode, PL sampler) at every r, n = 10 and 20"
    save(result, args.out, "sample_permutations_rerank.yaml")


if __name__ == "__main__":
    main()
