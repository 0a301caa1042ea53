"""Per-row evidence on S_4 against enumeration: each row's conditional sums to 1 and equals the
model's joint restricted to that row's evidence."""

import itertools
import math
from dataclasses import replace

import pytest
import torch

from cortexkit.formats.errors import CortexError
from cortexkit.tools.permutations import api
from cortexkit.tools.permutations import classical as C
from cortexkit.tools.permutations import evidence as E
from cortexkit.tools.permutations import model as M
from cortexkit.tools.permutations import neural as N

n = 4
EVERY = torch.tensor(list(itertools.permutations(range(n))))
TOP = torch.tensor([[2, 0, -1, -1], [1, -1, -1, -1], [-1, -1, -1, -1], [3, 1, 2, -1], [0, 1, 2, 3]])
SUBSETS = torch.tensor([[2, 0, -1, -1], [3, -1, -1, -1], [1, 0, -1, -1], [3, 1, 0, -1], [-1, -1, -1, -1]])


def ar(representation, vocab=0, mode="ar", prior=0):
    torch.manual_seed(1)
    extra = dict(context_vocab=vocab + 1, context_len=n, context_aligned=True, context_prior=prior) if vocab else {}
    net = N.PermutationTransformer(N.NetConfig(n, representation, mode, d_model=16, heads=2, ff=16, **extra))
    for p in net.parameters():
        p.data.normal_(0, 0.7)
    if prior:
        net.context_prior_scores.normal_(0, 1)
    vocabulary = torch.arange(vocab) * 10 if vocab else None
    return M.PermutationModel(mode, n, representation, torch.tensor([2, 0, 3, 1]) if representation ==
                              "insertion" else torch.arange(n), net=net.eval(), vocabulary=vocabulary)


def classical(kind):
    g = torch.Generator().manual_seed(2)
    x = torch.stack([torch.randperm(n, generator=g) for _ in range(200)])
    return M.fit(x, kind, representation="insertion" if kind == "rim" else "lehmer",
                 reference=torch.tensor([1, 3, 0, 2]))


def consistent(x, given, representation):
    r = int((given >= 0).sum())
    g = given[:r]
    if representation != "insertion":
        return (x[:, :r] == g).all(1)
    pos = x.argsort(1)[:, g]  # positions of the revealed items
    return (pos[:, 1:] > pos[:, :-1]).all(1) if r > 1 else torch.ones(len(x), dtype=torch.bool)


CASES = {
    "ar-lehmer": (lambda: ar("lehmer"), TOP, None),
    "ar-fisher-yates": (lambda: ar("fisher-yates"), TOP, None),
    "mlm-lehmer-full-nfe": (lambda: ar("lehmer", mode="mlm"), TOP, None),
    "ar-insertion-items-relabelled": (lambda: ar("insertion", 12), SUBSETS,
                                      torch.tensor([[0, 10, 20, 30], [50, 60, 70, 80], [110, 0, 40, 90],
                                                    [30, 20, 10, 0], [70, 80, 90, 100]])),
    "ar-insertion-items-prior": (lambda: ar("insertion", 12, prior=2), SUBSETS,
                                 torch.tensor([[0, 10, 20, 30], [50, 60, 70, 80], [110, 0, 40, 90],
                                               [30, 20, 10, 0], [70, 80, 90, 100]])),
    "rim-reference-prefix": (lambda: classical("rim"), torch.tensor([[1, -1, -1, -1], [3, 1, -1, -1],
                                                                     [1, 0, 3, -1], [-1, -1, -1, -1]]), None),
    "mallows": (lambda: classical("mallows"), TOP, None),
    "plackett-luce": (lambda: classical("plackett-luce"), TOP, None),
}


@pytest.mark.parametrize("name", CASES)
def test_each_row_conditional_is_the_joint_restricted_to_its_evidence(name):
    make, given, items = CASES[name]
    model = make()
    rep = "inline" if model.plackett_luce is not None else model.representation
    ev = E.prepare(model, given, conditional_on_items=items is not None)
    cond = None if items is None else model.conditioning(E.relabel_items(items, ev.labels))
    x, ll = E.best(model, ev, beam_width=24, keep=1, cond=cond)  # the conditional mode per row
    for i in range(len(given)):
        r = int((given[i] >= 0).sum())
        # completions: (n - r)! of a top-r prefix, n! / r! of a subset's relative order
        keep = math.factorial(n) // math.factorial(r) if rep == "insertion" else math.factorial(n - r)
        xs, lls = E.best(model, E.Evidence(ev.prefix[i:i + 1], ev.length[i:i + 1], ev.given[i:i + 1],
                                           None if ev.labels is None else ev.labels[i:i + 1]),
                         beam_width=24, keep=keep, cond=None if cond is None else cond[i:i + 1])
        assert consistent(xs, given[i], rep).all()
        assert len({tuple(r_) for r_ in xs.tolist()}) == keep  # every completion, once
        assert float(lls.exp().sum()) == pytest.approx(1.0, abs=1e-6)
        # the joint over S_4 (in the model's labels), restricted to the evidence and renormalised
        labels = None if ev.labels is None else ev.labels[i]
        model_x = EVERY if labels is None else labels.argsort()[EVERY]
        row_items = None if items is None else E.relabel_items(items[i:i + 1], ev.labels[i:i + 1]
                                                               if ev.labels is not None else None)
        joint = model.log_prob(model_x, items=None if row_items is None else row_items.expand(24, n))
        assert float(joint.exp().sum()) == pytest.approx(1.0, abs=1e-6)
        mask = consistent(EVERY, given[i], rep)
        expected = {tuple(p): float(v) for p, v in zip(EVERY[mask].tolist(),
                                                       joint[mask] - joint[mask].logsumexp(0))}
        for p, v in zip(xs.tolist(), lls.tolist()):
            assert v == pytest.approx(expected[tuple(p)], abs=1e-5)
        assert ll[i] == pytest.approx(max(expected.values()), abs=1e-5)


def test_sampled_frequencies_follow_each_rows_conditional():
    make, given, items = CASES["ar-insertion-items-relabelled"]
    model = make()
    ev = E.prepare(model, given, conditional_on_items=True)
    cond = model.conditioning(E.relabel_items(items, ev.labels))
    per_row = 4000
    x = E.sample(model, ev, per_row, cond=cond, generator=torch.Generator().manual_seed(3))
    for i in (0, 4):  # a relabelled row and the row with no evidence
        rows = x[i * per_row:(i + 1) * per_row]
        assert consistent(rows, given[i], "insertion").all()
        xs, lls = E.best(model, E.Evidence(ev.prefix[i:i + 1], ev.length[i:i + 1], ev.given[i:i + 1],
                                           ev.labels[i:i + 1]), beam_width=24,
                         keep=math.factorial(n) // math.factorial(int((given[i] >= 0).sum())),
                         cond=cond[i:i + 1])
        expected = lls.exp() * per_row
        counts = torch.tensor([float((rows == p).all(1).sum()) for p in xs])
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        dof = len(xs) - 1
        assert chi2 < dof + 5 * (2 * dof) ** 0.5 + 5, (chi2, dof)


def test_api_sample_with_evidence_and_refusals():
    model = classical("rim")
    out = api.sample(model, api.SampleConfig(num=3), evidence=torch.tensor([[1, 3], [-1, -1]]))
    assert out.orderings.shape == (6, n)
    with pytest.raises(CortexError, match="not the first reference items"):
        api.sample(model, api.SampleConfig(num=3), evidence=torch.tensor([[0, 2]]))
    with pytest.raises(CortexError, match="repeats an item"):
        api.sample(model, api.SampleConfig(num=3), evidence=torch.tensor([[1, 1]]))
    with pytest.raises(CortexError, match="-1 padding only"):
        api.sample(model, api.SampleConfig(num=3), evidence=torch.tensor([[-1, 1]]))


def test_one_given_for_every_conditioned_row_is_that_rows_evidence():
    """``--given`` with ``--items`` is the same evidence on every row: an item-conditioned insertion
    model takes the order of any subset (relabelled, not refused), exactly as ``--given-file``."""
    model, _, items = CASES["ar-insertion-items-relabelled"]
    model = model()
    given = [3, 1]  # not the first reference items (2, 0)
    for config in (api.SampleConfig(num=12, strategy="beam", beam_width=24), api.SampleConfig(num=50)):
        one = api.sample(model, replace(config, given=given), items=items[:2], seed=5)
        rows = api.sample(model, config, items=items[:2], seed=5, evidence=torch.tensor([given, given]))
        assert torch.equal(one.orderings, rows.orderings)
        assert consistent(one.orderings, torch.tensor(given), "insertion").all()
    with pytest.raises(CortexError, match="--given: row 1"):
        api.sample(model, api.SampleConfig(num=3, given=[1, 1]), items=items[:2])
