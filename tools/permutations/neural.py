"""A transformer over factorized permutation codes (Severo et al., ICLR 2026).

The network reads the digit sequence ``c = R(x)`` of length ``n`` (optionally after ``m``
conditioning tokens) and returns one categorical per digit; logits outside a digit's legal range
are ``-inf``, so every sample decodes to a valid permutation (except for the ``inline`` baseline,
whose digits all range over ``[0, n-1]``).

Two training modes:

* ``ar`` (autoregressive, causal attention): ``-log p(c) = -sum_i log p(c_i | c_<i)``; NFE = n.
* ``mlm`` (masked, order-agnostic): draw ``t ~ U{1..n}``, mask a random subset of ``t`` digits,
  loss ``(n/t) * sum_{masked} -log p(c_j | unmasked)`` (an upper bound on the NLL).

A masked model samples with any NFE = k: a partition of the digits into k blocks, each block
drawn in parallel given the earlier ones; its exact log-likelihood is
``sum_b sum_{j in block b} log p(c_j | blocks < b)``, which is what :func:`log_prob` returns.
At NFE = 1 without conditioning the masked model is a product of per-digit categoricals.

Conditioning tokens are item ids (``context_vocab``) or feature vectors (``context_dim``, mapped
to ``d_model`` by a linear layer or a one-hidden-layer MLP, ``context_encoder``). Two output heads:

* ``linear``: logits ``W h_i + b`` over the n digit values;
* ``pointer`` (AR Lehmer codes with one aligned token per item): Lehmer digit j is the index of
  item x_j among the items not yet placed, so the head replays digits ``< j`` to list the free
  items ``free_j`` in increasing order and scores ``logit[j, v] = <h_j, E[free_j[v]]> / sqrt(d)
  + b[free_j[v]]`` with a learned item table ``E`` ``(n, d)`` and bias ``b`` ``(n,)`` (the linear
  head's size), ``-inf`` outside ``[0, n-1-j]``: still one exact categorical per digit.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from cortexkit.tools.permutations import classical as C
from cortexkit.tools.permutations import representations as R

MODES = ("ar", "mlm")
PARTITIONS = ("contiguous", "random")
HEADS = ("linear", "pointer")
CONTEXT_ENCODERS = ("linear", "mlp")


@dataclass
class NetConfig:
    n: int
    representation: str
    mode: str = "mlm"
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    ff: int = 128
    dropout: float = 0.1
    context_dim: int = 0  # >0: the forward pass takes (batch, m, context_dim) conditioning tokens
    context_vocab: int = 0  # >0: conditioning tokens are int64 ids (batch, m) in [0, context_vocab)
    context_len: int = 0  # >0: learned positions for up to this many conditioning tokens
    context_aligned: bool = False  # conditioning token i is about digit i: also add it to digit i
    head: str = "linear"  # "pointer": AR Lehmer digit j scored against the still-free items
    context_encoder: str = "linear"  # feature tokens -> d_model: "linear" or "mlp" (one hidden layer)
    context_hidden: int = 0  # width of the mlp encoder's hidden layer (0: ff)
    context_prior: int = 0  # >0: item-id embeddings tied with this many prior scores per id (popularity)

    def to_dict(self) -> dict:
        return asdict(self)


class PermutationTransformer(nn.Module):
    """Transformer encoder over digits; ``forward(digits, context) -> (batch, n, n)`` log-probs.

    ``digits`` ``(batch, n)`` int64 with ``MASK = n`` at hidden places (mlm) or the plain
    digits (ar, shifted inside). Output row ``i`` is the distribution of digit ``i``.
    """

    def __init__(self, config: NetConfig):
        super().__init__()
        if config.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        R.check_representation(config.representation)
        self.config = config
        n, d = config.n, config.d_model
        self.mask_token = n
        self.bos_token = n + 1
        self.digit_embedding = nn.Embedding(n + 2, d)
        self.position_embedding = nn.Parameter(torch.randn(n, d) * 0.02)
        if config.context_dim and config.context_vocab:
            raise ValueError("conditioning tokens are either feature vectors or ids, not both")
        if config.context_encoder not in CONTEXT_ENCODERS:
            raise ValueError(f"context encoder must be one of {CONTEXT_ENCODERS}")
        if config.head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}")
        if config.head == "pointer":
            check_pointer_config(config)
        if config.context_dim and config.context_encoder == "mlp":
            hidden = config.context_hidden or config.ff
            self.context_projection = nn.Sequential(nn.Linear(config.context_dim, hidden), nn.GELU(),
                                                    nn.Linear(hidden, d))
        elif config.context_dim:
            self.context_projection = nn.Linear(config.context_dim, d)
        if config.context_vocab:
            self.context_embedding = nn.Embedding(config.context_vocab, d)
        if config.context_prior:
            if not config.context_vocab:
                raise ValueError("a popularity prior ties item-id embeddings: it needs item-id conditioning")
            # e(id) = free(id) + prior(id) @ W: ids seen rarely lean on their prior scores (set by fit)
            self.register_buffer("context_prior_scores", torch.zeros(config.context_vocab, config.context_prior))
            self.context_prior_weight = nn.Parameter(torch.randn(config.context_prior, d) * 0.02)
        if config.context_dim or config.context_vocab:
            self.context_type = nn.Parameter(torch.randn(d) * 0.02)
        if config.context_len:
            self.context_position = nn.Parameter(torch.randn(config.context_len, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, config.heads, config.ff, config.dropout,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        if config.head == "pointer":
            # replace the linear head's (n, d) weight and (n,) bias one for one: same size
            self.item_embedding = nn.Parameter(torch.randn(n, d) * 0.02)
            self.item_bias = nn.Parameter(torch.zeros(n))
        else:
            self.head = nn.Linear(d, n)
        self.register_buffer("legal", R.legal_mask(config.representation, n), persistent=False)

    def _attention_mask(self, m: int, device) -> torch.Tensor | None:
        if self.config.mode != "ar":
            return None
        n = self.config.n
        size = m + n
        mask = torch.zeros(size, size, device=device)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool, device=device), diagonal=1)
        mask[m:, m:] = mask[m:, m:].masked_fill(causal, float("-inf"))
        mask[:m, m:] = float("-inf")  # conditioning tokens do not look at digits
        return mask

    def embed_ids(self, ids: torch.Tensor) -> torch.Tensor:
        """Embeddings ``(..., d_model)`` of conditioning item ids, tied with their prior scores if any."""
        out = self.context_embedding(ids)
        if self.config.context_prior:
            out = out + self.context_prior_scores[ids] @ self.context_prior_weight
        return out

    def features(self, digits: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        """Normalised hidden states of the digit positions, ``(batch, n, d_model)``, before the head."""
        batch, n = digits.shape
        if self.config.mode == "ar":  # position i sees BOS, c_0 .. c_{i-1}
            bos = torch.full((batch, 1), self.bos_token, dtype=digits.dtype, device=digits.device)
            digits = torch.cat([bos, digits[:, :-1]], dim=1)
        h = self.digit_embedding(digits) + self.position_embedding
        m = 0
        if context is not None:
            if self.config.context_vocab:
                ctx = self.embed_ids(context)
            elif self.config.context_dim:
                ctx = self.context_projection(context)
            else:
                raise ValueError("this model takes no conditioning tokens")
            if self.config.context_aligned:  # digit i reads its own token without attention
                if ctx.shape[1] != n:
                    raise ValueError(f"aligned conditioning needs {n} tokens, got {ctx.shape[1]}")
                h = h + ctx
            ctx = ctx + self.context_type
            m = ctx.shape[1]
            if self.config.context_len:
                ctx = ctx + self.context_position[:m]
            h = torch.cat([ctx, h], dim=1)
        h = self.encoder(h, mask=self._attention_mask(m, h.device))
        return self.norm(h[:, m:])

    def forward(self, digits: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        h = self.features(digits, context)  # (batch, n, d)
        if self.config.head == "pointer":
            free = free_items(digits)  # row j depends on digits < j only, as h does
            keys = self.item_embedding[free]  # (batch, n, n, d)
            logits = (torch.einsum("bjd,bjvd->bjv", h, keys) / math.sqrt(self.config.d_model)
                      + self.item_bias[free])
        else:
            logits = self.head(h)
        logits = logits.masked_fill(~self.legal, float("-inf"))
        return torch.log_softmax(logits, dim=-1)


def check_pointer_config(config: NetConfig) -> None:
    """The pointer head needs AR Lehmer digits and one aligned conditioning token per item."""
    if config.mode != "ar" or config.representation != "lehmer":
        raise ValueError("the pointer head needs an autoregressive model on lehmer codes "
                         f"(got mode {config.mode}, representation {config.representation})")
    if not (config.context_aligned and (config.context_dim or config.context_vocab)):
        raise ValueError("the pointer head needs aligned conditioning tokens (one per item)")


def free_items(digits: torch.Tensor) -> torch.Tensor:
    """Items still free before each Lehmer digit, ``(batch, n, n)`` int64.

    ``free[b, j, v]`` is the ``v``-th smallest (relabelled) item not taken by digits ``0..j-1``
    of row ``b`` (valid for ``v < n - j``; the taken ones follow), so digit ``j = v`` decodes to
    item ``free[b, j, v]`` and ``free.gather(2, digits)`` is :func:`representations.lehmer_decode`.
    Row ``j`` reads digits ``< j`` only; illegal digit values (masks) are clamped into range.
    """
    batch, n = digits.shape
    taken = torch.zeros(batch, n, dtype=torch.bool, device=digits.device)
    items = torch.arange(n, device=digits.device)
    rows = []
    for j in range(n):
        order = (taken.long() * n + items).argsort(dim=1)  # free items first, ascending
        rows.append(order)
        pick = order.gather(1, digits[:, j:j + 1].clamp(0, n - 1 - j))
        taken = taken.scatter(1, pick, True)
    return torch.stack(rows, dim=1)


# ----------------------------------------------------------------------------------------------
# partitions, likelihood and sampling


def make_partition(n_free: int, nfe: int, kind: str = "contiguous",
                   generator: torch.Generator | None = None) -> list[torch.Tensor]:
    """Split ``n_free`` digit slots into ``nfe`` non-empty blocks (indices into the free list)."""
    if kind not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}")
    if n_free == 0:
        return []
    if not 1 <= nfe <= n_free:
        raise ValueError(f"NFE must be between 1 and the number of digits to sample ({n_free}), got {nfe}")
    order = torch.arange(n_free) if kind == "contiguous" else torch.randperm(n_free, generator=generator)
    bounds = [round(b * n_free / nfe) for b in range(nfe + 1)]
    return [order[bounds[b]:bounds[b + 1]] for b in range(nfe)]


def _blocks(net: PermutationTransformer, known: int, nfe: int | None, partition: str,
            generator: torch.Generator | None) -> list[torch.Tensor]:
    n = net.config.n
    free = torch.arange(known, n)
    if net.config.mode == "ar":
        if nfe not in (None, n - known):
            raise ValueError(f"an autoregressive model samples with NFE = number of free digits "
                             f"({n - known}); train with --mode mlm for fewer steps")
        return [free[i:i + 1] for i in range(n - known)]
    nfe = n - known if nfe is None else nfe
    return [free[b] for b in make_partition(n - known, nfe, partition, generator)]


@torch.no_grad()
def log_prob_codes(net: PermutationTransformer, code: torch.Tensor, *, nfe: int | None = None,
                   partition: str = "contiguous", known: int = 0, context: torch.Tensor | None = None,
                   generator: torch.Generator | None = None, batch_size: int = 4096) -> torch.Tensor:
    """Exact log-likelihood ``(batch,)`` of codes under the sampler with this NFE and partition.

    ``known``: the first ``known`` digits are given (conditioning prefix) and not scored.
    For a random partition pass the same ``generator`` state as :func:`sample_codes` used.
    """
    net.eval()
    n = net.config.n
    device = next(net.parameters()).device
    blocks = _blocks(net, known, nfe, partition, generator)
    out = []
    for start in range(0, len(code), batch_size):
        c = code[start:start + batch_size].to(device)
        ctx = None if context is None else context[start:start + batch_size].to(device)
        total = torch.zeros(len(c), dtype=torch.float64, device=c.device)
        if net.config.mode == "ar":
            logp = net(c, ctx)
            picked = logp.gather(2, c[:, :, None])[:, known:, 0]
            total += picked.double().sum(dim=1)
        else:
            revealed = torch.zeros(n, dtype=torch.bool, device=c.device)
            revealed[:known] = True
            for block in blocks:
                inp = torch.where(revealed, c, torch.full_like(c, net.mask_token))
                logp = net(inp, ctx)
                picked = logp[:, block].gather(2, c[:, block, None])[..., 0]
                total += picked.double().sum(dim=1)
                revealed[block] = True
        out.append(total)
    return torch.cat(out).cpu() if out else torch.zeros(0, dtype=torch.float64)


class IncrementalDecoder:
    """Autoregressive decoding one digit per step with cached keys and values per layer.

    The causal network's digit position ``i`` reads the conditioning tokens and digits ``< i``
    only, so a step feeds one new token (the previous digit, or BOS) through every layer, keeps
    its keys and values, and attends over the cache: O(n) work per digit instead of a full
    O(n^2) forward pass. The conditioning tokens (which see each other, never the digits) are
    run through the layers once per row. Exact: the log-probabilities equal those of
    :meth:`PermutationTransformer.forward` (up to float rounding).

    ``rows`` sequences decode in parallel (``context`` ``(rows, m, ...)`` or None); beam search
    reorders them with :meth:`reorder`.
    """

    def __init__(self, net: PermutationTransformer, rows: int, context: torch.Tensor | None = None,
                 capacity: int | None = None):
        if net.config.mode != "ar":
            raise ValueError("incremental decoding needs an autoregressive model")
        self.net = net
        cfg = net.config
        self.n, self.d, self.h = cfg.n, cfg.d_model, cfg.heads
        self.dh = self.d // self.h
        device = next(net.parameters()).device
        self.device = device
        self.rows = rows
        self.aligned = None
        m = 0
        ctx = None
        if context is not None:
            ctx = net.embed_ids(context) if cfg.context_vocab else net.context_projection(context)
            if cfg.context_aligned:
                self.aligned = ctx  # (rows, n, d): digit i adds its own token
            ctx = ctx + net.context_type
            m = ctx.shape[1]
            if cfg.context_len:
                ctx = ctx + net.context_position[:m]
        self.m = m
        size = m + self.n
        # caches (positions, rows, heads, head_dim): a step writes one contiguous slab. Beam
        # search (``capacity``: the most rows it will hold) reorders into a second set of
        # buffers allocated once, so no step touches fresh memory (page faults cost more than
        # the copy on one CPU core)
        self.size = size
        self.capacity = max(rows, capacity or rows)
        layers = len(net.encoder.layers)
        self._storage = [[torch.empty(size * self.capacity * self.d, device=device) for _ in range(2 * layers)]
                         for _ in range(2 if capacity else 1)]
        self._current = 0
        self._views(rows)
        self.length = 0
        if m:
            self._run(ctx)  # context tokens attend to each other only
        self.position = 0  # digits fed so far
        self.taken = torch.zeros(rows, self.n, dtype=torch.bool, device=device) if cfg.head == "pointer" else None

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        """Feed ``x`` ``(rows, t, d)`` (all visible to each other: t = 1, or the context block)."""
        t = x.shape[1]
        start, end = self.length, self.length + t
        scale = 1.0 / math.sqrt(self.dh)
        for li, layer in enumerate(self.net.encoder.layers):
            attn = layer.self_attn
            y = layer.norm1(x)
            qkv = torch.nn.functional.linear(y, attn.in_proj_weight, attn.in_proj_bias)
            q, k, v = qkv.view(self.rows, t, 3, self.h, self.dh).unbind(2)  # (rows, t, h, dh)
            self.keys[li][start:end] = k.transpose(0, 1)
            self.values[li][start:end] = v.transpose(0, 1)
            keys, values = self.keys[li][:end], self.values[li][:end]  # (L, rows, h, dh)
            if t == 1:  # one query: a weighted sum over the cache, no batched tiny matmuls
                w = torch.softmax((keys * (q[:, 0] * scale)).sum(-1), dim=0)  # (L, rows, h)
                out = (w[..., None] * values).sum(0)[:, None]  # (rows, 1, h, dh)
            else:
                out = torch.nn.functional.scaled_dot_product_attention(
                    q.transpose(1, 2), keys.permute(1, 2, 0, 3), values.permute(1, 2, 0, 3)).transpose(1, 2)
            x = x + attn.out_proj(out.reshape(self.rows, t, self.d))
            x = x + layer.linear2(layer.activation(layer.linear1(layer.norm2(x))))
        self.length = end
        return x

    def step(self, previous: torch.Tensor | None) -> torch.Tensor:
        """Log-probabilities ``(rows, n)`` of the next digit given the digit just chosen
        (``previous`` ``(rows,)`` int64; None before the first digit)."""
        net, i = self.net, self.position
        if i >= self.n:
            raise ValueError("every digit is decoded already")
        token = (torch.full((self.rows,), net.bos_token, dtype=torch.int64, device=self.device)
                 if previous is None else previous.to(self.device))
        if previous is not None and self.taken is not None:  # pointer head: mark the item taken
            free = (self.taken.long() * self.n + torch.arange(self.n, device=self.device)).argsort(dim=1)
            pick = free.gather(1, previous.clamp(0, self.n - i)[:, None].to(self.device))
            self.taken = self.taken.scatter(1, pick, True)
        x = net.digit_embedding(token) + net.position_embedding[i]
        if self.aligned is not None:
            x = x + self.aligned[:, i]
        hidden = net.norm(self._run(x[:, None])[:, 0])  # (rows, d)
        self.position = i + 1
        if net.config.head == "pointer":
            taken = self.taken
            free = (taken.long() * self.n + torch.arange(self.n, device=self.device)).argsort(dim=1)
            keys = net.item_embedding[free]  # (rows, n, d)
            logits = (torch.einsum("bd,bvd->bv", hidden, keys) / math.sqrt(self.d) + net.item_bias[free])
        else:
            logits = net.head(hidden)
        logits = logits.masked_fill(~net.legal[i], float("-inf"))
        return torch.log_softmax(logits, dim=-1)

    def _views(self, rows: int, which: int | None = None) -> list[torch.Tensor]:
        """Key and value caches ``(positions, rows, heads, head_dim)`` of buffer set ``which``
        (default: the current one becomes these views)."""
        store = self._storage[self._current if which is None else which]
        count = self.size * rows * self.d
        views = [buf[:count].view(self.size, rows, self.h, self.dh) for buf in store]
        if which is None:
            layers = len(views) // 2
            self.keys, self.values = views[:layers], views[layers:]
        return views

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows ``index`` ``(rows',)`` (beam search: the parents of the new beams)."""
        index = index.to(self.device)
        filled = self.length
        if len(index) > self.capacity:
            raise ValueError(f"reorder to {len(index)} rows; the decoder holds at most {self.capacity}")
        old = self.keys + self.values
        if len(self._storage) == 1:  # no spare buffers: fresh ones
            self._storage.append([torch.empty_like(buf) for buf in self._storage[0]])
        spare = 1 - self._current
        for src, dst in zip(old, self._views(len(index), spare)):  # only the filled positions
            torch.index_select(src[:filled], 1, index, out=dst[:filled])
        self._current = spare
        self._views(len(index))
        if self.aligned is not None:
            self.aligned = self.aligned.index_select(0, index)
        if self.taken is not None:
            self.taken = self.taken.index_select(0, index)
        self.rows = len(index)


def decode_rows(net: PermutationTransformer) -> int:
    """Rows decoded together: caches of about 1.3 M floats per layer (fastest on one CPU core)."""
    cfg = net.config
    return max(128, min(1024, 1_300_000 // ((cfg.context_len + cfg.n) * cfg.d_model)))


@torch.no_grad()
def ar_sample_codes(net: PermutationTransformer, num: int, *, prefix: torch.Tensor | None = None,
                    context: torch.Tensor | None = None, generator: torch.Generator | None = None,
                    batch_size: int = 4096) -> torch.Tensor:
    """:func:`sample_codes` of an autoregressive model by incremental decoding: ``(num, n)``.

    Draws the same uniforms in the same order as the full-forward sampler (one ``(rows, 1)``
    float64 draw per digit per chunk of ``batch_size`` rows), so a seed gives the same codes.
    """
    net.eval()
    n = net.config.n
    device = next(net.parameters()).device
    known = 0 if prefix is None else prefix.shape[-1]
    sizes = R.digit_sizes(net.config.representation, n).to(device)
    sub = decode_rows(net)
    out = []
    for start in range(0, num, batch_size):
        size = min(batch_size, num - start)
        # the uniforms of the whole chunk, digit-major: the same stream as one draw per digit
        u_all = torch.rand((n - known, size), generator=generator, dtype=torch.float64).to(device)
        for s0 in range(start, start + size, sub):  # sub-chunks keep the caches in cache memory
            rows = min(sub, start + size - s0)
            ctx = None if context is None else context[s0:s0 + rows].to(device)
            c = torch.empty(rows, n, dtype=torch.int64, device=device)
            if known:
                c[:, :known] = prefix.to(device).expand(rows, known) if prefix.dim() == 1 else prefix[s0:s0 + rows].to(device)
            dec = IncrementalDecoder(net, rows, ctx)
            previous = None
            for i in range(n):
                logp = dec.step(previous)
                if i >= known:
                    u = u_all[i - known, s0 - start:s0 - start + rows, None]
                    cdf = logp.double().exp().cumsum(dim=-1)
                    draw = (cdf < (u * cdf[:, -1:])).sum(dim=-1)
                    c[:, i] = torch.minimum(draw, sizes[i] - 1)
                previous = c[:, i]
            out.append(c.cpu())
    return torch.cat(out) if out else torch.zeros(0, n, dtype=torch.int64)


@torch.no_grad()
def ar_beam_search_codes(net: PermutationTransformer, num: int, *, beam_width: int = 1, keep: int = 1,
                         prefix: torch.Tensor | None = None, context: torch.Tensor | None = None,
                         batch_size: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`beam_search_codes` of an autoregressive model by incremental decoding."""
    net.eval()
    n = net.config.n
    device = next(net.parameters()).device
    known = 0 if prefix is None else prefix.shape[-1]
    rows_per_chunk = max(1, min(batch_size, decode_rows(net)) // beam_width)
    codes, scores = [], []
    for start in range(0, num, rows_per_chunk):
        size = min(rows_per_chunk, num - start)
        ctx = None if context is None else context[start:start + size].to(device)
        c = torch.zeros(size, 1, n, dtype=torch.int64, device=device)
        if known:
            c[:, 0, :known] = (prefix.to(device).expand(size, known) if prefix.dim() == 1
                               else prefix[start:start + size].to(device))
        dec = IncrementalDecoder(net, size, ctx, capacity=size * beam_width)
        score = torch.zeros(size, 1, dtype=torch.float64, device=device)
        previous = None
        for i in range(n):
            width = c.shape[1]
            logp = dec.step(previous).double().view(size, width, n)
            if i < known:
                previous = c[:, :, i].flatten()
                continue
            joint = (score[:, :, None] + logp).flatten(1)  # (size, width * n)
            last = i == n - 1
            # best first at the end; before, beams in parent order (the caches are read in order)
            score, flat = joint.topk(min(beam_width, joint.shape[1]), dim=1, sorted=last)
            if not last:
                flat, order = flat.sort(dim=1)
                score = score.gather(1, order)
            parent = torch.div(flat, n, rounding_mode="floor")
            c = c.gather(1, parent[..., None].expand(*parent.shape, n))
            c[:, :, i] = flat % n
            if last:  # nothing reads the caches again
                break
            rows = (torch.arange(size, device=device)[:, None] * width + parent).flatten()
            dec.reorder(rows)
            previous = c[:, :, i].flatten()
        if c.shape[1] < keep:
            raise ValueError(f"only {c.shape[1]} codes are reachable, cannot keep {keep}")
        codes.append(c[:, :keep].cpu())
        scores.append(score[:, :keep].cpu())
    codes, scores = torch.cat(codes), torch.cat(scores)
    if not torch.isfinite(scores).all():
        raise ValueError(f"fewer than {keep} codes have positive probability; keep fewer")
    return codes, scores


@torch.no_grad()
def sample_codes(net: PermutationTransformer, num: int, *, nfe: int | None = None,
                 partition: str = "contiguous", prefix: torch.Tensor | None = None,
                 context: torch.Tensor | None = None, generator: torch.Generator | None = None,
                 batch_size: int = 4096, incremental: bool = True) -> torch.Tensor:
    """Draw ``num`` codes ``(num, n)``; ``prefix`` ``(r,)`` or ``(num, r)`` fixes the first digits.
    Autoregressive models decode incrementally (:class:`IncrementalDecoder`) unless
    ``incremental`` is False (one full forward pass per digit, the reference)."""
    net.eval()
    n = net.config.n
    device = next(net.parameters()).device
    known = 0 if prefix is None else prefix.shape[-1]
    blocks = _blocks(net, known, nfe, partition, generator)
    if net.config.mode == "ar" and incremental:
        return ar_sample_codes(net, num, prefix=prefix, context=context, generator=generator,
                               batch_size=batch_size)
    out = []
    for start in range(0, num, batch_size):
        size = min(batch_size, num - start)
        c = torch.full((size, n), net.mask_token, dtype=torch.int64, device=device)
        if known:
            c[:, :known] = prefix.to(device).expand(size, known) if prefix.dim() == 1 else prefix[start:start + size].to(device)
        ctx = None if context is None else context[start:start + size].to(device)
        for block in blocks:
            inp = c
            if net.config.mode == "ar":  # masks are never read by a causal model before use
                inp = c.clamp(max=n - 1)
            logp = net(inp, ctx)[:, block]  # (size, |block|, n)
            u = torch.rand(logp.shape[:2], generator=generator, dtype=torch.float64).to(device)
            cdf = logp.double().exp().cumsum(dim=-1)
            draw = (cdf < (u * cdf[..., -1])[..., None]).sum(dim=-1)
            sizes = R.digit_sizes(net.config.representation, n)[block].to(device)
            c[:, block] = torch.minimum(draw.to(device), sizes - 1)
        out.append(c.cpu())
    return torch.cat(out)


@torch.no_grad()
def beam_search_codes(net: PermutationTransformer, num: int, *, beam_width: int = 1, keep: int = 1,
                      nfe: int | None = None, partition: str = "contiguous",
                      prefix: torch.Tensor | None = None, context: torch.Tensor | None = None,
                      generator: torch.Generator | None = None, batch_size: int = 4096,
                      incremental: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Most likely codes of the sampler with this NFE and partition, by beam search over blocks.

    ``num`` rows (one per row of ``context``/``prefix`` when given, else copies of the same
    search); each keeps ``beam_width`` partial codes, extended block by block: the exact top
    ``beam_width`` joint values of the block's (independent) digits per beam, then the best
    ``beam_width`` over all beams. ``beam_width = 1`` is greedy decoding (per-block argmax); a
    width at least the number of codes is exact MAP. For an autoregressive model (or a masked
    model at NFE = n) the blocks are single digits, the usual beam search; for NFE = 1 without
    conditioning the model is a product and any width gives the exact top ``beam_width``.
    Returns ``(codes (num, keep, n), log_prob (num, keep) float64)``, best first; ``log_prob``
    is the exact log-likelihood of the free digits under that sampler (as :func:`log_prob_codes`
    with ``known`` = prefix length). Illegal values have ``-inf`` log-probability and are never
    kept ahead of a legal one.
    """
    if beam_width < 1:
        raise ValueError(f"the beam width must be at least 1, got {beam_width}")
    if not 1 <= keep <= beam_width:
        raise ValueError(f"can keep between 1 and the beam width ({beam_width}) codes per row, got {keep}")
    net.eval()
    n = net.config.n
    device = next(net.parameters()).device
    known = 0 if prefix is None else prefix.shape[-1]
    blocks = _blocks(net, known, nfe, partition, generator)
    if net.config.mode == "ar" and incremental:
        return ar_beam_search_codes(net, num, beam_width=beam_width, keep=keep, prefix=prefix,
                                    context=context, batch_size=batch_size)
    rows_per_chunk = max(1, batch_size // beam_width)
    codes, scores = [], []
    for start in range(0, num, rows_per_chunk):
        size = min(rows_per_chunk, num - start)
        c = torch.full((size, 1, n), net.mask_token, dtype=torch.int64, device=device)
        if known:
            c[:, 0, :known] = (prefix.to(device).expand(size, known) if prefix.dim() == 1
                               else prefix[start:start + size].to(device))
        ctx = None if context is None else context[start:start + size].to(device)
        score = torch.zeros(size, 1, dtype=torch.float64, device=device)
        for block in blocks:
            width = c.shape[1]
            inp = c.flatten(0, 1)
            if net.config.mode == "ar":  # masks are never read by a causal model before use
                inp = inp.clamp(max=n - 1)
            beam_ctx = None if ctx is None else ctx.repeat_interleave(width, dim=0)
            logp = net(inp, beam_ctx)[:, block].view(size, width, len(block), n)
            cand, values = C.top_assignments(score, logp, beam_width)  # (size, width, k), (.., k, b)
            k = cand.shape[-1]
            score, flat = cand.flatten(1).topk(min(beam_width, width * k), dim=1)
            parent = torch.div(flat, k, rounding_mode="floor")
            chosen = values.flatten(1, 2).gather(1, flat[..., None].expand(*flat.shape, len(block)))
            c = c.gather(1, parent[..., None].expand(*parent.shape, n)).clone()
            c[:, :, block.to(device)] = chosen
        if c.shape[1] < keep:
            raise ValueError(f"only {c.shape[1]} codes are reachable, cannot keep {keep}")
        codes.append(c[:, :keep].cpu())
        scores.append(score[:, :keep].cpu())
    codes, scores = torch.cat(codes), torch.cat(scores)
    if not torch.isfinite(scores).all():
        raise ValueError(f"fewer than {keep} codes have positive probability; keep fewer")
    return codes, scores


def first_digit_table(net: PermutationTransformer) -> torch.Tensor:
    """The 1-NFE unconditional product table ``(n, n)`` of a masked model (all digits masked)."""
    net.eval()
    with torch.no_grad():
        device = next(net.parameters()).device
        masked = torch.full((1, net.config.n), net.mask_token, dtype=torch.int64, device=device)
        return net(masked)[0].double().cpu()


# ----------------------------------------------------------------------------------------------
# training


@dataclass
class TrainConfig:
    epochs: int = 100
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 1e-2
    val_fraction: float = 0.1
    patience: int = 30
    val_nfe: int | None = None  # masked models: keep the epoch best at this NFE (default n)


def training_loss(net: PermutationTransformer, code: torch.Tensor, context: torch.Tensor | None = None,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Mean loss in nats per permutation: NLL (ar) or the n/t-weighted masked bound (mlm)."""
    n = net.config.n
    if net.config.mode == "ar":
        logp = net(code, context)
        return -logp.gather(2, code[:, :, None]).sum(dim=(1, 2)).mean()
    batch = code.shape[0]
    t = torch.randint(1, n + 1, (batch,), generator=generator).to(code.device)
    scores = torch.rand(batch, n, generator=generator).to(code.device)
    ranks = scores.argsort(dim=1).argsort(dim=1)
    masked = ranks < t[:, None]
    inp = torch.where(masked, torch.full_like(code, net.mask_token), code)
    logp = net(inp, context).gather(2, code[:, :, None])[..., 0]
    nll = -(logp * masked).sum(dim=1)
    return (nll * n / t).mean()


def held_out_nll(net: PermutationTransformer, code: torch.Tensor, context=None, nfe: int | None = None) -> float:
    """Exact NLL (nats/permutation) of the contiguous sampler with ``nfe`` steps (default n)."""
    if net.config.mode == "ar":
        nfe = None
    return float(-log_prob_codes(net, code, context=context, nfe=nfe).mean())


def validation_split(m: int, val_fraction: float, generator: torch.Generator | None = None,
                     groups: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(validation rows, training rows) of ``m`` rows (none held out below 20 rows).

    Without ``groups``: a random ``val_fraction`` of the rows. With ``groups`` ``(m,)`` (say the
    user of each row): a random ``val_fraction`` of the *groups*, all of their rows held out, so
    the validation rows come from groups the training never sees.
    """
    if groups is None:
        n_val = int(round(m * val_fraction)) if m >= 20 else 0
        perm = torch.randperm(m, generator=generator)
        return perm[:n_val], perm[n_val:]
    groups = torch.as_tensor(groups)
    if groups.shape != (m,):
        raise ValueError(f"groups must have one entry per row ({m}), got shape {tuple(groups.shape)}")
    _, inverse = torch.unique(groups, return_inverse=True)
    count = int(inverse.max()) + 1 if m else 0
    n_val = int(round(count * val_fraction)) if m >= 20 and count >= 2 else 0
    n_val = min(n_val, count - 1) if count >= 2 else 0
    held = torch.zeros(count, dtype=torch.bool)
    held[torch.randperm(count, generator=generator)[:n_val]] = True
    mask = held[inverse]
    return mask.nonzero()[:, 0], (~mask).nonzero()[:, 0]


def train(net: PermutationTransformer, code: torch.Tensor, config: TrainConfig, *,
          context: torch.Tensor | None = None, generator: torch.Generator | None = None,
          progress=None, log=None, groups: torch.Tensor | None = None) -> dict:
    """Adam(W) on the mode's loss; keeps the state with the best validation NLL.

    ``code`` ``(m, n)`` training codes; ``context`` ``(m, k, d)`` or None.
    Returns a history dict (``train_loss``, ``val_nll`` per epoch, ``best_epoch``).
    """
    m = code.shape[0]
    val_idx, train_idx = validation_split(m, config.val_fraction, generator, groups)
    n_val = len(val_idx)
    opt = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = max(1, math.ceil(len(train_idx) / config.batch_size))
    total_steps = config.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config.lr, total_steps=total_steps,
                                                pct_start=0.1, anneal_strategy="cos")
    history = {"train_loss": [], "val_nll": [], "best_epoch": None, "val_rows": n_val}
    best, best_state, since = math.inf, None, 0
    epochs = range(config.epochs) if progress is None else progress(range(config.epochs))
    for epoch in epochs:
        net.train()
        order = train_idx[torch.randperm(len(train_idx), generator=generator)]
        running = 0.0
        for s in range(steps_per_epoch):
            idx = order[s * config.batch_size:(s + 1) * config.batch_size]
            ctx = None if context is None else context[idx]
            loss = training_loss(net, code[idx], ctx, generator)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
            running += float(loss.detach()) * len(idx)
        history["train_loss"].append(running / max(1, len(train_idx)))
        if n_val:
            val_ctx = None if context is None else context[val_idx]
            val = held_out_nll(net, code[val_idx], val_ctx, config.val_nfe)
            history["val_nll"].append(val)
            if val < best - 1e-6:
                best, since = val, 0
                best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
                history["best_epoch"] = epoch
            else:
                since += 1
            if log is not None:
                log(f"epoch {epoch + 1}: train {history['train_loss'][-1]:.4f} val NLL {val:.4f}")
            if since >= config.patience:
                break
        elif log is not None:
            log(f"epoch {epoch + 1}: train {history['train_loss'][-1]:.4f}")
    if best_state is not None:
        net.load_state_dict(best_state)
    return history
