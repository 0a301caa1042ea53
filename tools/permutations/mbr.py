"""Minimum-Bayes-risk decoding: the one ranking per row that is best on average over samples.

Given ``S`` sampled orderings per row (``samples`` ``(rows, S, n)``, item per position, best
first), :func:`decode` returns for each row the ordering ``sigma`` maximising the sample mean of
a metric ``U(sigma, pi_s)`` (or minimising a distance), exactly for the empirical distribution
of the samples:

* ``ndcg@K`` (``ndcg`` = ``ndcg@n``): NDCG@K of ``sigma`` with the sampled ordering as the
  truth; the item a sample puts at position ``q`` (0-based) has graded relevance
  ``max(0, K - q)`` (linear gain), so ``ndcg@n`` grades every position (``n - q``) and a small
  ``K`` only a sample's top K. The expected gain of item ``i`` at position ``p`` is
  ``w_i d_p`` with ``w_i = sum_q P(pos(i) = q) max(0, K - q)`` (the samples' position
  marginals) and ``d_p = 1 / log2(p + 2)`` for ``p < K``: an assignment problem whose matrix
  has product form, so sorting by ``w`` solves it (rearrangement); positions past K carry no
  gain and are ordered by mean position (Borda), then item index.
* ``footrule``: Spearman's footrule ``sum_i |pos_sigma(i) - pos_pi(i)|``, a general linear
  assignment over the marginals (``scipy.optimize.linear_sum_assignment`` per row).
* ``spearman``: the squared version; product form again, so the Borda order (mean position).
* ``kendall``: the Kendall distance; its MBR ranking is the Kemeny consensus of the samples
  (NP-hard). Exact by dynamic programming over item subsets for ``n <= KENDALL_EXACT_MAX``
  (``2^n`` states, vectorised over rows); beyond, the Borda order improved by adjacent swaps
  until no swap helps (a local optimum; ``Decision.exact`` says which).

Everything is computed from the samples' position marginals ``(rows, n, n)`` or pairwise
precedence ``(rows, n, n)``, with numpy over all rows (the footrule's assignment is one scipy
call per row).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from cortexkit.formats.errors import CortexError

METRICS = ("ndcg@K", "footrule", "spearman", "kendall")
KENDALL_EXACT_MAX = 12


@dataclass(frozen=True)
class Metric:
    """A parsed ``--metric``: ``name`` in ndcg/footrule/spearman/kendall, ``k`` (ndcg cut-off)."""

    name: str
    k: int | None = None

    @property
    def higher_is_better(self) -> bool:
        return self.name == "ndcg"

    def label(self, n: int) -> str:
        return f"ndcg@{self.cutoff(n)}" if self.name == "ndcg" else self.name

    def cutoff(self, n: int) -> int:
        return min(self.k or n, n)


def parse_metric(text: str | None) -> Metric:
    """``ndcg``, ``ndcg@K``, ``footrule``, ``spearman`` or ``kendall`` (default ``ndcg``)."""
    text = (text or "ndcg").strip().lower()
    m = re.fullmatch(r"ndcg(?:@(\d+))?", text)
    if m:
        k = int(m.group(1)) if m.group(1) else None
        if k is not None and k < 1:
            raise CortexError(f"--metric {text}: the cut-off K of ndcg@K must be at least 1")
        return Metric("ndcg", k)
    if text in ("footrule", "spearman", "kendall"):
        return Metric(text)
    raise CortexError(f"--metric {text}: use ndcg, ndcg@K, footrule, spearman or kendall")


@dataclass
class Decision:
    """``orderings`` ``(rows, n)`` int64, ``expected`` ``(rows,)`` float64 the sample mean of the
    metric at the chosen ordering, and whether the decision is exact for the samples."""

    orderings: np.ndarray
    expected: np.ndarray
    exact: bool = True


def positions(samples: np.ndarray) -> np.ndarray:
    """``(rows, S, n)`` orderings -> ``(rows, S, n)`` position of each item."""
    return np.argsort(samples, axis=-1, kind="stable")


def marginals(samples: np.ndarray) -> np.ndarray:
    """``M[r, i, q]`` = share of row r's samples that put item i at position q."""
    rows, count, n = samples.shape
    out = np.zeros((rows, n * n))
    flat = samples.astype(np.int64) * n + np.arange(n)  # item * n + position
    np.add.at(out, (np.repeat(np.arange(rows), count * n), flat.reshape(-1)), 1.0)
    return out.reshape(rows, n, n) / count


def precedence(samples: np.ndarray) -> np.ndarray:
    """``B[r, i, j]`` = share of row r's samples ranking item i before item j."""
    pos = positions(samples)
    return (pos[:, :, :, None] < pos[:, :, None, :]).mean(1)


def discounts(n: int, k: int) -> np.ndarray:
    d = 1.0 / np.log2(np.arange(n) + 2.0)
    d[k:] = 0.0
    return d


def relevance(n: int, k: int) -> np.ndarray:
    """Relevance of a sample's position q under ndcg@k: max(0, k - q)."""
    return np.maximum(0, k - np.arange(n)).astype(np.float64)


def expected_metric(orderings: np.ndarray, samples: np.ndarray, metric: Metric) -> np.ndarray:
    """Sample mean of the metric of ``orderings`` ``(rows, n)`` against ``samples`` ``(rows, S, n)``
    computed directly (no marginals): the reference the decisions are tested against."""
    rows, count, n = samples.shape
    truth = positions(samples)  # (rows, S, n) position of item in sample
    mine = np.argsort(orderings, axis=-1, kind="stable")[:, None, :]  # position in the decision
    if metric.name == "ndcg":
        k = metric.cutoff(n)
        rel = relevance(n, k)[truth]  # (rows, S, n) relevance of each item in each sample
        gain = (rel * discounts(n, k)[mine]).sum(-1)
        ideal = (relevance(n, k) * discounts(n, k)).sum()
        return (gain / ideal).mean(1)
    if metric.name == "footrule":
        return np.abs(truth - mine).sum(-1).mean(1).astype(np.float64)
    if metric.name == "spearman":
        return ((truth - mine) ** 2).sum(-1).mean(1).astype(np.float64)
    before_mine = mine[:, :, :, None] < mine[:, :, None, :]
    before_truth = truth[:, :, :, None] < truth[:, :, None, :]
    return (before_mine & ~before_truth).sum((-1, -2)).mean(1).astype(np.float64)


def decode(samples: np.ndarray, metric: Metric | str) -> Decision:
    """The MBR ordering of each row of ``samples`` ``(rows, S, n)`` under ``metric``."""
    metric = parse_metric(metric) if isinstance(metric, str) else metric
    samples = np.asarray(samples, dtype=np.int64)
    if samples.ndim != 3 or samples.shape[1] < 1:
        raise CortexError("MBR decoding needs samples (rows, S, n) with S >= 1")
    rows, _, n = samples.shape
    exact = True
    if metric.name in ("ndcg", "spearman"):
        m = marginals(samples)
        mean_pos = m @ np.arange(n, dtype=np.float64)  # (rows, n)
        if metric.name == "ndcg":
            w = m @ relevance(n, metric.cutoff(n))
            keys = (np.broadcast_to(np.arange(n), (rows, n)), mean_pos, -w)  # lexsort: last key first
        else:
            keys = (np.broadcast_to(np.arange(n), (rows, n)), mean_pos)
        order = np.lexsort(keys, axis=-1)
    elif metric.name == "footrule":
        from scipy.optimize import linear_sum_assignment

        m = marginals(samples)
        dist = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(np.float64)  # |q - p|
        cost = m @ dist  # (rows, item, predicted position)
        order = np.empty((rows, n), dtype=np.int64)
        for r in range(rows):
            item, pos = linear_sum_assignment(cost[r])
            order[r, pos] = item
    else:
        b = precedence(samples)
        if n <= KENDALL_EXACT_MAX:
            order = kemeny_exact(b)
        else:
            order, exact = kemeny_local(b), False
    return Decision(order, expected_metric(order, samples, metric), exact)


def kemeny_exact(b: np.ndarray, chunk: int = 64) -> np.ndarray:
    """Orderings minimising ``sum_{sigma: i before j} b[j, i]`` by DP over the set placed first.

    ``f(S | {j}) = f(S) + sum_{i not in S, i != j} b[i, j]``: placing j next costs every sample
    pair where a still unplaced i comes before j. ``b`` ``(rows, n, n)``; ``2^n`` states.
    """
    rows, n, _ = b.shape
    states = 1 << n
    member = ((np.arange(states)[:, None] >> np.arange(n)) & 1).astype(np.float64)  # (states, n)
    pop = member.sum(1).astype(np.int64)
    out = np.empty((rows, n), dtype=np.int64)
    for lo in range(0, rows, chunk):
        bb = b[lo:lo + chunk]
        c = len(bb)
        # placed[s, j] = sum_{i in S} b[i, j]; cost of placing j after S = col[j] - placed - b[j, j]
        col = bb.sum(1)  # (c, n)
        placed = np.einsum("si,cij->csj", member, bb)
        step = col[:, None, :] - placed  # b[j, j] = 0
        f = np.full((c, states), np.inf)
        f[:, 0] = 0.0
        choice = np.zeros((c, states), dtype=np.int64)
        for size in range(n):
            layer = np.nonzero(pop == size)[0]
            for j in range(n):
                free = layer[member[layer, j] == 0]
                nxt = free | (1 << j)
                cand = f[:, free] + step[:, free, j]
                better = cand < f[:, nxt]
                f[:, nxt] = np.where(better, cand, f[:, nxt])
                choice[:, nxt] = np.where(better, j, choice[:, nxt])
        s = np.full(c, states - 1)
        for pos in range(n - 1, -1, -1):
            j = choice[np.arange(c), s]
            out[lo:lo + c, pos] = j
            s = s & ~(1 << j)
    return out


def kemeny_local(b: np.ndarray) -> np.ndarray:
    """Borda order, then adjacent swaps while one lowers the expected Kendall distance."""
    rows, n, _ = b.shape
    order = np.argsort(-b.sum(2), axis=1, kind="stable")  # most often ahead first
    r = np.arange(rows)
    for _ in range(n * n):
        changed = False
        for p in range(n - 1):
            i, j = order[:, p], order[:, p + 1]
            swap = b[r, j, i] > b[r, i, j]
            if swap.any():
                order[swap, p], order[swap, p + 1] = j[swap], i[swap]
                changed = True
        if not changed:
            break
    return order


def describe(metric: Metric, n: int, samples: int, exact: bool) -> str:
    what = metric.label(n)
    kind = "exact for the samples" if exact else "a local optimum (adjacent swaps) past n = " + str(KENDALL_EXACT_MAX)
    return f"mbr under {what} from {samples} samples per row ({kind})"

