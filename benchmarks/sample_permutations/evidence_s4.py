"""Issue 22 item 2: per-row evidence on S_4 against enumeration, every model and code that can
express it.

For each model (random tiny AR networks on lehmer, fisher-yates and insertion codes with item-id
tokens, a masked lehmer network at full NFE; Mallows, RIM and Plackett-Luce fitted to random
orderings) and each evidence row (top items in order; for the item-conditioned insertion model
the order of any subset, relabelled inside the tool), the row's conditional is enumerated by a
beam search that keeps every completion (``sample --strategy beam -n ALL``) and compared with the
model's joint over the 24 permutations restricted to the evidence and renormalised. Then draws of
``sample --given-file`` (``api.sample(..., evidence=...)``, all rows in one call) are compared
with each row's conditional by a chi-square test.

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/evidence_s4.py --out result.yaml
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys

import torch
from scipy import stats

sys.path.insert(0, os.path.dirname(__file__))
from common import save  # noqa: E402

from cortexkit.tools.permutations import api  # noqa: E402
from cortexkit.tools.permutations import evidence as E  # noqa: E402
from cortexkit.tools.permutations import model as M  # noqa: E402
from cortexkit.tools.permutations import neural as N  # noqa: E402

n = 4
EVERY = torch.tensor(list(itertools.permutations(range(n))))
TOP = torch.tensor([[2, 0, -1, -1], [1, -1, -1, -1], [-1, -1, -1, -1], [3, 1, 2, -1], [0, 1, 2, 3]])
SUBSETS = torch.tensor([[2, 0, -1, -1], [3, -1, -1, -1], [1, 0, -1, -1], [3, 1, 0, -1], [-1, -1, -1, -1]])
ITEMS = torch.tensor([[0, 10, 20, 30], [50, 60, 70, 80], [110, 0, 40, 90], [30, 20, 10, 0], [70, 80, 90, 100]])


def network(representation, mode="ar", vocab=0):
    torch.manual_seed(1 + ("lehmer", "fisher-yates", "insertion").index(representation))  # each its own net
    extra = dict(context_vocab=vocab + 1, context_len=n, context_aligned=True) if vocab else {}
    net = N.PermutationTransformer(N.NetConfig(n, representation, mode, d_model=16, heads=2, ff=16, **extra))
    for p in net.parameters():
        p.data.normal_(0, 0.7)  # sharp, far from uniform
    ref = torch.tensor([2, 0, 3, 1]) if representation == "insertion" else torch.arange(n)
    return M.PermutationModel(mode, n, representation, ref, net=net.eval(),
                              vocabulary=torch.arange(vocab) * 10 if vocab else None)


def classical(kind):
    g = torch.Generator().manual_seed(2)
    x = torch.stack([torch.randperm(n, generator=g) for _ in range(200)])
    return M.fit(x, kind, representation="insertion" if kind == "rim" else "lehmer",
                 reference=torch.tensor([1, 3, 0, 2]))


CASES = {
    "ar lehmer": (lambda: network("lehmer"), TOP, None),
    "ar fisher-yates": (lambda: network("fisher-yates"), TOP, None),
    "mlm lehmer, NFE n": (lambda: network("lehmer", "mlm"), TOP, None),
    "ar insertion + item ids, any subset": (lambda: network("insertion", vocab=12), SUBSETS, ITEMS),
    "rim (reference prefix)": (lambda: classical("rim"), torch.tensor([[1, -1, -1], [3, 1, -1], [1, 0, 3]]), None),
    "mallows": (lambda: classical("mallows"), TOP, None),
    "plackett-luce": (lambda: classical("plackett-luce"), TOP, None),
}


def consistent(x, given, insertion):
    g = given[given >= 0]
    if not insertion:
        return (x[:, :len(g)] == g).all(1)
    pos = x.argsort(1)[:, g]
    return (pos[:, 1:] > pos[:, :-1]).all(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=20000, help="draws per evidence row")
    parser.add_argument("--seed", type=int, default=7, help="seed of the draws")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = {}
    for name, (make, given, items) in CASES.items():
        model = make()
        insertion = model.representation == "insertion" and model.plackett_luce is None
        ev = E.prepare(model, given, conditional_on_items=items is not None)
        cond = None if items is None else model.conditioning(E.relabel_items(items, ev.labels))
        sum_error = cond_error = 0.0
        draws = api.sample(model, api.SampleConfig(num=args.draws), items=items, seed=args.seed,
                           evidence=given).orderings
        pvalues, valid = [], bool(all(consistent(draws[i * args.draws:(i + 1) * args.draws], given[i], insertion).all()
                                      for i in range(len(given))))
        for i in range(len(given)):
            r = int((given[i] >= 0).sum())
            keep = math.factorial(n) // math.factorial(r) if insertion else math.factorial(n - r)
            one = E.Evidence(ev.prefix[i:i + 1], ev.length[i:i + 1], ev.given[i:i + 1],
                             None if ev.labels is None else ev.labels[i:i + 1])
            xs, lls = E.best(model, one, beam_width=24, keep=keep, cond=None if cond is None else cond[i:i + 1])
            sum_error = max(sum_error, abs(float(lls.exp().sum()) - 1))
            labels = None if ev.labels is None else ev.labels[i]
            model_x = EVERY if labels is None else labels.argsort()[EVERY]
            row_items = None if items is None else E.relabel_items(items[i:i + 1], None if labels is None
                                                                    else labels[None]).expand(24, n)
            joint = model.log_prob(model_x, items=row_items)
            mask = consistent(EVERY, given[i], insertion)
            want = {tuple(p): float(v) for p, v in zip(EVERY[mask].tolist(), joint[mask] - joint[mask].logsumexp(0))}
            got = dict(zip(map(tuple, xs.tolist()), lls.tolist()))
            assert set(got) == set(want), name
            cond_error = max(cond_error, max(abs(got[p] - want[p]) for p in want))
            rows = draws[i * args.draws:(i + 1) * args.draws]
            if keep > 1:
                expected = torch.tensor([math.exp(want[p]) for p in want]) * args.draws
                counts = torch.tensor([float((rows == torch.tensor(p)).all(1).sum()) for p in want])
                small = expected < 5  # lump sparse cells
                e = torch.cat([expected[~small], expected[small].sum()[None]]) if small.any() else expected
                c = torch.cat([counts[~small], counts[small].sum()[None]]) if small.any() else counts
                chi2 = float(((c - e) ** 2 / e).sum())
                pvalues.append(float(stats.chi2.sf(chi2, max(1, len(e) - 1))))
        result[name] = {"rows": len(given), "max_abs_sum_minus_1": sum_error,
                        "max_abs_log_conditional_error": cond_error, "draws_consistent": valid,
                        "chi2_p_min": min(pvalues), "chi2_p_max": max(pvalues)}
        print(name, result[name], flush=True)
    save({"n": n, "draws_per_row": args.draws, "models": result}, args.out, "evidence_s4.yaml")


if __name__ == "__main__":
    main()
