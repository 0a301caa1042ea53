"""Classical and neural permutation models: normalisation, closed forms, subsumption, fits."""

import itertools
import math

import pytest
import numpy as np
import torch

from cortexkit.tools.permutations import classical as C
from cortexkit.tools.permutations import neural as N
from cortexkit.tools.permutations import representations as R

S4 = torch.tensor(list(itertools.permutations(range(4))))
S5 = torch.tensor(list(itertools.permutations(range(5))))


def code_index(code):
    """Mixed-radix index of Lehmer codes of S_4: lexicographic rank (matches S4's order)."""
    return code[:, 0] * 6 + code[:, 1] * 2 + code[:, 2]


def brute_kendall(x, ref):
    pos = {v: i for i, v in enumerate(ref)}
    y = [pos[v] for v in x]
    return sum(1 for i in range(len(y)) for j in range(i + 1, len(y)) if y[i] > y[j])


@pytest.mark.parametrize("rep", ["lehmer", "insertion"])
def test_mallows_product_equals_closed_form(rep):
    """exp(-theta d_K(x, ref)) / Z(theta) with Z = prod_i sum_{v<n-i} e^{-theta v}."""
    theta, ref = 0.4, torch.tensor([3, 0, 4, 1, 2])
    model = C.mallows_from_theta(theta, ref, rep)
    lp = model.log_prob(S5)
    logz = C.mallows_log_normaliser(theta, 5)
    expected = torch.tensor([-theta * brute_kendall(x, ref.tolist()) - logz for x in S5.tolist()],
                            dtype=torch.float64)
    assert torch.allclose(lp, expected, atol=1e-10)
    assert abs(float(torch.logsumexp(lp, 0))) < 1e-10


def test_generalized_mallows_sums_to_one_and_contains_mallows():
    ref = torch.arange(5)
    gm = C.mallows_from_theta(torch.tensor([0.1, 0.5, -0.3, 2.0, 0.0]), ref)
    assert abs(float(torch.logsumexp(gm.log_prob(S5), 0))) < 1e-10
    same = C.mallows_from_theta(torch.full((5,), 0.7), ref)
    assert torch.allclose(same.log_prob(S5), C.mallows_from_theta(0.7, ref).log_prob(S5))


@pytest.mark.parametrize("phi", [0.3, 0.7, 0.9])
def test_mallows_fit_recovers_phi(phi):
    g = torch.Generator().manual_seed(1)
    ref = torch.randperm(10, generator=g)
    x = C.mallows_from_theta(-math.log(phi), ref).sample(5000, g)
    fit = C.fit_mallows(x, ref)
    assert abs(float(fit.phi[0]) - phi) < 0.015
    # the free 1-NFE product model read back as Mallows gives the same phi
    prod = C.fit_product(x, "lehmer", ref, smoothing=0.0)
    assert abs(math.exp(-C.theta_from_product(prod)) - float(fit.phi[0])) < 1e-6


def test_mallows_sampler_matches_probabilities():
    """Chi-square-free check: empirical frequencies on S_4 match exp(log_prob) closely."""
    g = torch.Generator().manual_seed(2)
    model = C.mallows_from_theta(0.5, torch.tensor([2, 0, 3, 1]))
    x = model.sample(200_000, g)
    counts = torch.bincount(code_index(R.lehmer_encode(x)), minlength=24).double()
    expected = model.log_prob(S4).exp()
    assert (counts / len(x) - expected).abs().max() < 0.005


def test_generalized_mallows_fit_recovers_theta():
    g = torch.Generator().manual_seed(3)
    theta = torch.tensor([1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.0])
    ref = torch.arange(8)
    x = C.mallows_from_theta(theta, ref).sample(20000, g)
    fit = C.fit_generalized_mallows(x, ref)
    assert (fit.theta[:-1] - theta[:-1]).abs().max() < 0.06


def test_rim_is_product_over_insertion_digits():
    """A RIM with free p_k(v) is exactly the product model on insertion vectors."""
    g = torch.Generator().manual_seed(4)
    x = torch.stack([torch.randperm(5, generator=g) for _ in range(300)])
    rim = C.fit_product(x, "insertion", torch.arange(5), smoothing=0.0)
    assert abs(float(torch.logsumexp(rim.log_prob(S5), 0))) < 1e-10
    # MLE: digit marginals equal the empirical ones
    v = R.insertion_encode(x)
    for k in range(5):
        freq = torch.bincount(v[:, k], minlength=5).double() / len(x)
        assert torch.allclose(rim.log_probs[k].exp(), freq, atol=1e-12)


def test_plackett_luce_normalised_and_fit():
    w = torch.tensor([1.0, 0.0, -0.5, 0.3, -0.8], dtype=torch.float64)
    pl = C.PlackettLuce(w - w.mean())
    assert abs(float(torch.logsumexp(pl.log_prob(S5), 0))) < 1e-10
    g = torch.Generator().manual_seed(5)
    x = pl.sample(20000, g)
    fit = C.fit_plackett_luce(x)
    assert (fit.log_weights - pl.log_weights).abs().max() < 0.05
    # the first-choice frequencies follow softmax(w)
    first = torch.bincount(x[:, 0], minlength=5).double() / len(x)
    assert torch.allclose(first, torch.softmax(w, 0), atol=0.01)


def test_plackett_luce_gradient_is_autograds_and_the_fit_is_stationary():
    g = torch.Generator().manual_seed(6)
    x = C.PlackettLuce(torch.tensor([0.9, -0.2, 0.4, -1.1, 0.0, 0.3], dtype=torch.float64)).sample(500, g)
    s = torch.tensor([0.3, -0.7, 0.1, 0.5, -0.2, 0.0], dtype=torch.float64, requires_grad=True)
    nll = -C.PlackettLuce(s).log_prob(x).mean()
    nll.backward()
    value, grad = C.plackett_luce_nll(s.detach().numpy(), x.numpy())
    assert abs(value - float(nll)) < 1e-12
    assert np.allclose(grad, s.grad.numpy(), atol=1e-12)
    fit = C.fit_plackett_luce(x)
    assert np.abs(C.plackett_luce_nll(fit.log_weights.numpy(), x.numpy())[1]).max() < 1e-7
    assert abs(float(fit.log_weights.sum())) < 1e-12


def small_net(rep, mode, n=4, context_dim=0):
    torch.manual_seed(0)
    return N.PermutationTransformer(N.NetConfig(n, rep, mode, d_model=16, layers=1, heads=2, ff=32,
                                                context_dim=context_dim))


@pytest.mark.parametrize("rep", ["lehmer", "fisher-yates", "insertion"])
@pytest.mark.parametrize("mode,nfe,partition", [("ar", None, "contiguous"), ("mlm", 1, "contiguous"),
                                                ("mlm", 2, "contiguous"), ("mlm", 2, "random"),
                                                ("mlm", 4, "random")])
def test_neural_probabilities_sum_to_one_on_s4(rep, mode, nfe, partition):
    net = small_net(rep, mode)
    codes = R.encode(S4, rep)
    lp = N.log_prob_codes(net, codes, nfe=nfe, partition=partition,
                          generator=torch.Generator().manual_seed(7))
    assert abs(float(lp.exp().sum()) - 1) < 1e-5


def test_inline_probabilities_cover_invalid_sequences():
    """Inline digits range over [0, n-1]: all n^n sequences share the mass, permutations less."""
    net = small_net("inline", "mlm", n=3)
    seqs = torch.tensor(list(itertools.product(range(3), repeat=3)))
    lp = N.log_prob_codes(net, seqs, nfe=1)
    assert abs(float(lp.exp().sum()) - 1) < 1e-5
    assert float(lp[R.is_permutation(seqs)].exp().sum()) < 1


@pytest.mark.parametrize("rep", ["lehmer", "fisher-yates", "insertion"])
@pytest.mark.parametrize("nfe", [1, 3, 7])
def test_neural_samples_always_valid(rep, nfe):
    net = small_net(rep, "mlm", n=7)
    code = N.sample_codes(net, 2000, nfe=nfe, generator=torch.Generator().manual_seed(1))
    assert R.codes_are_legal(code, rep).all()
    assert R.is_permutation(R.decode(code, rep)).all()


def test_sampler_frequencies_match_its_likelihood():
    """The NFE-2 random-partition sampler draws from the distribution log_prob_codes scores."""
    net = small_net("lehmer", "mlm")
    codes = R.encode(S4, "lehmer")
    lp = N.log_prob_codes(net, codes, nfe=2, partition="random", generator=torch.Generator().manual_seed(3))
    draws = N.sample_codes(net, 100_000, nfe=2, partition="random", generator=torch.Generator().manual_seed(3))
    counts = torch.bincount(code_index(draws), minlength=24).double()
    assert (counts / len(draws) - lp.exp()).abs().max() < 0.01


def test_masked_model_at_one_nfe_is_product():
    net = small_net("insertion", "mlm", n=5)
    table = N.first_digit_table(net)
    codes = R.encode(S5, "insertion")
    lp = N.log_prob_codes(net, codes, nfe=1)
    product = table.gather(1, codes.t()).t().sum(1)
    assert torch.allclose(lp, product, atol=1e-5)


def test_prefix_conditioning_keeps_prefix():
    net = small_net("insertion", "mlm", n=6)
    prefix = torch.tensor([0, 1, 0])
    code = N.sample_codes(net, 500, nfe=2, prefix=prefix, generator=torch.Generator().manual_seed(0))
    assert (code[:, :3] == prefix).all()
    lp = N.log_prob_codes(net, code[:5], nfe=2, known=3)
    assert (lp <= 0).all()


def test_context_tokens_change_the_distribution():
    net = small_net("lehmer", "ar", n=4, context_dim=3)
    codes = R.encode(S4, "lehmer")
    ctx_a = torch.zeros(24, 2, 3)
    ctx_b = torch.ones(24, 2, 3)
    la = N.log_prob_codes(net, codes, context=ctx_a)
    lb = N.log_prob_codes(net, codes, context=ctx_b)
    assert abs(float(la.exp().sum()) - 1) < 1e-5 and abs(float(lb.exp().sum()) - 1) < 1e-5
    assert not torch.allclose(la, lb)


def test_training_learns_a_mallows_distribution():
    """A tiny masked model on Mallows samples approaches the true NLL (loose, fast check)."""
    g = torch.Generator().manual_seed(0)
    true = C.mallows_from_theta(1.0, torch.arange(5))
    x = true.sample(2000, g)
    code = R.encode(x, "lehmer")
    net = small_net("lehmer", "mlm", n=5)
    N.train(net, code, N.TrainConfig(epochs=15, batch_size=128, lr=3e-3), generator=g)
    test = true.sample(2000, g)
    nll = float(-N.log_prob_codes(net, R.encode(test, "lehmer"), nfe=1).mean())
    truth = float(-true.log_prob(test).mean())
    uniform = math.log(120)
    assert nll < truth + 0.1 < uniform


def test_context_ids_with_positions_normalise_and_matter():
    torch.manual_seed(0)
    net = N.PermutationTransformer(N.NetConfig(4, "insertion", "mlm", d_model=16, layers=1, heads=2, ff=32,
                                               context_vocab=9, context_len=4))
    codes = R.encode(S4, "insertion")
    ids_a = torch.tensor([[0, 1, 2, 3]]).expand(24, 4)
    ids_b = torch.tensor([[3, 2, 1, 0]]).expand(24, 4)  # same movies, other reference order
    la = N.log_prob_codes(net, codes, nfe=2, context=ids_a)
    lb = N.log_prob_codes(net, codes, nfe=2, context=ids_b)
    assert abs(float(la.exp().sum()) - 1) < 1e-5 and abs(float(lb.exp().sum()) - 1) < 1e-5
    assert not torch.allclose(la, lb)


def test_aligned_context_reaches_causal_digits():
    """With aligned tokens, an AR model's digit 0 depends on token 0 and stays normalised."""
    torch.manual_seed(0)
    net = N.PermutationTransformer(N.NetConfig(3, "lehmer", "ar", d_model=16, layers=1, heads=2, ff=32,
                                               context_dim=2, context_len=3, context_aligned=True))
    codes = R.encode(torch.tensor(list(itertools.permutations(range(3)))), "lehmer")
    a = N.log_prob_codes(net, codes, context=torch.zeros(6, 3, 2))
    b = N.log_prob_codes(net, codes, context=torch.ones(6, 3, 2))
    assert abs(float(a.exp().sum()) - 1) < 1e-5 and abs(float(b.exp().sum()) - 1) < 1e-5
    assert not torch.allclose(a, b)
    with pytest.raises(ValueError, match="aligned"):
        net(codes, torch.zeros(6, 2, 2))


def test_popularity_prior_scores_in_closed_form_and_a_fit_that_stores_them():
    """Item-id embeddings tied with a popularity prior (issue 22, item 3): per id, log(1 + appearances)
    and the logit of the mean normalised rank shrunk toward 1/2 by 5 pseudo-appearances, each
    standardised over the ids seen; unseen ids get 0. A fit stores them and the round trip keeps them."""
    from cortexkit.tools.permutations import model as M

    x = torch.tensor([[0, 1, 2], [0, 1, 2], [2, 1, 0], [1, 0, 2]])    # orderings of local items
    ids = torch.tensor([[0, 1, 2], [0, 1, 3], [0, 1, 3], [1, 2, 3]])  # catalog id of each local item
    got = M.popularity_prior(x, ids, vocab_size=5).double()
    count, total = [0.0] * 4, [0.0] * 4                               # the definition, row by row
    for row, row_ids in zip(x.tolist(), ids.tolist()):
        for position, local in enumerate(row):
            count[row_ids[local]] += 1
            total[row_ids[local]] += (2 - position) / 2
    count, total = torch.tensor(count, dtype=torch.float64), torch.tensor(total, dtype=torch.float64)
    raw = torch.stack([torch.log1p(count), torch.logit((total + 2.5) / (count + 5))], 1)
    want = (raw - raw.mean(0)) / raw.std(0)
    assert raw[:, 1].std() > 0.05 and torch.allclose(got[:4], want, atol=1e-6)
    assert torch.equal(got[4], torch.zeros(2, dtype=torch.float64))        # the unknown-id token
    g = torch.Generator().manual_seed(0)
    orders = torch.stack([torch.randperm(4, generator=g) for _ in range(60)])
    items = torch.stack([torch.randperm(9, generator=g)[:4] * 10 for _ in range(60)])
    fitted = M.fit(orders, "ar", representation="insertion", items=items,
                   net_config=dict(d_model=16, heads=2, ff=16, layers=1, context_prior=2),
                   train_config=N.TrainConfig(epochs=2, batch_size=16), generator=g)
    ids = fitted.context_ids(items)
    assert torch.allclose(fitted.net.context_prior_scores, M.popularity_prior(orders, ids, len(fitted.vocabulary) + 1))
    back = M.PermutationModel.from_tensors(*fitted.to_tensors())
    assert torch.equal(back.net.context_prior_scores, fitted.net.context_prior_scores)
    assert torch.allclose(back.log_prob(orders[:5], items=items[:5]), fitted.log_prob(orders[:5], items=items[:5]))
    with pytest.raises(ValueError, match="condition on item ids"):
        M.fit(orders, "ar", net_config=dict(context_prior=2), train_config=N.TrainConfig(epochs=1))
