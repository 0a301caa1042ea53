"""Factorized codes of permutations: inline, Lehmer, Fisher-Yates and insertion vectors.

Conventions (all 0-based, all batched over the leading dimension):

* An **ordering** ``x`` of shape ``(batch, n)`` lists the item at each position, most preferred
  first; a **ranking** is its inverse (the position of each item).
* ``inline``: the ordering itself, every digit in ``[0, n-1]`` (baseline only: not a bijection
  on digit vectors, most digit vectors are not permutations).
* ``lehmer`` (right-hand Lehmer code): ``L_i = #{j > i : y_j < y_i}``, range ``[0, n-1-i]``,
  where ``y = ref^{-1}[x]`` is the ordering relabelled by the reference order. ``sum(L)`` is the
  Kendall distance between ``x`` and the reference.
* ``fisher-yates``: starting from the identity ``a``, for ``i = 0..n-2`` swap ``a[i]`` with
  ``a[i + J_i]``; ``J_i`` in ``[0, n-1-i]``. With every ``J_i >= 1`` (Sattolo) exactly the
  n-cycles come out. No reference (relabelling would break the cycle structure).
* ``insertion`` vector relative to ``ref``: build the ordering by inserting ``ref[k]`` at slot
  ``V_k`` in ``[0, k]`` of the growing list, for ``k = 0..n-1``. Identity (Severo et al.,
  Thm. 4.3): ``V(x)_k = k - L'(y^{-1})_k`` with ``L'`` the left Lehmer code.

Encode and decode cost ``O(n log n)`` per permutation (a Fenwick tree per row, all rows advanced
together), or ``O(n)`` for Fisher-Yates; no factorial-rank integers, so any ``n`` works.
"""

from __future__ import annotations

import torch

REPRESENTATIONS = ("inline", "lehmer", "fisher-yates", "insertion")
#: representations whose digits are taken relative to a reference order
USES_REFERENCE = ("lehmer", "insertion")


def check_representation(name: str) -> str:
    if name not in REPRESENTATIONS:
        raise ValueError(f"unknown representation {name!r}; choose one of {', '.join(REPRESENTATIONS)}")
    return name


def digit_sizes(representation: str, n: int) -> torch.Tensor:
    """Number of legal values of each digit, shape ``(n,)`` int64."""
    check_representation(representation)
    i = torch.arange(n, dtype=torch.int64)
    if representation == "inline":
        return torch.full((n,), n, dtype=torch.int64)
    if representation in ("lehmer", "fisher-yates"):
        return n - i
    return i + 1


def legal_mask(representation: str, n: int) -> torch.Tensor:
    """Boolean ``(n, n)``: ``mask[i, v]`` is True where value ``v`` is legal at digit ``i``."""
    sizes = digit_sizes(representation, n)
    return torch.arange(n)[None, :] < sizes[:, None]


# ----------------------------------------------------------------------------------------------
# Batched Fenwick (binary indexed) trees: one tree per row, stored flat, 1-based, with a spare
# slot n+1 that absorbs the updates that run past the end (so every row moves in lock-step).


class _Fenwick:
    def __init__(self, batch: int, n: int, full: bool, device=None):
        self.n = n
        self.width = n + 2
        self.offsets = torch.arange(batch, device=device, dtype=torch.int64) * self.width
        idx = torch.arange(self.width, device=device, dtype=torch.int64)
        if full:  # every value present once: tree[i] = lowbit(i)
            row = idx & -idx
            row[0] = 0
            row[n + 1] = 0
        else:
            row = torch.zeros(self.width, dtype=torch.int64, device=device)
        self.tree = row.repeat(batch)
        self.levels = max(1, int(n).bit_length())
        self.top = 1 << (self.levels - 1)

    def add(self, value: torch.Tensor, delta: int) -> None:
        """Add ``delta`` at 0-based ``value`` (shape ``(batch,)``) in each row."""
        i = value + 1
        d = torch.full_like(i, delta)
        for _ in range(self.levels + 1):
            slot = torch.where(i <= self.n, i, torch.full_like(i, self.n + 1))
            self.tree.index_add_(0, self.offsets + slot, d)
            i = i + (i & -i)

    def count_below(self, value: torch.Tensor) -> torch.Tensor:
        """Number of present values ``< value`` in each row, shape ``(batch,)``."""
        i = value.clone()
        total = torch.zeros_like(i)
        for _ in range(self.levels + 1):
            total += self.tree[self.offsets + i]  # slot 0 holds 0, so finished rows add nothing
            i = i - (i & -i)
        return total

    def kth(self, k: torch.Tensor) -> torch.Tensor:
        """0-based value of the ``k``-th (0-based) smallest present value in each row."""
        pos = torch.zeros_like(k)
        remaining = k + 1
        step = self.top
        while step > 0:
            nxt = pos + step
            readable = torch.where(nxt <= self.n, nxt, torch.zeros_like(nxt))
            here = self.tree[self.offsets + readable]
            ok = (nxt <= self.n) & (here < remaining)
            remaining = remaining - torch.where(ok, here, torch.zeros_like(here))
            pos = torch.where(ok, nxt, pos)
            step >>= 1
        return pos


def _as_codes(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"expected a (batch, n) tensor of digits, got shape {tuple(x.shape)}")
    return x.to(torch.int64)


def invert(x: torch.Tensor) -> torch.Tensor:
    """Inverse permutations (ordering <-> ranking), shape ``(batch, n)``."""
    x = _as_codes(x)
    inv = torch.empty_like(x)
    inv.scatter_(1, x, torch.arange(x.shape[1], device=x.device).expand_as(x).contiguous())
    return inv


def compose_reference(x: torch.Tensor, reference: torch.Tensor | None) -> torch.Tensor:
    """Relabel orderings by a reference order: ``y = ref^{-1}[x]`` (identity if None)."""
    if reference is None:
        return _as_codes(x)
    ref_inv = invert(reference.view(1, -1).to(torch.int64))[0]
    return ref_inv[_as_codes(x)]


def lehmer_encode(x: torch.Tensor) -> torch.Tensor:
    """Right-hand Lehmer codes ``L_i = #{j>i : x_j < x_i}`` of orderings ``(batch, n)``."""
    x = _as_codes(x)
    batch, n = x.shape
    out = torch.empty_like(x)
    tree = _Fenwick(batch, n, full=False, device=x.device)
    for i in range(n - 1, -1, -1):
        out[:, i] = tree.count_below(x[:, i])
        tree.add(x[:, i], 1)
    return out


def lehmer_decode(code: torch.Tensor) -> torch.Tensor:
    """Orderings from right-hand Lehmer codes: ``x_i`` = the ``L_i``-th smallest unused item."""
    code = _as_codes(code)
    batch, n = code.shape
    out = torch.empty_like(code)
    tree = _Fenwick(batch, n, full=True, device=code.device)
    for i in range(n):
        out[:, i] = tree.kth(code[:, i])
        tree.add(out[:, i], -1)
    return out


def left_lehmer_encode(x: torch.Tensor) -> torch.Tensor:
    """Left-hand Lehmer codes ``L'_i = #{j<i : x_j > x_i}`` (range ``[0, i]``)."""
    x = _as_codes(x)
    batch, n = x.shape
    out = torch.empty_like(x)
    tree = _Fenwick(batch, n, full=False, device=x.device)
    for i in range(n):
        out[:, i] = i - tree.count_below(x[:, i])
        tree.add(x[:, i], 1)
    return out


def insertion_encode(x: torch.Tensor, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Insertion vectors ``V_k`` (range ``[0, k]``) of orderings relative to ``reference``."""
    y = compose_reference(x, reference)
    batch, n = y.shape
    pos = invert(y)  # pos[k] = position of reference item k
    out = torch.empty_like(y)
    tree = _Fenwick(batch, n, full=False, device=y.device)
    for k in range(n):  # V_k = #{m<k : pos_m < pos_k} = k - L'(pos)_k
        out[:, k] = tree.count_below(pos[:, k])
        tree.add(pos[:, k], 1)
    return out


def insertion_decode(code: torch.Tensor, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Orderings from insertion vectors: the final position of reference item k is the
    ``V_k``-th smallest position not taken by reference items ``k+1..n-1``."""
    code = _as_codes(code)
    batch, n = code.shape
    pos = torch.empty_like(code)
    tree = _Fenwick(batch, n, full=True, device=code.device)
    for k in range(n - 1, -1, -1):
        pos[:, k] = tree.kth(code[:, k])
        tree.add(pos[:, k], -1)
    y = invert(pos)
    if reference is None:
        return y
    return reference.to(torch.int64).to(y.device)[y]


def fisher_yates_encode(x: torch.Tensor) -> torch.Tensor:
    """Fisher-Yates draws ``J`` that turn the identity into ``x`` (replays the swaps, O(n))."""
    x = _as_codes(x)
    batch, n = x.shape
    rows = torch.arange(batch, device=x.device)
    arr = torch.arange(n, device=x.device).repeat(batch, 1)  # current array
    where = arr.clone()  # where[v] = index of value v in arr
    out = torch.zeros_like(x)
    for i in range(n - 1):
        target = x[:, i]
        j = where[rows, target]
        out[:, i] = j - i
        displaced = arr[:, i].clone()
        arr[rows, j] = displaced
        arr[:, i] = target
        where[rows, displaced] = j
        where[rows, target] = i
    return out


def fisher_yates_decode(code: torch.Tensor) -> torch.Tensor:
    """Orderings from Fisher-Yates draws: swap ``a[i]`` with ``a[i + J_i]`` for ``i = 0..n-2``."""
    code = _as_codes(code)
    batch, n = code.shape
    rows = torch.arange(batch, device=code.device)
    arr = torch.arange(n, device=code.device).repeat(batch, 1)
    for i in range(n - 1):
        j = i + code[:, i]
        a_i = arr[:, i].clone()
        arr[:, i] = arr[rows, j]
        arr[rows, j] = a_i
    return arr


#: rows handled per pass: keeps each pass's Fenwick trees in cache (about 2x faster at n = 50)
CHUNK = 8192


def _chunked(fn, x: torch.Tensor, *args) -> torch.Tensor:
    if x.dim() == 2 and x.shape[0] > CHUNK:
        return torch.cat([fn(x[i:i + CHUNK], *args) for i in range(0, x.shape[0], CHUNK)])
    return fn(x, *args)


def encode(x: torch.Tensor, representation: str, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Digits ``(batch, n)`` of orderings ``x`` in ``representation`` (see module docstring)."""
    check_representation(representation)
    return _chunked(_encode, x, representation, reference)


def decode(code: torch.Tensor, representation: str, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Orderings ``(batch, n)`` from digits; inverse of :func:`encode` on legal digits."""
    check_representation(representation)
    return _chunked(_decode, code, representation, reference)


def _encode(x: torch.Tensor, representation: str, reference: torch.Tensor | None) -> torch.Tensor:
    if representation == "inline":
        return _as_codes(x).clone()
    if representation == "lehmer":
        return lehmer_encode(compose_reference(x, reference))
    if representation == "fisher-yates":
        return fisher_yates_encode(x)
    return insertion_encode(x, reference)


def _decode(code: torch.Tensor, representation: str, reference: torch.Tensor | None) -> torch.Tensor:
    if representation == "inline":
        return _as_codes(code).clone()
    if representation == "lehmer":
        y = lehmer_decode(code)
        return y if reference is None else reference.to(torch.int64).to(y.device)[y]
    if representation == "fisher-yates":
        return fisher_yates_decode(code)
    return insertion_decode(code, reference)


# ----------------------------------------------------------------------------------------------
# Checks and statistics


def is_permutation(x: torch.Tensor) -> torch.Tensor:
    """Boolean ``(batch,)``: row is a permutation of ``0..n-1``."""
    x = _as_codes(x)
    n = x.shape[1]
    inside = ((x >= 0) & (x < n)).all(dim=1)
    clipped = x.clamp(0, max(n - 1, 0))
    seen = torch.zeros_like(x)
    seen.scatter_(1, clipped, 1)
    return inside & (seen.sum(dim=1) == n)


def codes_are_legal(code: torch.Tensor, representation: str) -> torch.Tensor:
    """Boolean ``(batch,)``: every digit inside its legal range."""
    sizes = digit_sizes(representation, code.shape[1]).to(code.device)
    return ((code >= 0) & (code < sizes)).all(dim=1)


def is_cycle(x: torch.Tensor) -> torch.Tensor:
    """Boolean ``(batch,)``: the permutation ``i -> x_i`` is a single n-cycle (valid rows only)."""
    x = _as_codes(x)
    batch, n = x.shape
    rows = torch.arange(batch, device=x.device)
    cur = torch.zeros(batch, dtype=torch.int64, device=x.device)
    back_early = torch.zeros(batch, dtype=torch.bool, device=x.device)
    safe = x.clamp(0, max(n - 1, 0))
    for step in range(1, n):
        cur = safe[rows, cur]
        back_early |= cur == 0
    cur = safe[rows, cur]
    return is_permutation(x) & ~back_early & (cur == 0)


def kendall_distance(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Kendall tau distance (number of discordant pairs) between orderings, ``(batch,)``.
    ``y`` may be ``(n,)`` (one reference for all rows) or ``(batch, n)``."""
    x = _as_codes(x)
    if y.dim() == 1:
        return lehmer_encode(compose_reference(x, y)).sum(dim=1)
    y_inv = invert(y)
    relabelled = torch.gather(y_inv, 1, x)
    return lehmer_encode(relabelled).sum(dim=1)


def borda_reference(x: torch.Tensor) -> torch.Tensor:
    """Borda order of orderings ``(batch, n)``: items sorted by mean position (ties by label)."""
    ranks = invert(x).to(torch.float64).mean(dim=0)
    n = ranks.shape[0]
    key = ranks * (n + 1) + torch.arange(n, dtype=torch.float64) / (n + 1)
    return torch.argsort(key)
