"""Training of a TFDual tokenizer: AdamW, linear warmup from 1e-6 then step-level cosine to min_lr.

Windows are ``x`` (N, C, P, L) float32 in units of 100 uV. Mixed precision (bf16 autocast) keeps the
quantizers in fp32 (they disable autocast themselves).

Augmentations (off by default; issue 33's data-augmentation study in benchmarks/tokenize_eeg/RESULTS.md):
``random_crop`` takes windows with one patch of context after them, (N, C, P+1, L), and crops every
window of every batch to P patches from a random sample offset in [0, L), so patch boundaries fall
at new phases of the continuous recording each time (a window whose context patch must not be
seen, e.g. because it is the first second of a validation window, is cut at offset 0 only: pass
``croppable`` to :func:`train`); ``amplitude_jitter`` j scales every window of
every batch by a factor drawn log-uniformly from [1/(1+j), 1+j].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from cortexkit.tools.eeg.losses import tokenizer_loss


@dataclass
class TrainConfig:
    epochs: int = 20
    batch_size: int = 64
    lr: float = 1e-4
    min_lr: float = 1e-5
    weight_decay: float = 1e-4
    warmup_epochs: float = 5.0
    contrastive: bool = False  # the paper's NT-Xent is opt-in (costs two encoder passes, worsens reconstruction)
    amp: bool = False
    signal_weight: float = 1.0  # weight of mse(x_hat, x); the paper's is 1
    phase_weight: float = 1.0  # weight of the phase term; the paper's is 1
    signal_amplitude_weight: float = 0.0  # weight of mse(|rfft(x_hat)|, |rfft(x)|); not the paper's: 0
    keep: str = "last"  # "last" epoch's weights (the paper's) or the "best" validation epoch's
    warm_start_epochs: float = 0.0  # epochs' worth of steps fitting the model to the k-means floor
    # before training (tools/eeg/warmstart.py); 0: off, the paper's random start
    warm_start_kmeans_patches: int = 4096  # the warm start's k-means is fitted on at most this many
    warm_start_kmeans_iterations: int = 8  # random training patches, this many Lloyd iterations
    random_crop: bool = False  # x carries one patch of context: crop at a random sub-patch offset
    amplitude_jitter: float = 0.0  # per-window gain, log-uniform in [1/(1+j), 1+j]; 0: off

    def to_dict(self) -> dict:
        return asdict(self)


def learning_rate(step: int, total: int, warmup: int, lr: float, min_lr: float) -> float:
    """Linear warmup from 1e-6 over ``warmup`` steps, then cosine from lr to min_lr."""
    if step < warmup:
        return 1e-6 + (lr - 1e-6) * step / max(warmup, 1)
    progress = (step - warmup) / max(total - warmup, 1)
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def random_crops(x: torch.Tensor, generator: torch.Generator,
                 croppable: torch.Tensor | None = None) -> torch.Tensor:
    """Windows with one patch of context (B, C, P+1, L) -> (B, C, P, L), each cut from its own
    random sample offset in [0, L) (a sub-patch shift of the patch grid). ``croppable`` (B,) bool:
    windows marked False keep offset 0 (their own P patches; the context is never read). The
    offsets are drawn for every window either way, so the random stream does not depend on it."""
    b, c, p1, length = x.shape
    offsets = torch.randint(0, length, (b,), generator=generator)
    if croppable is not None:
        offsets = torch.where(croppable.to(torch.bool), offsets, torch.zeros_like(offsets))
    index = (offsets[:, None] + torch.arange((p1 - 1) * length))[:, None, :].expand(b, c, -1)
    return torch.gather(x.reshape(b, c, p1 * length), 2, index).reshape(b, c, p1 - 1, length)


def augment(batch: torch.Tensor, config: "TrainConfig", generator: torch.Generator,
            croppable: torch.Tensor | None = None) -> torch.Tensor:
    """A training batch (B, C, P(+1), L) after ``config``'s augmentations -> (B, C, P, L);
    ``croppable`` (B,) bool as in :func:`random_crops`."""
    if config.random_crop:
        batch = random_crops(batch, generator, croppable)
    if config.amplitude_jitter > 0:
        bound = math.log1p(config.amplitude_jitter)
        gain = torch.empty(len(batch)).uniform_(-bound, bound, generator=generator).exp()
        batch = batch * gain[:, None, None, None].to(batch.dtype)
    return batch


def usage(tokens: torch.Tensor, size: int) -> dict[str, float]:
    """Codes used and perplexity exp(H) of the token histogram of ``tokens`` (any shape)."""
    counts = torch.bincount(tokens.reshape(-1).long(), minlength=size).double()
    p = counts / counts.sum().clamp_min(1)
    entropy = -(p[p > 0] * p[p > 0].log()).sum()
    return {"used": int((counts > 0).sum()), "perplexity": float(entropy.exp())}


def train(model, x: torch.Tensor, config: TrainConfig, *, generator: torch.Generator,
          on_epoch: Callable[[int, dict], None] | None = None, progress=None,
          validate: Callable[[object], float] | None = None,
          croppable: torch.Tensor | None = None) -> list[dict]:
    """Train ``model`` in place on windows ``x`` (N, C, P, L); returns per-epoch mean losses and
    codebook usage. ``progress(iterable, total)`` wraps the step loop (e.g. a tqdm bar).
    With ``config.random_crop``, ``x`` is (N, C, P+1, L) and ``croppable`` (N,) bool (None: all)
    says which windows may be cropped into their context patch; the others are cut at offset 0
    (:func:`random_crops`), e.g. a window whose next window validates (``api.context_croppable``).

    ``validate(model) -> score`` (lower is better; it must not touch the random state) is called
    after every epoch and goes into the history as ``validation``; with ``config.keep == "best"``
    the model ends with the weights and codebooks of the epoch with the lowest score (ties: the
    earliest), and the last history record says which (``kept_epoch``)."""
    if config.keep not in ("last", "best"):
        raise ValueError(f"keep must be 'last' or 'best', not {config.keep!r}")
    if config.keep == "best" and validate is None:
        raise ValueError("keep='best' needs validation windows (a validate function)")
    n = x.shape[0]
    if config.random_crop and x.shape[2] != model.config.max_patches + 1:
        raise ValueError(f"random_crop needs windows of {model.config.max_patches + 1} patches (one of "
                         f"context), got {x.shape[2]}")
    if croppable is not None:
        croppable = torch.as_tensor(croppable, dtype=torch.bool)
        if croppable.shape != (n,):
            raise ValueError(f"croppable needs one flag per window ({n}), got shape {tuple(croppable.shape)}")
    if n < 2 and config.contrastive:
        raise ValueError(f"training needs at least 2 windows for the contrastive term (got {n})")
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.ndim < 2 or name.endswith(("_embed", "cls_token")) else decay).append(param)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=config.lr)
    per_epoch = max(1, math.ceil(n / config.batch_size))
    total, warmup = config.epochs * per_epoch, int(round(config.warmup_epochs * per_epoch))
    history, step, restarted, best = [], 0, {}, None
    device = next(model.parameters()).device
    warm = None
    warm_steps = int(round(config.warm_start_epochs * per_epoch))
    if warm_steps > 0:  # start at the k-means floor (tools/eeg/warmstart.py)
        from cortexkit.tools.eeg.warmstart import warm_start
        warm = warm_start(model, x[:, :, :model.config.max_patches] if config.random_crop else x,
                          steps=warm_steps, batch_size=config.batch_size,
                          lr=config.lr, generator=generator,
                          kmeans_patches=config.warm_start_kmeans_patches,
                          kmeans_iterations=config.warm_start_kmeans_iterations,
                          signal_amplitude_weight=config.signal_amplitude_weight)
    for epoch in range(config.epochs):
        model.train()
        order = torch.randperm(n, generator=generator)
        sums: dict[str, float] = {}
        tokens = {"t": [], "f": []}
        batches = range(0, n, config.batch_size)
        for start in (progress(batches, per_epoch) if progress else batches):
            idx = order[start:start + config.batch_size]
            if config.contrastive and len(idx) < 2:
                continue  # NT-Xent needs two windows; a lone last window waits for the next epoch
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(step, total, warmup, config.lr, config.min_lr)
            batch = augment(x[idx], config, generator,
                            None if croppable is None else croppable[idx]).to(device)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=config.amp):
                terms = tokenizer_loss(model, batch, contrastive=config.contrastive,
                                       signal_weight=config.signal_weight,
                                       phase_weight=config.phase_weight,
                                       signal_amplitude_weight=config.signal_amplitude_weight)
            optimizer.zero_grad(set_to_none=True)
            terms["total"].backward()
            optimizer.step()
            step += 1
            for key, value in terms.items():
                if key != "_tokens":
                    sums[key] = sums.get(key, 0.0) + float(value.detach()) * len(idx)
            for key, value in terms["_tokens"].items():
                tokens[key[-1]].append(value.detach().reshape(-1))
        record = {"epoch": epoch + 1, "lr": optimizer.param_groups[0]["lr"],
                  **{k: v / n for k, v in sums.items()}}
        for stream in ("t", "f"):
            quantizer = getattr(model, f"quantize_{stream}", None)
            if quantizer is not None and quantizer.dead_code_threshold > 0:
                record[f"restarts_{stream}"] = quantizer.restarts - restarted.get(stream, 0)
                restarted[stream] = quantizer.restarts
        for stream, chunks in tokens.items():
            if chunks:
                record[f"codebook_{stream}"] = usage(torch.cat(chunks), model.config.codebook_size)
        if validate is not None:
            record["validation"] = float(validate(model))
            if config.keep == "best" and (best is None or record["validation"] < best[0]):
                best = (record["validation"], epoch + 1,
                        {k: v.detach().clone() for k, v in model.state_dict().items()})
        history.append(record)
        if on_epoch is not None:
            on_epoch(epoch + 1, record)
    if warm is not None:  # with epochs=0, the warm start alone (a record of epoch 0)
        if not history:
            history.append({"epoch": 0})
        history[0]["warm_start"] = warm
    if best is not None:
        model.load_state_dict(best[2])
        history[-1]["kept_epoch"] = best[1]
    model.eval()
    return history
