"""MBR decoding (tools/permutations/mbr.py) against brute force over S_4 and S_5: for every
metric the decision's sample-mean metric equals the best over all n! orderings, computed
directly from the samples (not from the marginals the decoder uses)."""

import itertools

import numpy as np
import pytest

from cortexkit.formats.errors import CortexError
from cortexkit.tools.permutations import mbr

METRICS = ["ndcg", "ndcg@1", "ndcg@2", "ndcg@3", "footrule", "spearman", "kendall"]


def skewed_samples(rng, rows, count, n, spread=1.0):
    """Rows of noisy orderings near a per-row centre (Gumbel keys), so the optima differ."""
    centre = rng.permuted(np.tile(np.arange(n, dtype=float), (rows, 1)), axis=1)
    keys = centre[:, None, :] + spread * rng.gumbel(size=(rows, count, n))
    return keys.argsort(-1)


@pytest.mark.parametrize("n", [4, 5])
@pytest.mark.parametrize("metric", METRICS)
def test_decision_is_the_brute_force_optimum(n, metric):
    rng = np.random.default_rng(n * 10 + len(metric))
    samples = skewed_samples(rng, 8, 9, n, spread=2.0)
    m = mbr.parse_metric(metric)
    d = mbr.decode(samples, m)
    every = np.array(list(itertools.permutations(range(n))))
    values = np.stack([mbr.expected_metric(np.tile(p, (len(samples), 1)), samples, m) for p in every], 1)
    best = values.max(1) if m.higher_is_better else values.min(1)
    assert d.exact
    assert np.allclose(d.expected, best, atol=1e-12)
    assert np.array_equal(np.sort(d.orderings, 1), np.tile(np.arange(n), (len(samples), 1)))
    # the decision's own value, recomputed, is what it reports
    assert np.allclose(mbr.expected_metric(d.orderings, samples, m), d.expected)
    # and some rows are not decided by the first sample alone (the test can fail)
    first = mbr.expected_metric(samples[:, 0], samples, m)
    assert (first != d.expected).any()


def test_unanimous_samples_give_that_ordering_and_closed_form_values():
    rng = np.random.default_rng(3)
    pi = rng.permutation(6)
    samples = np.tile(pi, (2, 5, 1))
    for metric in METRICS:
        d = mbr.decode(samples, metric)
        assert np.array_equal(d.orderings, np.tile(pi, (2, 1))), metric
        assert np.allclose(d.expected, 1.0 if metric.startswith("ndcg") else 0.0)


def test_ndcg_at_n_is_borda_and_marginals_are_doubly_stochastic():
    rng = np.random.default_rng(5)
    samples = skewed_samples(rng, 20, 30, 7)
    m = mbr.marginals(samples)
    assert np.allclose(m.sum(1), 1) and np.allclose(m.sum(2), 1)
    borda = np.lexsort((np.tile(np.arange(7), (20, 1)), mbr.positions(samples).mean(1)), axis=-1)
    assert np.array_equal(mbr.decode(samples, "ndcg").orderings, borda)
    assert np.array_equal(mbr.decode(samples, "spearman").orderings, borda)


def test_kendall_local_search_past_the_exact_limit():
    """n = 13: the exact DP (2^13 states) against the local search the tool uses past 12."""
    rng = np.random.default_rng(7)
    samples = skewed_samples(rng, 3, 15, 13, spread=3.0)
    b = mbr.precedence(samples)
    exact = mbr.kemeny_exact(b)
    d = mbr.decode(samples, "kendall")
    assert not d.exact
    m = mbr.parse_metric("kendall")
    opt = mbr.expected_metric(exact, samples, m)
    assert (d.expected >= opt - 1e-12).all()
    assert d.expected.mean() <= opt.mean() * 1.1 + 0.5  # a local optimum close to the optimum


def test_bad_metrics_are_one_line_errors():
    for text in ("ndcg@0", "ndcg@x", "map", "kendal"):
        with pytest.raises(CortexError, match="--metric"):
            mbr.parse_metric(text)
    assert mbr.parse_metric("NDCG@5") == mbr.Metric("ndcg", 5)
    assert mbr.parse_metric(None).label(9) == "ndcg@9"
