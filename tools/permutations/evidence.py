"""Per-row evidence: each row's own revealed partial order, sampled or searched in one process.

Evidence is a tensor ``given`` ``(rows, r_max)`` int64 of item indices padded with -1 (row ``i``
reveals ``given[i, :r_i]``). What it means depends on the representation:

* lehmer, fisher-yates, inline and Plackett-Luce: the top ``r_i`` items in order, so the first
  ``r_i`` digits are fixed (``R.encode`` of any completion gives the same first digits);
* insertion: the relative order of the revealed items. When they are the first ``r_i`` items
  of the reference, the digits ``V_0..V_{r_i-1}`` are fixed. Otherwise, for a model conditioned
  on item ids (where a local label only says which token sits at which digit), the row is
  **relabelled**: the revealed items take the labels ``reference[:r_i]`` (in reference order),
  the others the remaining labels (in reference order), the row's item ids move with them, and
  the completion is mapped back to the original labels. An unconditional insertion model cannot
  express an arbitrary subset's order as fixed digits and refuses it.

Fixing the first digits is exact conditioning for every model whose sampler is sequential in
the digits (autoregressive, products, Mallows, Plackett-Luce): ``p(x | e) = p(x) / p(e)``. A
masked model samples the free digits with its own NFE blocks given the revealed ones.
Rows are grouped by ``r_i`` and each group is one batched call: no Python work per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cortexkit.formats.errors import CortexError
from cortexkit.tools.permutations import classical as C
from cortexkit.tools.permutations import neural as N
from cortexkit.tools.permutations import representations as R


@dataclass
class Evidence:
    """Checked evidence: ``prefix`` ``(rows, r_max)`` codes (-1 past ``length``), ``length``
    ``(rows,)``, ``given`` ``(rows, r_max)`` the items in the labels the model sees, and
    ``labels`` ``(rows, n)`` (None: no row relabelled): the original item of each model label."""

    prefix: torch.Tensor
    length: torch.Tensor
    given: torch.Tensor
    labels: torch.Tensor | None = None


def check_given(given: torch.Tensor, n: int, source: str = "--given-file") -> torch.Tensor:
    """``(rows, r_max)`` int64: each row distinct items of 0..n-1, then only -1 padding."""
    given = torch.as_tensor(given)
    if given.dim() == 1:
        given = given[:, None]
    if given.dim() != 2 or given.is_floating_point() and not torch.equal(given, given.round()):
        raise CortexError(f"{source}: evidence must be an integer table (rows, r) padded with -1")
    given = given.to(torch.int64)
    if given.shape[1] > n:
        raise CortexError(f"{source}: rows reveal up to {given.shape[1]} items, the model has n = {n}")
    pad = given < 0
    bad = (given < -1) | (given >= n)
    bad[:, 1:] |= pad[:, :-1] & ~pad[:, 1:]  # an item after padding
    if bad.any():
        r = int(bad.any(1).nonzero()[0, 0])
        raise CortexError(f"{source}: row {r + 1} {given[r].tolist()}: give items 0..{n - 1}, then -1 padding only")
    onehot = torch.zeros(len(given), n + 1, dtype=torch.int64).scatter_add_(
        1, given.clamp(min=-1) % (n + 1), torch.ones_like(given))
    dup = (onehot[:, :n] > 1).any(1)
    if dup.any():
        r = int(dup.nonzero()[0, 0])
        raise CortexError(f"{source}: row {r + 1} {given[r].tolist()} repeats an item")
    return given


def revealed_mask(given: torch.Tensor, n: int) -> torch.Tensor:
    """``(rows, n)`` bool: the items each row reveals (padding -1 ignored)."""
    index = torch.where(given >= 0, given, torch.full_like(given, n))
    mask = torch.zeros(len(given), n + 1, dtype=torch.bool).scatter_(1, index, True)
    return mask[:, :n]


def completions(given: torch.Tensor, length: torch.Tensor, n: int) -> torch.Tensor:
    """``(rows, n)`` orderings: each row's revealed items, then the others in increasing order."""
    rows, width = given.shape
    revealed = revealed_mask(given, n)
    rest = (revealed.long() * n + torch.arange(n)).argsort(dim=1)  # unrevealed first, ascending
    out = torch.empty(rows, n, dtype=torch.int64)
    for r in torch.unique(length).tolist():  # one batched step per evidence length
        idx = (length == r).nonzero()[:, 0]
        out[idx] = torch.cat([given[idx, :r], rest[idx, :n - r]], dim=1)
    return out


def prepare(model, given: torch.Tensor, *, conditional_on_items: bool,
            source: str = "--given-file") -> Evidence:
    """Evidence of ``given`` for ``model`` (see the module text); relabels insertion rows of an
    item-conditioned model whose revealed items are not the first reference items."""
    n = model.n
    given = check_given(given, n, source)
    length = (given >= 0).sum(1)
    rep = "inline" if model.plackett_luce is not None else model.representation
    ref = model.reference.to(torch.int64)
    labels = None
    if rep == "insertion":
        rank = torch.empty(n, dtype=torch.int64)
        rank[ref] = torch.arange(n)  # position of each item in the reference
        revealed = revealed_mask(given, n)
        first = rank[None].expand(len(given), n) < length[:, None]
        wrong = (revealed != first).any(1)
        if wrong.any():
            if not conditional_on_items:
                r = int(wrong.nonzero()[0, 0])
                raise CortexError(
                    f"{source}: row {r + 1} reveals items {sorted(given[r, :int(length[r])].tolist())}, not "
                    "the first reference items; an unconditional insertion-code model fixes the order of "
                    "the first r reference items only (fit with --condition items, or a lehmer model)")
            # model label ref[j] <- the j-th original item: revealed ones first, each in reference order
            key = (~revealed).long() * n + rank[None]
            order = key.argsort(dim=1)  # original items, in the order they take ref[0], ref[1], ...
            labels = torch.empty(len(given), n, dtype=torch.int64)
            labels[:, ref] = order  # labels[i, model label] = original item
            new_of = labels.argsort(dim=1)  # original item -> model label
            given = torch.where(given >= 0, new_of.gather(1, given.clamp(min=0)), given)
    full = completions(given, length, n)
    codes = R.encode(full, rep, None if rep == "inline" else ref)
    prefix = torch.where(torch.arange(given.shape[1])[None] < length[:, None], codes[:, :given.shape[1]],
                         torch.full_like(given, -1))
    return Evidence(prefix, length, given, labels)


def relabel_items(items: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
    """Each row's item ids in the model's labels (``items[i, labels[i, j]]`` at label ``j``)."""
    return items if labels is None else items.gather(1, labels)


def restore(x: torch.Tensor, labels: torch.Tensor | None, rows: torch.Tensor) -> torch.Tensor:
    """Orderings ``x`` ``(k, n)`` in model labels back to the original labels of rows ``rows``."""
    return x if labels is None else labels[rows].gather(1, x)


def sample(model, ev: Evidence, per_row: int, *, cond: torch.Tensor | None = None, nfe=None,
           partition: str = "contiguous", generator: torch.Generator | None = None,
           batch_size: int = 4096) -> torch.Tensor:
    """``per_row`` orderings per evidence row, ``(rows * per_row, n)`` in row order (original
    labels). ``cond``: the network's conditioning per row (token ids in model labels, or features)."""
    rows, n = len(ev.length), model.n
    out = torch.empty(rows * per_row, n, dtype=torch.int64)
    for r in torch.unique(ev.length).tolist():
        idx = (ev.length == r).nonzero()[:, 0]
        rep_idx = idx.repeat_interleave(per_row)
        k = len(rep_idx)
        if model.plackett_luce is not None:
            x = _plackett_luce_given(model.plackett_luce, ev.given[rep_idx, :r], generator)
        elif model.product is not None:
            code = model.product.sample_codes(k, generator)
            code[:, :r] = ev.prefix[rep_idx, :r]
            x = R.decode(code, model.representation, model.reference)
        else:
            code = N.sample_codes(model.net, k, nfe=nfe, partition=partition,
                                  prefix=ev.prefix[rep_idx, :r] if r else None,
                                  context=None if cond is None else cond[rep_idx], generator=generator,
                                  batch_size=min(batch_size, 4096))
            x = R.decode(code, model.representation, model.reference)
        slots = (idx[:, None] * per_row + torch.arange(per_row)).flatten()
        out[slots] = restore(x, ev.labels, rep_idx)
    return out


def best(model, ev: Evidence, *, beam_width: int, keep: int, cond: torch.Tensor | None = None, nfe=None,
         partition: str = "contiguous", generator: torch.Generator | None = None,
         batch_size: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """Beam/greedy search per evidence row: ``(rows * keep, n)`` orderings (original labels) and
    the conditional log-likelihoods ``(rows * keep,)`` of the unrevealed digits, best first."""
    rows, n = len(ev.length), model.n
    out = torch.empty(rows * keep, n, dtype=torch.int64)
    scores = torch.empty(rows * keep, dtype=torch.float64)
    for r in torch.unique(ev.length).tolist():
        idx = (ev.length == r).nonzero()[:, 0]
        if model.net is not None:
            code, score = N.beam_search_codes(model.net, len(idx), beam_width=beam_width, keep=keep, nfe=nfe,
                                              partition=partition, prefix=ev.prefix[idx, :r] if r else None,
                                              context=None if cond is None else cond[idx],
                                              generator=generator, batch_size=batch_size)
            x = R.decode(code.flatten(0, 1), model.representation, model.reference)
            score = score.flatten()
        else:  # one exact search per row (products: top assignments; PL: beam over positions)
            xs, ss = [], []
            for i in idx.tolist():
                if model.plackett_luce is not None:
                    xi, si = C.plackett_luce_beam(model.plackett_luce.log_weights, beam_width, keep,
                                                  ev.given[i, :r] if r else None)
                else:
                    ci, si = model.product.best_codes(keep, ev.prefix[i, :r] if r else None)
                    xi = R.decode(ci, model.representation, model.reference)
                xs.append(xi)
                ss.append(si)
            x, score = torch.cat(xs), torch.cat(ss)
        rep_idx = idx.repeat_interleave(keep)
        slots = (idx[:, None] * keep + torch.arange(keep)).flatten()
        out[slots] = restore(x, ev.labels, rep_idx)
        scores[slots] = score.double()
    return out, scores


def _plackett_luce_given(pl: C.PlackettLuce, given: torch.Tensor, generator) -> torch.Tensor:
    """Exact Plackett-Luce draws given each row's top items: the rest by Gumbel-argsort of the
    remaining weights (``given`` ``(k, r)``)."""
    k, r = given.shape
    n = pl.n
    u = torch.rand(k, n, generator=generator, dtype=torch.float64).clamp(min=1e-300)
    keys = pl.log_weights.to(torch.float64)[None] - torch.log(-torch.log(u))
    if r:
        keys.scatter_(1, given, (float(n) - torch.arange(r, dtype=torch.float64))[None].expand(k, r) * 1e300)
    return torch.argsort(keys, dim=1, descending=True)
