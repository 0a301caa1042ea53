"""Exactness of the four permutation codes: brute-force definitions, bijections, identities."""

import itertools
import math

import pytest
import torch

from cortexkit.tools.permutations import representations as R

SIZES = [1, 2, 3, 7, 50, 500]


def random_orderings(n, batch, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(n, generator=g) for _ in range(batch)])


def brute_lehmer(x):
    n = len(x)
    return [sum(1 for j in range(i + 1, n) if x[j] < x[i]) for i in range(n)]


def brute_left_lehmer(x):
    return [sum(1 for j in range(i) if x[j] > x[i]) for i in range(len(x))]


def brute_insertion_decode(v, ref):
    out = []
    for k, slot in enumerate(v):
        out.insert(slot, ref[k])
    return out


def brute_fisher_yates_decode(j):
    a = list(range(len(j)))
    for i, d in enumerate(j[:-1]):
        a[i], a[i + d] = a[i + d], a[i]
    return a


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("rep", R.REPRESENTATIONS)
def test_round_trip_and_ranges(n, rep):
    x = random_orderings(n, 40, seed=n)
    ref = random_orderings(n, 1, seed=n + 1)[0]
    code = R.encode(x, rep, ref)
    assert R.codes_are_legal(code, rep).all()
    assert torch.equal(R.decode(code, rep, ref), x)


@pytest.mark.parametrize("n", SIZES)
def test_lehmer_matches_definition_and_kendall(n):
    x = random_orderings(n, 6, seed=10 + n)
    code = R.lehmer_encode(x)
    for row, c in zip(x.tolist(), code.tolist()):
        assert c == brute_lehmer(row)
    # sum of digits = inversions = Kendall distance to identity, also equals the insertion form
    inv = torch.tensor([sum(1 for i in range(n) for j in range(i + 1, n) if r[i] > r[j]) for r in x.tolist()])
    assert torch.equal(code.sum(1), inv)
    ins = R.insertion_encode(x)
    assert torch.equal((torch.arange(n) - ins).sum(1), inv)
    assert torch.equal(R.kendall_distance(x, torch.arange(n)), inv)


@pytest.mark.parametrize("n", SIZES)
def test_insertion_identity_theorem_4_3(n):
    """V(X)_k = k - L'(X^{-1})_k, and the brute-force insertion procedure decodes V."""
    x = random_orderings(n, 6, seed=20 + n)
    v = R.insertion_encode(x)
    left_inv = R.left_lehmer_encode(R.invert(x))
    assert torch.equal(v, torch.arange(n) - left_inv)
    for row, c in zip(x.tolist(), v.tolist()):
        assert brute_insertion_decode(c, list(range(n))) == row
        assert R.left_lehmer_encode(torch.tensor([row])).tolist()[0] == brute_left_lehmer(row)
    ref = random_orderings(n, 1, seed=99)[0]
    v_ref = R.insertion_encode(x, ref)
    for row, c in zip(x.tolist(), v_ref.tolist()):
        assert brute_insertion_decode(c, ref.tolist()) == row


@pytest.mark.parametrize("n", SIZES)
def test_fisher_yates_matches_swaps(n):
    x = random_orderings(n, 6, seed=30 + n)
    j = R.fisher_yates_encode(x)
    for row, c in zip(x.tolist(), j.tolist()):
        assert brute_fisher_yates_decode(c) == row
    assert (j[:, -1] == 0).all()


@pytest.mark.parametrize("n", [2, 3, 10, 500])
def test_sattolo_draws_are_exactly_the_cycles(n):
    g = torch.Generator().manual_seed(n)
    sizes = R.digit_sizes("fisher-yates", n)
    u = torch.rand(300, n, generator=g)
    draws = 1 + (u * (sizes - 1).clamp(min=1)).long()  # J_i in [1, n-1-i]
    draws[:, -1] = 0
    cyc = R.fisher_yates_decode(draws)
    assert R.is_cycle(cyc).all()
    # and cycles encode back to draws >= 1
    assert (R.fisher_yates_encode(cyc)[:, :-1] >= 1).all()
    # a non-cycle (identity) is rejected
    assert not R.is_cycle(torch.arange(n)[None]).item()


@pytest.mark.parametrize("rep", R.REPRESENTATIONS[1:])
def test_bijection_on_s5(rep):
    """All 120 legal digit vectors decode to 120 distinct permutations."""
    n = 5
    sizes = R.digit_sizes(rep, n).tolist()
    codes = torch.tensor(list(itertools.product(*[range(s) for s in sizes])))
    assert len(codes) == math.factorial(n)
    x = R.decode(codes, rep)
    assert R.is_permutation(x).all()
    assert len({tuple(r) for r in x.tolist()}) == math.factorial(n)
    assert torch.equal(R.encode(x, rep), codes)


def test_cycle_count_s6():
    perms = torch.tensor(list(itertools.permutations(range(6))))
    assert int(R.is_cycle(perms).sum()) == math.factorial(5)


def test_is_permutation_flags_bad_rows():
    x = torch.tensor([[0, 1, 2], [0, 0, 2], [0, 1, 3], [2, 1, 0]])
    assert R.is_permutation(x).tolist() == [True, False, False, True]


def test_borda_reference():
    x = torch.tensor([[2, 0, 1], [2, 1, 0], [0, 2, 1]])
    assert R.borda_reference(x).tolist() == [2, 0, 1]


def test_no_overflow_large_n():
    """Digit vectors, no factorial ranks: n = 500 round-trips in one batch."""
    x = random_orderings(500, 3, seed=5)
    for rep in R.REPRESENTATIONS:
        assert torch.equal(R.decode(R.encode(x, rep), rep), x)


def test_chunked_batches_match(monkeypatch):
    """Large batches are split into cache-sized chunks; results must not depend on it."""
    x = random_orderings(9, 50, seed=7)
    whole = {rep: R.encode(x, rep) for rep in R.REPRESENTATIONS}
    monkeypatch.setattr(R, "CHUNK", 8)
    for rep in R.REPRESENTATIONS:
        assert torch.equal(R.encode(x, rep), whole[rep])
        assert torch.equal(R.decode(whole[rep], rep), x)
