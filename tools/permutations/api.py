"""The whole permutation method from Python: typed configs in, models, orderings and reports out.

Each verb of ``cortexkit sample-permutations`` is one call here (the command line only parses
options, reads files through :mod:`cortexkit.formats.rankings` and writes the results):

* :func:`fit` ``(FitConfig, orderings (m, n)) -> PermutationModel``;
* :func:`sample` ``(model, SampleConfig) -> Sampled`` (orderings ``(rows, n)`` and extras);
* :func:`score` ``(model, orderings) -> (log-likelihoods (m,), report)``;
* :func:`evaluate` ``(model, orderings, EvaluateConfig) -> report``;
* :func:`encode` / :func:`decode` between orderings and digit codes.

Randomness comes from ``seed`` (a fresh ``torch.Generator`` per use, as the command line does),
so the same inputs and seed give the same bytes from Python and from the shell. Errors a user
can fix are :class:`~cortexkit.formats.errors.CortexError` with one line.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace  # noqa: F401 - replace: for callers
from typing import Callable

import torch

from cortexkit.formats.errors import CortexError
from cortexkit.tools.permutations import model as M
from cortexkit.tools.permutations import neural as N
from cortexkit.tools.permutations import representations as R

REPRESENTATIONS = ("inline", "lehmer", "fisher-yates", "insertion")
MODELS = M.MODELS
STRATEGIES = ("sample", "greedy", "beam", "mbr")
TrainConfig = N.TrainConfig


def _quiet(_message: str) -> None:
    return None


def generator(seed: int | None) -> torch.Generator:
    """A CPU generator seeded like the command line's ``--seed`` (None counts as 0)."""
    g = torch.Generator()
    g.manual_seed(seed or 0)
    return g


def int_dtype(n: int) -> torch.dtype:
    """The integer dtype orderings and codes of n items are stored in."""
    return torch.int16 if n < 2**15 else torch.int32


# ----------------------------------------------------------------------------------------------
# models from artifacts


def model_from_tensors(tensors: dict, metadata: dict, source: str = "<model>",
                       device: torch.device | str = "cpu") -> M.PermutationModel:
    """A model from the tensors and metadata of a ``permutation-model`` artifact."""
    try:
        model = M.PermutationModel.from_tensors(tensors, metadata)
    except (KeyError, RuntimeError, TypeError) as exc:
        raise CortexError(f"{source}: damaged permutation-model artifact ({exc})") from None
    import json

    names = metadata.get("permutations.items")
    model.item_names = json.loads(names) if names else None
    if model.net is not None:
        model.net.to(device)
    return model


def model_tensors(model: M.PermutationModel, item_names=None) -> tuple[dict, dict]:
    """(tensors, metadata) of the ``permutation-model`` artifact of ``model``."""
    tensors, meta = model.to_tensors()
    if item_names:
        meta["permutations.items"] = list(item_names)
    return tensors, meta


def parse_nfe_list(text: str | int | None, model: M.PermutationModel) -> list[int | None]:
    """``--nfe`` values (``K[,K...]``, ``full`` = n) checked against the model."""
    if text is None:
        return [None]
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if part in ("full", "n", ""):
            out.append(None)
            continue
        try:
            value = int(part)
        except ValueError:
            raise CortexError(f"--nfe {text}: give integers separated by commas (or 'full')") from None
        out.append(value)
    for value in out:
        if value is None:
            continue
        if model.net is None and value != 1:
            raise CortexError(f"--nfe {value}: a {model.kind} model samples in one step (NFE = 1)")
        if model.net is not None and model.kind == "ar" and value != model.n:
            raise CortexError(f"--nfe {value}: an autoregressive model needs NFE = n = {model.n}; "
                              "fit --model mlm for fewer steps")
        if model.net is not None and not 1 <= value <= model.n:
            raise CortexError(f"--nfe {value}: must be between 1 and n = {model.n}")
    return out


def reference_order(spec: str | torch.Tensor, x: torch.Tensor | None, n: int) -> torch.Tensor:
    """``identity``, ``borda`` (of orderings ``x``) or an explicit order ``(n,)``."""
    if not isinstance(spec, str):
        return torch.as_tensor(spec, dtype=torch.int64)
    if spec == "identity":
        return torch.arange(n)
    if spec == "borda":
        if x is None:
            raise CortexError("--reference borda needs permutations to take the Borda order of")
        return R.borda_reference(torch.as_tensor(x))
    raise CortexError(f"--reference {spec}: use identity, borda or a file holding one ordering")


# ----------------------------------------------------------------------------------------------
# fit


@dataclass
class FitConfig:
    """What ``fit`` learns: the model family, its code, conditioning and training options.

    Building one checks the combinations (a pointer head needs AR lehmer codes and aligned
    conditioning, and so on) before any data is read.
    """

    kind: str = "mlm"
    representation: str = "insertion"
    reference: str = "identity"  # identity | borda | anything else: a given order (the caller's)
    condition: str = "none"  # none | items | features
    head: str = "linear"
    context_encoder: str = "linear"
    context_hidden: int | None = None
    smoothing: float = 0.5
    train: N.TrainConfig = field(default_factory=N.TrainConfig)
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    ff: int = 128
    dropout: float = 0.1
    has_context_file: bool = False  # features: the caller has a context file to read
    item_prior: bool = False  # items: tie the item-id embeddings with a popularity prior (popularity_prior)

    def __post_init__(self) -> None:
        kind, condition = self.kind, self.condition
        if self.d_model % self.heads:
            raise CortexError(f"--d-model {self.d_model} must be a multiple of --heads {self.heads}")
        if condition != "none" and kind not in ("ar", "mlm"):
            raise CortexError(f"--condition {condition} needs a neural model (--model ar or mlm), not {kind}")
        if condition == "features" and not self.has_context_file:
            raise CortexError("--condition features needs --context FILE (a 'context' tensor, one row per permutation)")
        if self.has_context_file and condition != "features":
            raise CortexError("--context is read by --condition features; add it (or drop --context)")
        if self.head == "pointer" and (kind != "ar" or self.representation != "lehmer" or condition == "none"):
            raise CortexError("--head pointer needs --model ar --representation lehmer and aligned "
                              "conditioning (--condition features with one token per item, or items)")
        if (self.context_encoder != "linear" or self.context_hidden is not None) and condition != "features":
            raise CortexError("--context-encoder and --context-hidden apply to --condition features")
        if self.item_prior and condition != "items":
            raise CortexError("--item-prior ties item-id embeddings: it needs --condition items")

    def net_config(self) -> dict:
        net = dict(d_model=self.d_model, layers=self.layers, heads=self.heads, ff=self.ff,
                   dropout=self.dropout)
        if self.head != "linear":
            net["head"] = self.head
        if self.condition == "features":
            net.update(context_encoder=self.context_encoder, context_hidden=self.context_hidden or 0)
        if self.item_prior:
            net["context_prior"] = 2
        return net


def fit(config: FitConfig, x: torch.Tensor, *, reference: torch.Tensor | None = None,
        items: torch.Tensor | None = None, context: torch.Tensor | None = None,
        context_name: str = "the context", groups: torch.Tensor | None = None, seed: int | None = 0, device: torch.device | str = "cpu", progress: Callable | None = None,
        info: Callable[[str], None] = _quiet, detail: Callable[[str], None] = _quiet,
        warn: Callable[[str], None] = _quiet) -> M.PermutationModel:
    """Fit ``config`` to orderings ``x`` ``(m, n)`` int64.

    ``reference`` ``(n,)`` overrides ``config.reference`` (a file's order); ``items`` ``(m, n)``
    outside item ids (``condition="items"``); ``context`` ``(m, k, d)`` float feature tokens
    (``condition="features"``); ``groups`` ``(m,)``: validation holds out whole groups (users),
    so early stopping is chosen on unseen groups. The network's initialisation and dropout draw from torch's
    global generator seeded with ``seed`` (restored afterwards); batches from ``generator(seed)``.
    """
    x = torch.as_tensor(x, dtype=torch.int64)
    n = x.shape[1]
    if config.condition == "items" and items is None:
        raise CortexError("--condition items needs per-row item ids (a rating table or a "
                          "permutations artifact with an 'items' tensor)")
    if config.head == "pointer" and context is not None and context.shape[1] != n:
        raise CortexError(f"--head pointer needs one context token per item ({n}); "
                          f"{context_name} has {context.shape[1]} per row")
    ref = reference_order(config.reference if reference is None else reference, x, n)
    if config.kind == "plackett-luce" and (reference is not None or config.reference != "identity"):
        warn("plackett-luce has no reference order; --reference ignored")
    if config.train.val_nfe is not None and config.train.val_nfe > n:
        raise CortexError(f"--val-nfe {config.train.val_nfe}: must be at most n = {n}")
    if groups is not None and config.kind not in N.MODES:
        warn(f"--group: a {config.kind} fit has no validation split; ignored")
    info(f"fitting {config.kind} to {len(x)} permutations of n = {n}")
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        return M.fit(x, config.kind, representation=config.representation, reference=ref,
                     smoothing=config.smoothing, net_config=config.net_config(),
                     train_config=config.train, generator=generator(seed), progress=progress,
                     log=detail, items=None if config.condition != "items" else torch.as_tensor(items),
                     context=context if config.condition == "features" else None, device=device,
                     groups=None if groups is None or config.kind not in N.MODES else torch.as_tensor(groups))


def summary(model: M.PermutationModel) -> str:
    """One line: the fitted model's info (train NLL, epochs, ...)."""
    text = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in model.info.items())
    return f"{model.kind}: {text}"


# ----------------------------------------------------------------------------------------------
# sample


def parse_given(text: str | None) -> list[int] | None:
    """``--given I,J,...`` as 0-based item indices."""
    if not text:
        return None
    try:
        return [int(v) for v in text.replace(";", ",").split(",") if v.strip()]
    except ValueError:
        raise CortexError(f"--given {text}: give 0-based item indices separated by commas") from None


@dataclass
class SampleConfig:
    """``sample``: random draws (``strategy="sample"``), beam/greedy search for the most likely,
    or ``mbr``: the ranking of least expected ``metric`` risk over ``mbr_samples`` draws per row
    (:mod:`mbr`). ``num`` None takes the defaults (1000 draws; 1 kept). Building one checks the
    combination.
    """

    num: int | None = None
    nfe: int | None = None
    partition: str = "contiguous"
    strategy: str = "sample"
    beam_width: int | None = None
    given: list[int] | None = None
    batch_size: int = 65536
    metric: str | None = None  # mbr: ndcg[@K] | footrule | spearman | kendall
    mbr_samples: int | None = None  # mbr: draws per row (default 256)

    def __post_init__(self) -> None:
        from cortexkit.tools.permutations import mbr

        if self.strategy != "mbr" and (self.metric is not None or self.mbr_samples is not None):
            raise CortexError(f"--metric and --mbr-samples apply to --strategy mbr, not --strategy {self.strategy}")
        if self.strategy == "mbr":
            mbr.parse_metric(self.metric)  # the error before any work
            self.mbr_samples = self.mbr_samples or 256
            if self.num not in (None, 1):
                raise CortexError(f"-n {self.num}: mbr decoding returns one ranking per row; "
                                  "--mbr-samples sets the draws it decides from")
        if self.beam_width is not None and self.strategy != "beam":
            raise CortexError(f"--beam-width applies to --strategy beam, not --strategy {self.strategy}")
        if self.strategy == "greedy":
            self.beam_width = 1
            if self.num not in (None, 1):
                raise CortexError(f"-n {self.num}: greedy decoding finds one permutation per row; "
                                  "use --strategy beam to keep several")
        elif self.strategy == "beam":
            self.beam_width = self.beam_width or 16
            if self.num is not None and self.num > self.beam_width:
                raise CortexError(f"-n {self.num}: beam search keeps at most --beam-width {self.beam_width} "
                                  "permutations per row; raise --beam-width")

    @property
    def per_row(self) -> int:
        """Permutations per row of items or context."""
        return self.num or 1

    @property
    def total(self) -> int:
        """Permutations of an unconditional run (or per row of a search)."""
        return self.num or (1000 if self.strategy == "sample" else 1)


@dataclass
class Sampled:
    """Orderings ``(rows, n)`` int64 with the extra tensors of their artifact (``items``
    ``(rows, n)``, ``log_likelihood`` ``(rows,)`` float64) and a message for the user."""

    orderings: torch.Tensor
    extra: dict = field(default_factory=dict)
    message: str | None = None
    seconds: float = 0.0  # wall time of the sampling or search, decoding included
    rows: int = 0  # searches: rows searched (one beam search each)
    what: str = "rows searched"  # how throughput() names the rows

    def throughput(self) -> str:
        """One line: permutations (or searched rows) per second and time per digit."""
        count, n = self.orderings.shape
        what = "permutations" if not self.rows else self.what
        done = count if not self.rows else self.rows
        rate = done / self.seconds if self.seconds > 0 else float("inf")
        per_digit = self.seconds / max(1, done * n) * 1e6
        return f"{done} {what} in {self.seconds:.3f} s: {rate:,.0f}/s, {per_digit:.2f} us per digit"


def check_nfe(nfe: str | int | None, model: M.PermutationModel, single: bool = False) -> list[int | None]:
    """:func:`parse_nfe_list`; ``single``: exactly one value (score)."""
    nfes = parse_nfe_list(nfe, model)
    if single and len(nfes) != 1:
        raise CortexError("score takes one --nfe (evaluate takes a list)")
    return nfes


def check_sample(model: M.PermutationModel, config: SampleConfig, items_given: bool) -> None:
    """What :func:`sample` checks before any work: the NFE, and ``--items`` iff the model is
    item-conditioned (an item-conditioned model needs them; another refuses them)."""
    parse_nfe_list(config.nfe, model)
    if model.vocabulary is not None and not items_given:
        raise CortexError("the model is conditioned on item ids: give --items FILE")
    if items_given and model.vocabulary is None:
        raise CortexError("--items: the model is not conditional (fit it with --condition items)")


def sample(model: M.PermutationModel, config: SampleConfig, *, items: torch.Tensor | None = None,
           context: torch.Tensor | None = None, seed: int | None = 0,
           evidence: torch.Tensor | None = None, evidence_source: str = "--given-file") -> Sampled:
    """Draw (or search for the best) orderings of ``model``.

    ``items`` ``(rows, n)`` (item-conditioned models) or ``context`` ``(rows, m, d)`` (feature
    models): ``config.per_row`` orderings per row, rows in order. Searches also return the exact
    log-likelihood of each ordering found (best first within a row). ``config.given`` with
    ``items`` or ``context`` is the same evidence for every row (:func:`sample_evidence`), so an
    insertion model conditioned on its rows takes the order of any subset of items, not only the
    first reference items.
    """
    given = None if config.given is None else torch.tensor(config.given, dtype=torch.int64)
    check_sample(model, config, items is not None)
    if given is not None and evidence is None and (items is not None or context is not None):
        rows = len(items if items is not None else context)
        return sample(model, replace(config, given=None), items=items, context=context, seed=seed,
                      evidence=given[None].repeat(rows, 1), evidence_source="--given")
    if config.strategy == "mbr":
        return sample_mbr(model, config, items=items, context=context, seed=seed, evidence=evidence,
                          evidence_source=evidence_source)
    if evidence is not None:
        return sample_evidence(model, config, evidence, items=items, context=context, seed=seed,
                               source=evidence_source)
    num = config.total
    if items is not None and config.strategy == "sample":
        items = items.repeat_interleave(num, 0)
        num = len(items)
    if context is not None:
        num = config.per_row
        if config.strategy == "sample":
            context = context.repeat_interleave(num, 0)
            num = len(context)
    g = generator(seed)
    began = time.perf_counter()
    if config.strategy == "sample":
        x = model.sample(num, nfe=config.nfe, partition=config.partition, given=given, generator=g,
                         batch_size=config.batch_size, items=items, context=context)
        return Sampled(x, {} if items is None else {"items": items}, seconds=time.perf_counter() - began)
    # the same seed draws the same random partition as score, so the likelihoods agree
    x, log_likelihood = model.best(beam_width=config.beam_width, keep=num, nfe=config.nfe,
                                   partition=config.partition, given=given, generator=g,
                                   items=items, context=context,
                                   batch_size=min(config.batch_size, 4096))
    seconds = time.perf_counter() - began
    extra = {"log_likelihood": log_likelihood.double()}
    if items is not None:
        extra["items"] = items.repeat_interleave(num, 0)
    message = (f"{config.strategy} search: best log-likelihood {float(log_likelihood.max()):.4f}"
               + ("" if items is None and context is None else
                  f" (mean over rows of the best {float(log_likelihood.view(-1, num)[:, 0].mean()):.4f})"))
    return Sampled(x, extra, message, seconds, rows=len(x) // num)


def sample_mbr(model: M.PermutationModel, config: SampleConfig, *, items: torch.Tensor | None = None,
               context: torch.Tensor | None = None, seed: int | None = 0,
               evidence: torch.Tensor | None = None, evidence_source: str = "--given-file") -> Sampled:
    """``--strategy mbr``: ``config.mbr_samples`` draws per row (exactly the draws of
    ``--strategy sample -n S`` with the same seed), then per row the ordering maximising the
    samples' mean metric (:func:`mbr.decode`); ``expected_metric`` ``(rows,)`` is that mean."""
    from cortexkit.tools.permutations import mbr

    metric = mbr.parse_metric(config.metric)
    draws = replace(config, strategy="sample", num=config.mbr_samples, metric=None, mbr_samples=None)
    began = time.perf_counter()
    out = sample(model, draws, items=items, context=context, seed=seed, evidence=evidence,
                 evidence_source=evidence_source)
    count = config.mbr_samples
    samples = out.orderings.numpy().reshape(-1, count, model.n)
    decision = mbr.decode(samples, metric)
    seconds = time.perf_counter() - began
    extra = {"expected_metric": torch.from_numpy(decision.expected.astype("float64"))}
    if items is not None:
        extra["items"] = torch.as_tensor(items)
    direction = "expected" if metric.higher_is_better else "expected distance"
    message = (mbr.describe(metric, model.n, count, decision.exact)
               + f": mean {direction} {float(decision.expected.mean()):.4f}")
    x = torch.from_numpy(decision.orderings)
    return Sampled(x, extra, message, seconds, rows=len(x), what="rows decided")


def sample_evidence(model: M.PermutationModel, config: SampleConfig, evidence: torch.Tensor, *,
                    items: torch.Tensor | None = None, context: torch.Tensor | None = None,
                    seed: int | None = 0, source: str = "--given-file") -> Sampled:
    """:func:`sample` with each row's own evidence ``(rows, r_max)`` padded with -1 (see
    :mod:`evidence`): ``-n`` orderings per row (searches: the ``-n`` best), rows in order;
    ``items`` / ``context`` have one row per evidence row."""
    from cortexkit.tools.permutations import evidence as E

    if config.given is not None:
        raise CortexError("--given and --given-file: give one prefix for all rows or one per row, not both")
    rows = len(evidence)
    for what, t in (("--items", items), ("--context", context)):
        if t is not None and len(t) != rows:
            raise CortexError(f"{source}: {rows} evidence rows, {what} has {len(t)}; give one per row")
    aligned = (context is not None and model.net is not None and model.net.config.context_aligned
               and context.shape[1] == model.n)  # one feature token per item: relabelled like ids
    ev = E.prepare(model, evidence, conditional_on_items=items is not None or aligned, source=source)
    cond = None
    if model.net is not None:
        if aligned and ev.labels is not None:
            context = torch.as_tensor(context).gather(1, ev.labels[:, :, None].expand(-1, -1, context.shape[2]))
        cond = model.conditioning(None if items is None else E.relabel_items(torch.as_tensor(items), ev.labels),
                                  context)
    g = generator(seed)
    num = config.total
    began = time.perf_counter()
    if config.strategy == "sample":
        x = E.sample(model, ev, num, cond=cond, nfe=config.nfe, partition=config.partition, generator=g,
                     batch_size=config.batch_size)
        extra = {} if items is None else {"items": torch.as_tensor(items).repeat_interleave(num, 0)}
        return Sampled(x, extra, seconds=time.perf_counter() - began)
    x, ll = E.best(model, ev, beam_width=config.beam_width, keep=num, cond=cond, nfe=config.nfe,
                   partition=config.partition, generator=g, batch_size=min(config.batch_size, 4096))
    seconds = time.perf_counter() - began
    if not torch.isfinite(ll).all():
        raise CortexError(f"fewer than {num} completions of some row have positive probability; keep fewer")
    extra = {"log_likelihood": ll}
    if items is not None:
        extra["items"] = torch.as_tensor(items).repeat_interleave(num, 0)
    message = (f"{config.strategy} search: mean over rows of the best conditional log-likelihood "
               f"{float(ll.view(-1, num)[:, 0].mean()):.4f}")
    return Sampled(x, extra, message, seconds, rows=rows)


# ----------------------------------------------------------------------------------------------
# score and evaluate


def score(model: M.PermutationModel, x: torch.Tensor, *, nfe: str | int | None = None,
          partition: str = "contiguous", items: torch.Tensor | None = None,
          context: torch.Tensor | None = None, seed: int | None = 0) -> tuple[torch.Tensor, dict]:
    """Exact log-likelihoods ``(m,)`` float64 of orderings ``x`` ``(m, n)`` under the sampler with
    this NFE and partition, and the YAML summary of them."""
    nfes = check_nfe(nfe, model, single=True)
    x = torch.as_tensor(x)
    lp = model.log_prob(x, nfe=nfes[0], partition=partition, generator=generator(seed),
                        items=items, context=context)
    report = {
        "model": model.kind, "representation": model.representation, "n": model.n,
        "nfe": nfes[0] or model.default_nfe, "partition": partition if model.kind == "mlm" else None,
        "count": len(x), "mean_nll": float(-lp.mean()), "std_nll": float(lp.std()) if len(x) > 1 else 0.0,
        "min_log_likelihood": float(lp.min()), "max_log_likelihood": float(lp.max()),
        "uniform_nll": math.lgamma(model.n + 1),
    }
    return lp.double(), report


@dataclass
class EvaluateConfig:
    """``evaluate``: NFEs (``K[,K...]`` or None = the default), partition, samples per NFE."""

    nfe: str | None = None
    partition: str = "contiguous"
    samples: int = 10000


def evaluate(model: M.PermutationModel, x: torch.Tensor, config: EvaluateConfig, *,
             items: torch.Tensor | None = None, context: torch.Tensor | None = None,
             train: torch.Tensor | None = None, seed: int | None = 0,
             detail: Callable[[str], None] = _quiet) -> dict:
    """Held-out NLL at each NFE, and validity, uniqueness, novelty (against ``train`` orderings)
    and Kendall statistics of samples (one per held-out row for conditional models)."""
    nfes = parse_nfe_list(config.nfe, model)
    x = torch.as_tensor(x)
    centre = R.borda_reference(x)
    held_kendall = R.kendall_distance(x, centre).double()
    train_set = None if train is None else {tuple(r) for r in torch.as_tensor(train).tolist()}
    report = {"model": model.kind, "representation": model.representation, "n": model.n,
              "count": len(x), "uniform_nll": math.lgamma(model.n + 1),
              "heldout_kendall_to_borda": float(held_kendall.mean()), "by_nfe": []}
    for k in nfes:
        lp = model.log_prob(x, nfe=k, partition=config.partition, generator=generator(seed),
                            items=items, context=context)
        entry = {"nfe": k or model.default_nfe, "nll": float(-lp.mean()),
                 "nll_stderr": float(lp.std() / len(lp) ** 0.5) if len(lp) > 1 else 0.0}
        if config.samples:
            g = generator(seed)  # the same partition the likelihood used
            if items is not None or context is not None:  # one sample per held-out row, conditioned on it
                s = model.sample(len(x), nfe=k, partition=config.partition, generator=g, items=items,
                                 context=context)
            else:
                s = model.sample(config.samples, nfe=k, partition=config.partition, generator=g)
            entry.update(sample_statistics(s, centre, train_set))
        report["by_nfe"].append(entry)
        detail(f"NFE {entry['nfe']}: NLL {entry['nll']:.4f}")
    return report


def sample_statistics(s: torch.Tensor, centre: torch.Tensor, train_set: set | None = None) -> dict:
    """Validity, uniqueness, cyclic share, Kendall distance to ``centre`` and novelty of ``s``."""
    valid = R.is_permutation(s)
    rows = [tuple(r) for r in s[valid].tolist()]
    drawn = len(s)
    entry = {"samples": drawn, "valid": float(valid.double().mean()),
             "unique": len(set(rows)) / drawn, "cyclic": float(R.is_cycle(s).double().mean())}
    if valid.any():
        entry["kendall_to_borda"] = float(R.kendall_distance(s[valid], centre).double().mean())
    if train_set is not None:
        entry["novel"] = sum(1 for r in rows if r not in train_set) / drawn
    return entry


# ----------------------------------------------------------------------------------------------
# encode and decode


def encode(x: torch.Tensor, representation: str, reference: str | torch.Tensor = "identity") -> dict:
    """Tensors of a ``permutation-codes`` artifact: ``codes`` ``(m, n)`` and ``reference`` ``(n,)``
    (``identity``, ``borda`` of ``x``, or an order)."""
    x = torch.as_tensor(x)
    reference = reference_order(reference, x, x.shape[1])
    code = R.encode(x, representation, reference)
    return {"codes": code.to(int_dtype(x.shape[1])), "reference": reference.to(torch.int64)}


def decode(code: torch.Tensor, representation: str, reference: torch.Tensor,
           source: str = "<codes>") -> torch.Tensor:
    """Orderings ``(m, n)`` of digit codes ``(m, n)``; the first illegal digit is an error."""
    code = torch.as_tensor(code, dtype=torch.int64)
    legal = R.codes_are_legal(code, representation)
    if not legal.all():
        r = int((~legal).nonzero()[0, 0])
        sizes = R.digit_sizes(representation, code.shape[1])
        i = int(((code[r] < 0) | (code[r] >= sizes)).nonzero()[0, 0])
        raise CortexError(f"{source}: row {r + 1} digit {i} = {int(code[r, i])} is outside its "
                          f"{representation} range [0, {int(sizes[i]) - 1}]")
    x = R.decode(code, representation, reference)
    if representation == "inline":  # inline digits need not make a permutation
        from cortexkit.formats.rankings import check_orderings

        check_orderings(x.numpy(), source)
    return x
