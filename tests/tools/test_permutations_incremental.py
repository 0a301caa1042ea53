"""Incremental (KV-cached) autoregressive decoding is the full forward pass, one digit at a time."""

import itertools

import pytest
import torch

from cortexkit.tools.permutations import neural as N
from cortexkit.tools.permutations import representations as R


def make_net(n=5, representation="lehmer", **extra):
    torch.manual_seed(0)
    net = N.PermutationTransformer(N.NetConfig(n=n, representation=representation, mode="ar",
                                               d_model=16, heads=2, ff=24, layers=2, **extra))
    for p in net.parameters():  # far from the near-uniform initialisation
        p.data.normal_(0, 0.5)
    if extra.get("context_prior"):  # prior scores are a buffer, set by fit
        net.context_prior_scores.normal_(0, 1)
    return net.eval()


CASES = {
    "plain-insertion": dict(representation="insertion"),
    "items": dict(context_vocab=9, context_len=5, context_aligned=True),
    "items-prior": dict(context_vocab=9, context_len=5, context_aligned=True, context_prior=2),
    "features": dict(context_dim=3, context_len=2),
    "pointer": dict(context_dim=3, context_len=5, context_aligned=True, head="pointer"),
}


def context_for(name, rows, g):
    if name.startswith("items"):
        return torch.randint(0, 9, (rows, 5), generator=g)
    if name == "features":
        return torch.randn(rows, 2, 3, generator=g)
    if name == "pointer":
        return torch.randn(rows, 5, 3, generator=g)
    return None


@pytest.mark.parametrize("name", CASES)
def test_cached_steps_equal_the_full_forward(name):
    net = make_net(**CASES[name])
    g = torch.Generator().manual_seed(1)
    code = N.ar_sample_codes(net, 64, generator=g, context=None)  if name == "plain-insertion" else None
    ctx = context_for(name, 64, g)
    if code is None:
        code = N.sample_codes(net, 64, generator=g, context=ctx)
    full = net(code, ctx)
    dec = N.IncrementalDecoder(net, 64, ctx)
    previous = None
    for i in range(5):
        step = dec.step(previous)
        legal = torch.isfinite(full[:, i])
        assert torch.equal(legal, torch.isfinite(step))
        assert torch.allclose(step[legal], full[:, i][legal], atol=1e-5)
        previous = code[:, i]


@pytest.mark.parametrize("name", ["plain-insertion", "pointer"])
def test_cached_sampler_draws_from_the_exact_distribution(name):
    """Frequencies of 40k draws against exp(log_prob) of every permutation of S_5 (chi-square)."""
    net = make_net(**CASES[name])
    g = torch.Generator().manual_seed(2)
    ctx = context_for(name, 1, g)
    rows = 40000
    big = None if ctx is None else ctx.expand(rows, *ctx.shape[1:])
    code = N.sample_codes(net, rows, generator=g, context=big)
    every = torch.tensor(list(itertools.permutations(range(5))))
    rep = net.config.representation
    codes = R.encode(every, rep)
    p = N.log_prob_codes(net, codes, context=None if ctx is None else ctx.expand(120, *ctx.shape[1:])).exp()
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-6)
    index = {tuple(c): k for k, c in enumerate(codes.tolist())}
    counts = torch.bincount(torch.tensor([index[tuple(c)] for c in code.tolist()]), minlength=120).double()
    expected = p * rows
    keep = expected > 5
    chi2 = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    dof = int(keep.sum()) - 1
    assert chi2 < dof + 5 * (2 * dof) ** 0.5, (chi2, dof)


@pytest.mark.parametrize("name", list(CASES))
def test_cached_beam_search_is_exact_map_at_full_width(name):
    """Width 120 = |S_5|: beam search returns every permutation, best first, with exact scores."""
    net = make_net(**CASES[name])
    g = torch.Generator().manual_seed(3)
    ctx = context_for(name, 3, g)
    rows = 1 if ctx is None else 3
    codes, scores = N.beam_search_codes(net, rows, beam_width=120, keep=10, context=ctx)
    for r in range(rows):
        c = None if ctx is None else ctx[r:r + 1].expand(10, *ctx.shape[1:])
        again = N.log_prob_codes(net, codes[r], context=c)
        assert torch.allclose(again, scores[r], atol=1e-5)
        every = R.encode(torch.tensor(list(itertools.permutations(range(5)))), net.config.representation)
        call = None if ctx is None else ctx[r:r + 1].expand(120, *ctx.shape[1:])
        top = N.log_prob_codes(net, every, context=call).sort(descending=True).values[:10]
        assert torch.allclose(scores[r], top, atol=1e-5)


@pytest.mark.parametrize("name", ["items", "pointer"])
def test_same_seed_same_codes_as_the_full_forward_sampler(name):
    net = make_net(**CASES[name])
    ctx = context_for(name, 300, torch.Generator().manual_seed(4))
    prefix = torch.tensor([1, 0])
    a = N.sample_codes(net, 300, context=ctx, prefix=prefix, generator=torch.Generator().manual_seed(5))
    b = N.sample_codes(net, 300, context=ctx, prefix=prefix, generator=torch.Generator().manual_seed(5),
                       incremental=False)
    assert (a[:, :2] == prefix).all()
    assert (a == b).float().mean() > 0.99  # float rounding may move a draw across a cdf boundary
    ca, sa = N.beam_search_codes(net, 300, beam_width=4, keep=2, context=ctx, prefix=prefix)
    cb, sb = N.beam_search_codes(net, 300, beam_width=4, keep=2, context=ctx, prefix=prefix,
                                 incremental=False)
    assert torch.allclose(sa, sb, atol=1e-5)
