"""MAP-style decoding: beam search and greedy against the enumerated distribution on small S_n."""

import itertools

import pytest
import torch

from cortexkit.tools.permutations import classical as C
from cortexkit.tools.permutations import model as M
from cortexkit.tools.permutations import neural as N
from cortexkit.tools.permutations import representations as R

S4 = torch.tensor(list(itertools.permutations(range(4))))
S5 = torch.tensor(list(itertools.permutations(range(5))))


def peaked_net(rep, mode, n=4, seed=0, scale=4.0, **extra):
    """A random network with a sharpened head: a distribution far from uniform, few ties."""
    torch.manual_seed(seed)
    net = N.PermutationTransformer(N.NetConfig(n, rep, mode, d_model=16, layers=1, heads=2, ff=32,
                                               dropout=0.0, **extra))
    with torch.no_grad():
        net.head.weight.mul_(scale)
        net.head.bias.normal_(0, 1)
    return net.eval()


SAMPLERS = [("lehmer", "ar", None, "contiguous"), ("insertion", "ar", None, "contiguous"),
            ("fisher-yates", "mlm", 4, "contiguous"), ("insertion", "mlm", 2, "contiguous"),
            ("lehmer", "mlm", 2, "random"), ("lehmer", "mlm", 1, "contiguous")]


@pytest.mark.parametrize("rep, mode, nfe, partition", SAMPLERS)
def test_full_width_beam_is_the_enumerated_ranking(rep, mode, nfe, partition):
    """Width >= 4! = 24: the beam is exhaustive, so it returns every permutation of S_4 in the
    order of the enumerated distribution, with log-likelihoods equal to log_prob_codes'."""
    net = peaked_net(rep, mode)
    lp = N.log_prob_codes(net, R.encode(S4, rep), nfe=nfe, partition=partition,
                          generator=torch.Generator().manual_seed(5))
    codes, scores = N.beam_search_codes(net, 1, beam_width=30, keep=24, nfe=nfe, partition=partition,
                                        generator=torch.Generator().manual_seed(5))
    assert torch.allclose(scores[0], lp.sort(descending=True).values, atol=1e-6)
    assert len({tuple(c) for c in codes[0].tolist()}) == 24
    assert torch.equal(R.decode(codes[0, :1], rep)[0], S4[lp.argmax()])
    again = N.log_prob_codes(net, codes[0], nfe=nfe, partition=partition,
                             generator=torch.Generator().manual_seed(5))
    assert torch.allclose(again, scores[0], atol=1e-6)


def test_greedy_is_stepwise_argmax_and_beam_can_beat_it():
    """Width 1 equals a hand-written argmax-per-step loop; a wide beam is never worse, and on
    some random network it is strictly better (greedy is not MAP for an AR model)."""
    strictly_better = 0
    for seed in range(6):
        net = peaked_net("lehmer", "ar", n=5, seed=seed, scale=1.5)
        code = torch.zeros(1, 5, dtype=torch.int64)
        with torch.no_grad():
            for i in range(5):
                code[0, i] = net(code)[0, i].argmax()
        greedy, g_score = N.beam_search_codes(net, 1, beam_width=1)
        assert torch.equal(greedy[0], code)
        _, b_score = N.beam_search_codes(net, 1, beam_width=120)
        exact = N.log_prob_codes(net, R.encode(S5, "lehmer")).max()
        assert abs(float(b_score[0, 0] - exact)) < 1e-6 and float(g_score[0, 0]) <= float(exact) + 1e-6
        strictly_better += float(exact - g_score[0, 0]) > 1e-3
    assert strictly_better >= 1


def test_greedy_is_exact_map_for_one_nfe_masked_model():
    net = peaked_net("insertion", "mlm", n=5, scale=2.0)
    lp = N.log_prob_codes(net, R.encode(S5, "insertion"), nfe=1)
    _, score = N.beam_search_codes(net, 1, beam_width=1, nfe=1)
    assert abs(float(score[0, 0] - lp.max())) < 1e-6


def test_beam_respects_prefix_and_per_row_context():
    """Conditioning tokens per row and a fixed prefix: each row's beam finds the argmax of its own
    conditional distribution over the completions of the prefix."""
    net = peaked_net("lehmer", "ar", n=4, context_dim=3, context_len=4, scale=3.0)
    ctx = torch.randn(3, 4, 3, generator=torch.Generator().manual_seed(0))
    prefix = torch.tensor([2])
    allowed = S4[R.encode(S4, "lehmer")[:, 0] == 2]
    code_all = R.encode(allowed, "lehmer")
    codes, scores = N.beam_search_codes(net, 3, beam_width=6, keep=6, prefix=prefix, context=ctx)
    for row in range(3):
        lp = N.log_prob_codes(net, code_all, known=1, context=ctx[row:row + 1].expand(len(allowed), -1, -1))
        assert torch.allclose(scores[row], lp.sort(descending=True).values, atol=1e-6)
        assert (codes[row, :, 0] == 2).all()


def test_bad_widths_are_refused():
    net = peaked_net("lehmer", "ar")
    with pytest.raises(ValueError, match="at least 1"):
        N.beam_search_codes(net, 1, beam_width=0)
    with pytest.raises(ValueError, match="keep between 1 and the beam width"):
        N.beam_search_codes(net, 1, beam_width=2, keep=3)
    with pytest.raises(ValueError, match="positive probability"):  # only 24 codes exist
        N.beam_search_codes(net, 1, beam_width=40, keep=30)


# ----------------------------------------------------------------------------------------------
# classical models: closed-form modes


@pytest.mark.parametrize("kind", ["product", "rim", "mallows", "gmallows", "plackett-luce"])
def test_model_best_is_the_enumerated_top(kind):
    """PermutationModel.best: the exact top-k of product models (any width) and of Plackett-Luce
    (exhaustive width); log-likelihoods equal log_prob's, also under a conditioning prefix."""
    torch.manual_seed(1)
    data = S5[torch.randint(0, len(S5), (300,))]
    ref = torch.tensor([2, 0, 4, 1, 3])
    model = M.fit(data, kind, representation="lehmer", reference=ref)
    lp = model.log_prob(S5)
    best, score = model.best(beam_width=120, keep=120)
    assert torch.allclose(score, lp.sort(descending=True).values, atol=1e-9)
    assert torch.allclose(model.log_prob(best), score, atol=1e-9)
    top1, s1 = model.best()
    assert abs(float(s1[0] - lp.max())) < 1e-9 and torch.equal(top1[0], best[0])
    given = torch.tensor([2, 0]) if model.representation == "insertion" else torch.tensor([4, 1])
    cond, cond_score = model.best(beam_width=6, keep=6, given=given)
    assert torch.allclose(model.log_prob(cond, known=2), cond_score, atol=1e-9)
    if model.representation != "insertion":
        assert (cond[:, :2] == given).all()
    completions = S5[(S5[:, :2] == given).all(1)] if model.representation != "insertion" else None
    if completions is not None:
        assert torch.allclose(cond_score, model.log_prob(completions, known=2).sort(descending=True).values)


def test_closed_form_modes():
    """Mallows: the centre; Plackett-Luce: items by decreasing weight (width 1)."""
    ref = torch.tensor([3, 0, 4, 1, 2])
    mallows = M.PermutationModel("mallows", 5, "lehmer", ref, product=C.mallows_from_theta(0.7, ref))
    assert torch.equal(mallows.best()[0][0], ref)
    weights = torch.tensor([0.3, -1.0, 2.0, 0.1, 0.5], dtype=torch.float64)
    pl = M.PermutationModel("plackett-luce", 5, "inline", torch.arange(5), plackett_luce=C.PlackettLuce(weights))
    x, score = pl.best()
    assert x[0].tolist() == [2, 4, 0, 3, 1]
    assert abs(float(score[0] - C.PlackettLuce(weights).log_prob(S5).max())) < 1e-12
