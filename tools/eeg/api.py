"""The whole method as functions over windows (what each ``tokenize-eeg`` verb calls).

Windows come as an iterable of objects with ``x`` (batch, C, P, L) float32 numpy arrays in
100 uV (``formats.eeg.WindowBatch``), so long recordings stream through encode/evaluate/features.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import torch

from cortexkit.tools.eeg import analysis
from cortexkit.tools.eeg.floor import kmeans_floor
from cortexkit.tools.eeg.model import TFDualTokenizer, TokenizerConfig
from cortexkit.tools.eeg.train import TrainConfig, train


def fit(windows: np.ndarray, model_config: TokenizerConfig, train_config: TrainConfig, *,
        seed: int = 0, device: str | torch.device = "cpu",
        on_epoch: Callable[[int, dict], None] | None = None, progress=None,
        validation: np.ndarray | None = None, croppable: np.ndarray | None = None):
    """Build and train a tokenizer on windows (N, C, P, L) -> (model, per-epoch history).
    ``validation`` windows (M, C, P, L), if any, are scored after every epoch
    (:func:`validation_score`); ``train_config.keep == "best"`` returns the best-scoring epoch's.
    ``croppable`` (N,) bool: with ``random_crop``, which windows may be cropped into their context
    patch (:func:`context_croppable`; None: all)."""
    torch.manual_seed(seed)
    model = TFDualTokenizer(model_config).to(device)
    generator = torch.Generator().manual_seed(seed)
    validate = None
    if validation is not None and len(validation):
        validate = lambda m: validation_score(m, validation, device=device)  # noqa: E731
    history = train(model, torch.from_numpy(np.ascontiguousarray(windows)), train_config,
                    generator=generator, on_epoch=on_epoch, progress=progress, validate=validate,
                    croppable=croppable)
    return model, history


def train_tokenizer(log, x: np.ndarray, prep, *, preset: str, encoder_depth, codebook_size, lr,
                    validation_share: float, model_options: dict, train_options: dict,
                    training_record: dict):
    """What ``tokenize-eeg train`` does with its windows x (N, C, P, L): hold out every
    round(1/validation_share)-th window, resolve the ``auto`` settings from the training patches
    and the device, train, say how the loop ended and check the tokenizer against k-means on the
    held-out windows. ``log`` is the run (info, warn, progress, stopped, seed, device);
    ``training_record`` goes into the stored training metadata. -> (model, artifact metadata
    without the preprocessing)."""
    from cortexkit.tools.eeg.model import config_from_preset, resolve_auto

    fit_index, validation_index = validation_split(len(x), validation_share)
    # random_crop's windows carry one patch of context (N, C, P+1, L); the rest sees P patches.
    # A context patch that is the next (validation) window's first second is never cropped into.
    croppable = context_croppable(fit_index, validation_index)
    x, validation_x = x[fit_index], x[validation_index][:, :, :prep.patches]
    aligned = x[:, :, :prep.patches]
    patches = int(aligned.shape[0] * aligned.shape[1] * aligned.shape[2])
    preset, codebook_size, lr, encoder_depth, chosen = resolve_auto(
        patches, log.device.type, preset, codebook_size, lr, encoder_depth)
    if chosen:
        log.info(f"auto ({patches} training patches, {log.device.type}): {', '.join(chosen)}")
    model_config = config_from_preset(preset, channels=len(prep.channels), max_patches=prep.patches,
                                      depth=encoder_depth, codebook_size=codebook_size, **model_options)
    epochs = train_options["epochs"]
    options = {**train_options, "lr": lr, "warmup_epochs": min(train_options["warmup_epochs"], epochs / 2)}
    if options["signal_weight"] == "auto":
        options["signal_weight"] = signal_weight(aligned)
    train_config = TrainConfig(**options)
    model, history = fit(x, model_config, train_config, seed=log.seed, device=log.device,
                         croppable=croppable if train_config.random_crop else None,
                         on_epoch=lambda e, r: log.info(epoch_line(e, epochs, r)),
                         progress=lambda it, total: log.progress(it, total=total, desc="steps"))
    last = history[-1]
    log.stopped("train", len(history), epochs, "epochs", "completed",
                **{k: round(last[k], 4) for k in ("total", "signal") if k in last})
    validation = _floor_check(log, model, aligned, validation_x)
    return model, {"eeg.model": model_config.to_dict(), "eeg.validation": validation,
                   "eeg.training": {**train_config.to_dict(), "windows": len(x), **training_record,
                                    "last_epoch": last},
                   "eeg.history": history}


def epoch_line(epoch: int, epochs: int, record: dict) -> str:
    parts = [f"{k} {record[k]:.4f}" for k in ("total", "signal", "amplitude", "phase", "ntxent")
             if k in record]
    usage = [f"codes_{s} {record[f'codebook_{s}']['used']} (ppl {record[f'codebook_{s}']['perplexity']:.0f})"
             for s in ("t", "f") if f"codebook_{s}" in record]
    return f"epoch {epoch}/{epochs}: " + ", ".join(parts + usage)


def _floor_check(log, model, x, validation_x):
    """The tokenizer beside k-means on the same patches (validation windows); a warning if it loses."""
    if not len(validation_x):
        log.info("no validation windows (--validation-share 0 or under 4 windows): "
                 "the k-means floor is not checked")
        return None
    out = compare_with_floor(model, x, validation_x, seed=log.seed or 0, device=log.device)
    pairs = ", ".join(f"{k} {out['tokenizer'][k]:.3f} vs {out['kmeans'][k]:.3f}" for k in out["tokenizer"])
    log.info(f"validation ({out['windows']} windows), tokenizer vs k-means on the same patches "
             f"(codebook {model.config.codebook_size}): {pairs} (k-means amplitude read by its "
             f"{out['kmeans_amplitude_readout'].replace('_', ' ')})")
    if out["loses"]:
        log.warn(f"k-means on the same patches reconstructs better ({', '.join(out['loses'])}) "
                 "on the validation windows: train longer (--epochs), on more data, or use "
                 "k-means tokens")
    return out


def validation_score(model: TFDualTokenizer, windows: np.ndarray, *, device="cpu") -> float:
    """What picks the kept epoch: tokens-only time NMSE on ``windows`` (M, C, P, L) for a dual
    tokenizer, the amplitude NMSE for a frequency-only one (lower is better)."""

    class _Batch:
        def __init__(self, x):
            self.x = x

    report = evaluate(model, [_Batch(windows[i:i + 32]) for i in range(0, len(windows), 32)],
                      device=device)["reconstruction"]
    return float(report["time_nmse"] if model.dual else report["amplitude_nmse"])


def signal_weight(windows: np.ndarray) -> float:
    """``--signal-weight auto``: 1 / the mean variance of the patches of ``windows`` (N, C, P, L)
    about their own means, so ``signal_weight * mse(x_hat, x)`` is a time NMSE, on the scale of the
    per-window standardised amplitude and phase terms (unit-free: the same weight in uV or V)."""
    patches = windows.reshape(-1, windows.shape[-1]).astype(np.float64)
    variance = float(patches.var(axis=-1).mean())
    return 1.0 / max(variance, 1e-12)


def state_tensors(model: TFDualTokenizer) -> dict[str, torch.Tensor]:
    """Every parameter and buffer (float32/bool), by state-dict name."""
    return {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}


def from_state(config: TokenizerConfig, tensors: dict[str, torch.Tensor]) -> TFDualTokenizer:
    """A tokenizer (eval mode) from its config and :func:`state_tensors` (strict key match)."""
    model = TFDualTokenizer(config)
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if missing or unexpected:
        raise ValueError(f"tokenizer tensors do not match its config (missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]})")
    return model.eval()


@dataclass
class Encoded:
    """Tokens of every window: token_t/token_f (W, C, P), starts (W,) s, source index (W,),
    labels, and the count of windows with |x| >= 100 uV."""

    token_t: np.ndarray | None
    token_f: np.ndarray
    starts: np.ndarray
    source: np.ndarray
    labels: list[str] = field(default_factory=list)
    high_amplitude: int = 0
    seconds: float = 0.0  # wall time in the model (reading and preprocessing left out)


def encode_windows(model: TFDualTokenizer, batches: Iterable, *, high_amplitude=None,
                   device="cpu", progress=None, precision="fp32") -> Encoded:
    """Stream batches through one encoder pass each -> :class:`Encoded` (``precision``: see
    :meth:`TFDualTokenizer.encode`)."""
    parts: dict[str, list] = {"t": [], "f": [], "starts": [], "source": [], "labels": []}
    high, seconds = 0, 0.0
    for batch in (progress(batches) if progress else batches):
        started = time.perf_counter()
        tokens = analysis.encode(model, torch.from_numpy(batch.x).to(device), precision)
        seconds += time.perf_counter() - started
        for name in ("t", "f"):
            if f"token_{name}" in tokens:
                parts[name].append(tokens[f"token_{name}"].cpu().numpy())
        parts["starts"].append(batch.starts)
        parts["source"].append(np.full(len(batch.x), batch.source_index, dtype=np.int64))
        parts["labels"] += batch.labels
        if high_amplitude is not None:
            high += int(high_amplitude(batch.x).sum())
    if not parts["f"]:
        raise ValueError("no windows to encode")
    dtype = np.int16 if model.config.codebook_size <= 32767 else np.int32
    cat = lambda k: np.concatenate(parts[k]).astype(dtype)  # noqa: E731
    return Encoded(cat("t") if parts["t"] else None, cat("f"), np.concatenate(parts["starts"]),
                   np.concatenate(parts["source"]), parts["labels"], high, seconds)


def decode_tokens(model: TFDualTokenizer, token_t: np.ndarray | None, token_f: np.ndarray, *,
                  batch_size: int = 32, timing: dict | None = None) -> dict[str, np.ndarray]:
    """Tokens (W, C, P) -> signal (W, C, P, L) in 100 uV (dual only), the standardised amplitude
    and phase (W, C, P, L) of the L-point FFT and, for a tokenizer with an amplitude head,
    signal_amplitude (W, C, P, L//2+1): the head's |rfft| of each patch in 100 uV on numpy's
    (unnormalised) rfft scale, clamped at 0, as the tokens-only amplitude check reads it.
    ``timing`` gets ``seconds`` (model time)."""
    out: dict[str, list] = {}
    started = time.perf_counter()
    for i in range(0, len(token_f), batch_size):
        tokens = {"token_f": torch.from_numpy(token_f[i:i + batch_size].astype(np.int64))}
        if model.dual:
            tokens["token_t"] = torch.from_numpy(token_t[i:i + batch_size].astype(np.int64))
        for key, value in analysis.decode(model, tokens).items():
            if key == "signal_amplitude":  # orthonormal -> rfft's scale, the L//2+1 bins
                length = value.shape[-1]
                value = value[..., :length // 2 + 1].clamp_min(0) * math.sqrt(length)
            out.setdefault(key, []).append(value.float().numpy())
    if timing is not None:
        timing["seconds"] = time.perf_counter() - started
    return {k: np.concatenate(v) for k, v in out.items()}


def evaluate(model: TFDualTokenizer, batches: Iterable, *, device="cpu", progress=None,
             timing: dict | None = None) -> dict:
    """Reconstruction metrics and codebook health over streamed windows (``timing`` gets
    ``seconds``, the time in the model)."""
    rec = analysis.Reconstruction(model.config.patch_size)
    tokens_t, tokens_f, n, seconds = [], [], 0, 0.0
    for batch in (progress(batches) if progress else batches):
        x = torch.from_numpy(batch.x).to(device)
        started = time.perf_counter()
        tokens = analysis.encode(model, x)
        decoded = analysis.decode(model, tokens)
        seconds += time.perf_counter() - started
        rec.add(x.cpu(), {k: v.cpu() for k, v in decoded.items()})
        tokens_f.append(tokens["token_f"].cpu().numpy())
        if "token_t" in tokens:
            tokens_t.append(tokens["token_t"].cpu().numpy())
        n += len(batch.x)
    if n == 0:
        raise ValueError("no windows to evaluate")
    if timing is not None:
        timing["seconds"] = seconds
    ema = {"f": model.quantize_f.cluster_size.cpu().numpy()}
    if model.dual:
        ema["t"] = model.quantize_t.cluster_size.cpu().numpy()
    health = analysis.codebook_health(np.concatenate(tokens_t) if tokens_t else None,
                                      np.concatenate(tokens_f), model.config.codebook_size, ema)
    return {"windows": n, "reconstruction": rec.result(model.dual), "codebooks": health}


def features(model: TFDualTokenizer, token_t: np.ndarray | None, token_f: np.ndarray,
             *, parts: tuple[str, ...] = ("hist", "mean")) -> dict[str, np.ndarray]:
    """Per-window feature columns from the tokens (W, C, P) -> {column name: (W,) float32}; the
    groups in ``parts`` are those of :func:`analysis.window_features` (``hist``, ``mean``,
    ``chmean``, ``champ``, ``chpow``), in that order."""
    tokens = {"token_f": torch.from_numpy(token_f.astype(np.int64))}
    if token_t is not None and model.dual:
        tokens["token_t"] = torch.from_numpy(token_t.astype(np.int64))
    return analysis.window_features(model, tokens, parts)


def validation_split(n: int, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, validation) of n windows: every round(1/share)-th window validates (evenly
    spread over the recordings); no validation windows when share is 0 or n < 4."""
    if share <= 0 or n < 4:
        return np.arange(n), np.arange(0)
    step = max(2, int(round(1 / share)))
    validation = np.arange(step // 2, n, step)
    return np.setdiff1d(np.arange(n), validation), validation


def context_croppable(fit_index: np.ndarray, validation_index: np.ndarray) -> np.ndarray:
    """(len(fit_index),) bool: whether each fitted window may be cropped into its context patch.
    Windows are in recording order and a fixed window's context is the first patch of the next
    window, so a window whose next index validates keeps offset 0 (its context patch would be the
    validation window's first second). Conservative at a recording's end (its next window starts
    another recording) and exact for windows that do not overlap (stride = window length)."""
    return ~np.isin(np.asarray(fit_index) + 1, np.asarray(validation_index))


FLOOR_METRICS = ("time_nmse", "amplitude_nmse_signal")


def compare_with_floor(model: TFDualTokenizer, train_x: np.ndarray, validation_x: np.ndarray, *,
                       seed: int = 0, max_patches: int = 8192, iterations: int = 15,
                       device="cpu") -> dict:
    """The tokenizer and the k-means floor of the same codebook size (fitted on at most
    ``max_patches`` random training patches) on the validation windows (M, C, P, L): tokens-only
    time NMSE and amplitude NMSE of each (the k-means amplitude: its best read-out by token id, named in
    ``kmeans_amplitude_readout``), and ``loses``: the metrics where k-means is better."""
    patches = train_x.reshape(-1, 1, 1, train_x.shape[-1])
    if len(patches) > max_patches:
        pick = np.random.default_rng(seed).choice(len(patches), max_patches, replace=False)
        patches = patches[np.sort(pick)]
    floor = kmeans_floor(patches, validation_x, model.config.codebook_size, seed=seed,
                         iterations=iterations)

    class _Batch:
        def __init__(self, x):
            self.x = x

    ours = evaluate(model, [_Batch(validation_x[i:i + 32]) for i in range(0, len(validation_x), 32)],
                    device=device)["reconstruction"]
    # the floor's amplitude: its best read-out from the token id alone (|rfft| of the temporal centroid,
    # exp of the log-amplitude centroid, or each temporal cluster's mean |rfft|: the read-out the
    # tokenizer's own amplitude head gets; RESULTS, eeg20)
    readouts = {"centroid": floor["amplitude_nmse_signal"], "log_amplitude_centroid": floor["amplitude_nmse"],
                "cluster_mean": floor["amplitude_nmse_cluster_mean"]}
    readout = min(readouts, key=readouts.get)
    best_amplitude = readouts[readout]
    if model.dual:
        ours_keys = {"time_nmse": "time_nmse", "amplitude_nmse_signal": "amplitude_nmse_signal"}
        kmeans_values = {"time_nmse": floor["time_nmse"], "amplitude_nmse_signal": best_amplitude}
    else:  # one frequency codebook: its amplitude needs two numbers per window besides the tokens
        ours_keys = {"amplitude_nmse": "amplitude_nmse"}
        kmeans_values = {"amplitude_nmse": best_amplitude}
    keys = tuple(ours_keys)
    out = {"windows": int(len(validation_x)), "kmeans_patches": int(len(patches)),
           "tokenizer": {k: float(ours[ours_keys[k]]) for k in keys},
           "kmeans": {k: float(kmeans_values[k]) for k in keys}, "kmeans_amplitude_readout": readout}
    out["ratio"] = {k: out["tokenizer"][k] / max(out["kmeans"][k], 1e-12) for k in keys}
    out["loses"] = [k for k in keys if out["tokenizer"][k] > out["kmeans"][k]]
    return out
