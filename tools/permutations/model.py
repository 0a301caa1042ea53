"""One interface over every model kind: fit, log-likelihood, sampling, (de)serialisation.

Kinds: ``product`` (free per-digit categoricals, the 1-NFE mode), ``rim`` (product on insertion
vectors), ``mallows``, ``gmallows``, ``plackett-luce``, and the neural ``ar`` / ``mlm``.
All methods take and return **orderings** ``(batch, n)`` (item at each position).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import torch

from cortexkit.tools.permutations import classical as C
from cortexkit.tools.permutations import neural as N
from cortexkit.tools.permutations import representations as R

CLASSICAL = ("product", "rim", "mallows", "gmallows", "plackett-luce")
NEURAL = N.MODES
MODELS = CLASSICAL + NEURAL


@dataclass
class PermutationModel:
    kind: str
    n: int
    representation: str
    reference: torch.Tensor
    product: C.ProductModel | None = None
    plackett_luce: C.PlackettLuce | None = None
    net: N.PermutationTransformer | None = None
    theta: torch.Tensor | None = None
    info: dict = field(default_factory=dict)
    #: conditional models: outside item ids (e.g. movie ids) known to the model, ``(V,)``;
    #: each row's ``items`` ``(n,)`` become conditioning tokens (unknown ids share one token)
    vocabulary: torch.Tensor | None = None

    @property
    def context_shape(self) -> tuple[int, int] | None:
        """``(m, d)`` of the feature tokens a conditional model takes per row (None: takes none)."""
        if self.net is None or not self.net.config.context_dim:
            return None
        return self.net.config.context_len, self.net.config.context_dim

    def conditioning(self, items: torch.Tensor | None = None,
                     context: torch.Tensor | None = None) -> torch.Tensor | None:
        """What the network conditions on: token ids of ``items`` or feature tokens ``context``
        ``(batch, m, d)`` float; None for unconditional models."""
        if self.context_shape is None:
            if context is not None:
                raise ValueError("this model takes no feature context (fit it with --condition features)")
            return self.context_ids(items)
        if context is None:
            raise ValueError("this model is conditioned on feature tokens: it needs a context per row")
        m, d = self.context_shape
        if context.dim() != 3 or tuple(context.shape[1:]) != (m, d):
            raise ValueError(f"the model takes context rows of shape ({m}, {d}), got {tuple(context.shape[1:])}")
        return context.to(torch.float32)

    def context_ids(self, items: torch.Tensor | None) -> torch.Tensor | None:
        """Token ids ``(batch, n)`` of per-row outside item ids ``(batch, n)`` (None: no context)."""
        if self.vocabulary is None:
            return None
        if items is None:
            raise ValueError("this model is conditional: it needs the items of each row "
                             "(a permutations artifact with an 'items' tensor, or a rating table)")
        vocab = self.vocabulary.to(torch.int64)
        pos = torch.searchsorted(vocab, items.to(torch.int64)).clamp(max=len(vocab) - 1)
        known = vocab[pos] == items
        return torch.where(known, pos, torch.full_like(pos, len(vocab)))

    # ------------------------------------------------------------------------------------------
    @property
    def default_nfe(self) -> int:
        """Forward passes of the default sampler: 1 for products, n for AR and masked models."""
        if self.net is not None:
            return self.n
        return 1

    def prefix_codes(self, given: torch.Tensor) -> torch.Tensor:
        """Digits fixed by a conditioning prefix ``given`` ``(r,)`` (item indices).

        For ``lehmer``, ``fisher-yates`` and ``inline`` codes (and Plackett-Luce) ``given`` is the
        top of the ordering (items at positions 0..r-1). For ``insertion`` codes it is the
        relative order of the first r reference items, which fixes digits V_0..V_{r-1}.
        """
        r = given.shape[0]
        rest_pool = [i for i in range(self.n) if i not in set(given.tolist())]
        if self.representation == "insertion":
            first = set(self.reference[:r].tolist())
            if set(given.tolist()) != first:
                raise ValueError("an insertion-code model conditions on a partial ranking of the first "
                                 f"{r} reference items {sorted(first)}; got items {sorted(given.tolist())} "
                                 "(fit with --reference to put the observed items first, or use a "
                                 "lehmer/fisher-yates model for top-r prefixes)")
        full = torch.cat([given, torch.tensor(rest_pool, dtype=torch.int64)])[None]
        return R.encode(full, self.representation, self.reference)[0, :r]

    def _check_given(self, given: torch.Tensor | None) -> None:
        if given is None:
            return
        g = given.tolist()
        if len(set(g)) != len(g) or any(not 0 <= v < self.n for v in g):
            raise ValueError(f"the conditioning prefix {g} must list distinct items in 0..{self.n - 1}")
        if len(g) > self.n:
            raise ValueError(f"the conditioning prefix has {len(g)} items, the model has n = {self.n}")

    # ------------------------------------------------------------------------------------------
    def log_prob(self, x: torch.Tensor, *, nfe: int | None = None, partition: str = "contiguous",
                 generator: torch.Generator | None = None, known: int = 0,
                 items: torch.Tensor | None = None, context: torch.Tensor | None = None) -> torch.Tensor:
        """Exact log-likelihood ``(batch,)`` of orderings under the sampler with this NFE and
        partition (neural) or under the model (classical). ``known``: the first digits are a
        given prefix and are not scored (a conditional likelihood)."""
        if self.plackett_luce is not None:
            s = self.plackett_luce.log_weights.double()[x]
            tail = torch.logcumsumexp(s.flip(1), dim=1).flip(1)
            return (s - tail)[:, known:].sum(dim=1)
        code = R.encode(x, self.representation, self.reference)
        if self.product is not None:
            table = self.product.log_probs.double()
            return table.gather(1, code.t()).t()[:, known:].sum(dim=1)
        return N.log_prob_codes(self.net, code, nfe=nfe, partition=partition, known=known,
                                generator=generator, context=self.conditioning(items, context))

    def sample(self, num: int, *, nfe: int | None = None, partition: str = "contiguous",
               given: torch.Tensor | None = None, generator: torch.Generator | None = None,
               batch_size: int = 65536, items: torch.Tensor | None = None,
               context: torch.Tensor | None = None) -> torch.Tensor:
        """``num`` orderings ``(num, n)``; ``given`` ``(r,)`` conditions on a prefix (see
        :meth:`prefix_codes`)."""
        self._check_given(given)
        if self.plackett_luce is not None:
            if given is None or len(given) == 0:
                return self.plackett_luce.sample(num, generator)
            rest = torch.tensor([i for i in range(self.n) if i not in set(given.tolist())], dtype=torch.int64)
            sub = C.PlackettLuce(self.plackett_luce.log_weights[rest])
            tail = rest[sub.sample(num, generator)]
            return torch.cat([given.expand(num, -1), tail], dim=1)
        prefix = None if given is None or len(given) == 0 else self.prefix_codes(given)
        if self.product is not None:
            if nfe not in (None, 1):
                raise ValueError(f"a {self.kind} model is a product of digits: it samples with NFE = 1")
            code = self.product.sample_codes(num, generator)
            if prefix is not None:
                code[:, : len(prefix)] = prefix
            return R.decode(code, self.representation, self.reference)
        code = N.sample_codes(self.net, num, nfe=nfe, partition=partition, prefix=prefix,
                              generator=generator, batch_size=min(batch_size, 4096),
                              context=self.conditioning(items, context))
        return R.decode(code, self.representation, self.reference)

    def best(self, *, beam_width: int = 1, keep: int = 1, nfe: int | None = None,
             partition: str = "contiguous", given: torch.Tensor | None = None,
             generator: torch.Generator | None = None, items: torch.Tensor | None = None,
             batch_size: int = 4096, context: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The most likely orderings (MAP-style decoding) with their exact log-likelihoods.

        One search, or one per row of ``items`` or ``context`` (conditional models); each keeps the ``keep``
        best of its final beam. Neural models: beam search over the sampler's blocks with
        ``beam_width`` (1 = greedy, per-block argmax; see :func:`neural.beam_search_codes`).
        Product models (product, rim, mallows, gmallows): the exact top ``keep`` whatever the
        width (the mode is the per-digit argmax; for Mallows the centre). Plackett-Luce: beam
        search over positions, whose width-1 answer (items sorted by weight) is the exact mode.
        Returns orderings ``(rows * keep, n)`` and log-likelihoods ``(rows * keep,)`` float64,
        equal to :meth:`log_prob` with the same ``nfe``, ``partition`` (generator state) and
        ``known = len(given)``.
        """
        if beam_width < 1:
            raise ValueError(f"the beam width must be at least 1, got {beam_width}")
        if not 1 <= keep <= beam_width:
            raise ValueError(f"can keep between 1 and the beam width ({beam_width}) permutations, got {keep}")
        self._check_given(given)
        if given is not None and len(given) == 0:
            given = None
        if self.plackett_luce is not None:
            return C.plackett_luce_beam(self.plackett_luce.log_weights, beam_width, keep, given)
        prefix = None if given is None else self.prefix_codes(given)
        if self.product is not None:
            if nfe not in (None, 1):
                raise ValueError(f"a {self.kind} model is a product of digits: it decodes with NFE = 1")
            code, score = self.product.best_codes(keep, prefix)
            return R.decode(code, self.representation, self.reference), score
        context = self.conditioning(items, context)
        rows = 1 if context is None else len(context)
        code, score = N.beam_search_codes(self.net, rows, beam_width=beam_width, keep=keep, nfe=nfe,
                                          partition=partition, prefix=prefix, context=context,
                                          generator=generator, batch_size=batch_size)
        return R.decode(code.flatten(0, 1), self.representation, self.reference), score.flatten()

    # ------------------------------------------------------------------------------------------
    def to_tensors(self) -> tuple[dict, dict]:
        """(tensors, metadata) for a ``permutation-model`` artifact."""
        tensors = {"reference": self.reference.to(torch.int64)}
        meta = {"permutations.model": self.kind, "permutations.n": str(self.n),
                "permutations.representation": self.representation,
                "permutations.info": json.dumps(self.info, sort_keys=True)}
        if self.product is not None:
            tensors["log_probs"] = self.product.log_probs.to(torch.float32)
        if self.theta is not None:
            tensors["theta"] = self.theta.to(torch.float32)
        if self.plackett_luce is not None:
            tensors["log_weights"] = self.plackett_luce.log_weights.to(torch.float32)
        if self.vocabulary is not None:
            tensors["vocabulary"] = self.vocabulary.to(torch.int64)
        if self.net is not None:
            for key, value in self.net.state_dict().items():
                tensors[f"net.{key}"] = value.detach().cpu()
            meta["permutations.net"] = json.dumps(self.net.config.to_dict(), sort_keys=True)
        return tensors, meta

    @classmethod
    def from_tensors(cls, tensors: dict, meta: dict) -> "PermutationModel":
        kind = meta["permutations.model"]
        n = int(meta["permutations.n"])
        rep = meta["permutations.representation"]
        reference = tensors["reference"].to(torch.int64)
        info = json.loads(meta.get("permutations.info", "{}"))
        model = cls(kind, n, rep, reference, info=info)
        if "log_probs" in tensors:
            model.product = C.ProductModel(rep, tensors["log_probs"].to(torch.float64), reference)
        if "theta" in tensors:
            model.theta = tensors["theta"].to(torch.float64)
        if "vocabulary" in tensors:
            model.vocabulary = tensors["vocabulary"].to(torch.int64)
        if "log_weights" in tensors:
            model.plackett_luce = C.PlackettLuce(tensors["log_weights"].to(torch.float64))
        if kind in NEURAL:
            config = N.NetConfig(**json.loads(meta["permutations.net"]))
            net = N.PermutationTransformer(config)
            state = {k[4:]: v for k, v in tensors.items() if k.startswith("net.")}
            net.load_state_dict(state)
            net.eval()
            model.net = net
        return model


def fit(x: torch.Tensor, kind: str, *, representation: str = "insertion", reference: torch.Tensor | None = None,
        smoothing: float = 0.5, net_config: dict | None = None, train_config: N.TrainConfig | None = None,
        generator: torch.Generator | None = None, progress=None, log=None,
        items: torch.Tensor | None = None, context: torch.Tensor | None = None,
        device: torch.device | str = "cpu", groups: torch.Tensor | None = None) -> PermutationModel:
    """Fit a model of ``kind`` to orderings ``x`` ``(m, n)``; with ``items`` ``(m, n)`` (outside
    ids of each row's local items) a neural model is conditioned on them (one token per item,
    aligned with its digit); with ``context`` ``(m, k, d)`` float feature tokens it is conditioned
    on those (projected by ``net_config['context_encoder']``; aligned with the digits when k = n).
    ``net_config['head'] = 'pointer'`` needs ``kind='ar'``, lehmer and aligned tokens."""
    if kind not in MODELS:
        raise ValueError(f"unknown model {kind!r}; choose one of {', '.join(MODELS)}")
    n = x.shape[1]
    reference = torch.arange(n) if reference is None else reference.to(torch.int64)
    if kind in ("mallows", "gmallows") and representation not in ("lehmer", "insertion"):
        representation = "lehmer"
    if kind == "rim":
        representation = "insertion"
    if kind == "plackett-luce":
        pl = C.fit_plackett_luce(x)
        nll = float(-pl.log_prob(x).mean())
        return PermutationModel(kind, n, "inline", reference, plackett_luce=pl, info={"train_nll": nll})
    if kind in ("product", "rim"):
        prod = C.fit_product(x, representation, reference, smoothing)
        return PermutationModel(kind, n, representation, reference, product=prod,
                                info={"train_nll": float(-prod.log_prob(x).mean())})
    if kind == "mallows":
        fitted = C.fit_mallows(x, reference)
        return PermutationModel(kind, n, "lehmer", reference, product=fitted.model, theta=fitted.theta,
                                info={"phi": float(fitted.phi[0]), "theta": float(fitted.theta[0]),
                                      "train_nll": float(-fitted.model.log_prob(x).mean())})
    if kind == "gmallows":
        fitted = C.fit_generalized_mallows(x, reference, representation)
        return PermutationModel(kind, n, representation, reference, product=fitted.model, theta=fitted.theta,
                                info={"train_nll": float(-fitted.model.log_prob(x).mean())})
    vocabulary = None
    extra = {}
    if items is not None and context is not None:
        raise ValueError("condition on item ids or on feature tokens, not both")
    if items is not None:
        vocabulary = torch.unique(items.to(torch.int64))
        extra = dict(context_vocab=len(vocabulary) + 1, context_len=n, context_aligned=True)
    if context is not None:
        if context.dim() != 3 or len(context) != len(x):
            raise ValueError(f"context must be (rows, tokens, features) with {len(x)} rows, "
                             f"got {tuple(context.shape)}")
        extra = dict(context_dim=context.shape[2], context_len=context.shape[1],
                     context_aligned=context.shape[1] == n)
        context = context.to(torch.float32)
    if (net_config or {}).get("context_prior") and vocabulary is None:
        raise ValueError("a popularity prior ties item-id embeddings: condition on item ids")
    config = N.NetConfig(n=n, representation=representation, mode=kind, **(net_config or {}), **extra)
    net = N.PermutationTransformer(config).to(device)
    if vocabulary is not None:
        context = PermutationModel(kind, n, representation, reference, vocabulary=vocabulary).context_ids(items)
        if config.context_prior:
            net.context_prior_scores.copy_(popularity_prior(x, context, config.context_vocab))
    code = R.encode(x, representation, reference)
    history = N.train(net, code.to(device), train_config or N.TrainConfig(), generator=generator, groups=groups,
                      progress=progress, log=log, context=None if context is None else context.to(device))
    net.cpu()
    info = {"epochs_run": len(history["train_loss"]), "best_epoch": history["best_epoch"],
            "final_train_loss": history["train_loss"][-1] if history["train_loss"] else None,
            "best_val_nll": min(history["val_nll"]) if history["val_nll"] else None,
            "parameters": sum(p.numel() for p in net.parameters())}
    if groups is not None:  # validation on whole held-out groups (users)
        info.update(validation="held-out groups", val_rows=history["val_rows"])
    return PermutationModel(kind, n, representation, reference, net=net, info=info, vocabulary=vocabulary)


def popularity_prior(x: torch.Tensor, ids: torch.Tensor, vocab_size: int, pseudo: float = 5.0) -> torch.Tensor:
    """``(vocab_size, 2)`` prior scores of the conditioning ids from the training rows, each column
    standardised over the ids seen: log(1 + appearances) (popularity) and the logit of the mean
    normalised rank (1 = first, 0 = last) shrunk toward 1/2 by ``pseudo`` pseudo-appearances (how
    high the item is ranked when it appears). Ids never seen (the unknown-id token) get 0.

    ``x`` ``(m, n)`` orderings of local items, ``ids`` ``(m, n)`` the id of each row's local item."""
    m, n = x.shape
    position = torch.argsort(x, dim=1)  # position[r, j] of local item j
    top = (n - 1 - position).to(torch.float64) / max(n - 1, 1)
    flat = ids.reshape(-1).to(torch.int64)
    count = torch.zeros(vocab_size, dtype=torch.float64).index_add_(0, flat, torch.ones(flat.numel(), dtype=torch.float64))
    total = torch.zeros(vocab_size, dtype=torch.float64).index_add_(0, flat, top.reshape(-1))
    mean = (total + 0.5 * pseudo) / (count + pseudo)
    scores = torch.stack([torch.log1p(count), torch.logit(mean)], dim=1)
    seen = count > 0
    out = torch.zeros_like(scores)
    if seen.sum() > 1:
        s = scores[seen]
        out[seen] = (s - s.mean(0)) / s.std(0).clamp_min(1e-12)
    return out.to(torch.float32)


def uniform_nll(n: int) -> float:
    return math.lgamma(n + 1)
