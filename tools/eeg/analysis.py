"""Encoding, decoding, reconstruction metrics, codebook health and per-window features.

Definitions (shared with the benchmarks and the k-means floor):

* time NMSE = sum (x_hat - x)^2 / sum (x - mean_patch(x))^2 over all patches;
* amplitude NMSE: the same on |rfft(patch)| (101 bins), with the amplitude prediction of the
  frequency decoder brought back from its per-window standardisation with the window's own mean
  and std of the full-FFT amplitude (two numbers per window); ``amplitude_nmse_signal`` is the
  tokens-only amplitude (no side information): |rfft(x_hat)| of the temporal reconstruction, or,
  for a tokenizer with an amplitude head (``TokenizerConfig.amplitude_head``), that head's
  prediction (clamped at 0, brought from the orthonormal to rfft's scale); ``amplitude_nmse_signal_rfft``
  is always |rfft(x_hat)|;
* phase error = mean (1 - cos(phi_hat - phi)) over the rfft bins;
* codes used, perplexity exp(H), dead codes (EMA usage below 1e-3 of the mean), joint pairs,
  mutual information I(token_t; token_f) in nats.
"""

from __future__ import annotations

import math

import numpy as np
import torch


@torch.inference_mode()
def encode(model, x: torch.Tensor, precision: str = "fp32") -> dict[str, torch.Tensor]:
    """x (B, C, P, L) -> token_t, token_f (B, C, P) int64 (eval mode, deterministic)."""
    model.eval()
    return model.encode(x, precision)


@torch.inference_mode()
def decode(model, tokens: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """token_t/token_f (B, C, P) -> signal (B, C, P, L) in 100 uV and the standardised amplitude
    and phase of the L-point FFT (B, C, P, L)."""
    model.eval()
    b, c, p = tokens["token_f"].shape
    return model.decode(model.codewords(tokens), c, p)


def unstandardise(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Undo the per-window standardisation of ``pred`` with ``target``'s mean and unbiased std."""
    mean = target.mean(dim=(1, 2, 3), keepdim=True)
    std = target.std(dim=(1, 2, 3), keepdim=True)
    return pred * std + mean


class Reconstruction:
    """Accumulates the reconstruction sums over batches."""

    def __init__(self, patch_size: int):
        self.half = patch_size // 2 + 1
        self.sums = {k: 0.0 for k in ("time_err", "time_var", "amp_err", "amp_var", "amp_sig_err",
                                      "amp_rfft_err", "phase", "phase_n")}

    def add(self, x: torch.Tensor, recon: dict[str, torch.Tensor]) -> None:
        x = x.double()
        centred = x - x.mean(dim=-1, keepdim=True)
        self.sums["time_var"] += float(centred.pow(2).sum())
        amplitude = torch.fft.rfft(x, dim=-1).abs()
        amp_centred = amplitude - amplitude.mean(dim=-1, keepdim=True)
        self.sums["amp_var"] += float(amp_centred.pow(2).sum())
        if "signal" in recon:
            signal = recon["signal"].double()
            self.sums["time_err"] += float((signal - x).pow(2).sum())
            amp_rfft = torch.fft.rfft(signal, dim=-1).abs()
            self.sums["amp_rfft_err"] += float((amp_rfft - amplitude).pow(2).sum())
            amp_sig = amp_rfft
            if "signal_amplitude" in recon:  # the amplitude head (orthonormal -> rfft's scale)
                amp_sig = (recon["signal_amplitude"].double()[..., :self.half].clamp_min(0)
                           * math.sqrt(x.shape[-1]))
            self.sums["amp_sig_err"] += float((amp_sig - amplitude).pow(2).sum())
        full = torch.fft.fft(x, dim=-1)
        amp_pred = unstandardise(recon["amplitude"].double(), full.abs())[..., :self.half]
        self.sums["amp_err"] += float((amp_pred - amplitude).pow(2).sum())
        phase_pred = unstandardise(recon["phase"].double(), torch.angle(full))[..., :self.half]
        self.sums["phase"] += float((1 - torch.cos(phase_pred - torch.angle(full)[..., :self.half])).sum())
        self.sums["phase_n"] += phase_pred.numel()

    def result(self, dual: bool) -> dict[str, float]:
        s = self.sums
        out = {"amplitude_nmse": s["amp_err"] / max(s["amp_var"], 1e-300),
               "phase_error": s["phase"] / max(s["phase_n"], 1)}
        if dual:
            out["time_nmse"] = s["time_err"] / max(s["time_var"], 1e-300)
            out["amplitude_nmse_signal"] = s["amp_sig_err"] / max(s["amp_var"], 1e-300)
            out["amplitude_nmse_signal_rfft"] = s["amp_rfft_err"] / max(s["amp_var"], 1e-300)
        return out


def codebook_health(tokens_t: np.ndarray | None, tokens_f: np.ndarray, size: int,
                    cluster_size: dict[str, np.ndarray] | None = None) -> dict:
    """Usage per codebook and, with two streams, joint pairs and mutual information (nats)."""
    report = {}
    for name, tok in (("temporal", tokens_t), ("frequency", tokens_f)):
        if tok is None:
            continue
        counts = np.bincount(tok.reshape(-1).astype(np.int64), minlength=size)
        p = counts[counts > 0] / counts.sum()
        entry = {"size": size, "used": int((counts > 0).sum()),
                 "usage": float((counts > 0).mean()),
                 "perplexity": float(math.exp(-(p * np.log(p)).sum()))}
        if cluster_size is not None and name[0] in cluster_size:
            ema = cluster_size[name[0]]
            entry["dead_codes_ema"] = int((ema < 1e-3 * max(ema.mean(), 1e-12)).sum())
        report[name] = entry
    if tokens_t is not None:
        t = tokens_t.reshape(-1).astype(np.int64)
        f = tokens_f.reshape(-1).astype(np.int64)
        joint = np.unique(t * size + f, return_counts=True)[1] / t.size
        pt = np.bincount(t, minlength=size) / t.size
        pf = np.bincount(f, minlength=size) / t.size
        h = lambda p: float(-(p[p > 0] * np.log(p[p > 0])).sum())  # noqa: E731
        report["joint"] = {"pairs_used": int(joint.size), "space": size * size,
                           "mutual_information_nats": h(pt) + h(pf) - h(joint),
                           "normalised_mutual_information": (h(pt) + h(pf) - h(joint))
                           / max(min(h(pt), h(pf)), 1e-12)}
    return report


FEATURE_PARTS = ("hist", "mean", "chmean", "champ", "chpow")
# the classical EEG bands (Hz) of the per-channel spectral parts, on the 1-Hz bins of a 1-s patch
BANDS = (("delta", 0.5, 4.0), ("theta", 4.0, 8.0), ("alpha", 8.0, 13.0), ("beta", 13.0, 30.0),
         ("gamma", 30.0, 45.0))


def _band_means(spectrum: torch.Tensor, sfreq: float) -> torch.Tensor:
    """spectrum (W, C, P, L//2+1) on the rfft bins of an L-sample patch -> (W, bands, C): the mean
    over the window's patches and each band's bins."""
    length = 2 * (spectrum.shape[-1] - 1)
    freqs = np.fft.rfftfreq(length, 1.0 / sfreq)
    return torch.stack([spectrum[..., torch.from_numpy((freqs >= lo) & (freqs < hi))].mean(dim=(2, 3))
                        for _, lo, hi in BANDS], dim=1)


@torch.inference_mode()
def window_features(model, tokens: dict[str, torch.Tensor], parts=("hist", "mean"),
                    sfreq: float = 200.0) -> dict[str, np.ndarray]:
    """Per-window feature columns from the tokens alone, token_s (W, C, P) -> {name: (W,) float32}:

    * ``hist``: hist_s_K, share of the window's C*P patches with code K (K < codebook size);
    * ``mean``: mean_s_D, the quantized vector averaged over all channels and patches (D < code_dim);
    * ``chmean``: chmean_s_C_D, the quantized vector averaged over channel C's patches (where
      ``mean`` pools the channels, this keeps the montage: C is the channel's index in it);
    * ``champ``: champ_BAND_C, the frequency decoder's amplitude of channel C (standardised per
      window, as the decoder is trained) averaged over the band's rfft bins and the patches;
    * ``chpow``: chpow_BAND_C, log10 of the mean power (100 uV)^2 per rfft bin of channel C in the
      band, from the temporal decoder's signal (dual tokenizers only).
    """
    model.eval()
    size = model.config.codebook_size
    w, c, p = tokens["token_f"].shape
    streams = ("t", "f") if model.dual else ("f",)
    codes = model.codewords(tokens)
    out: dict[str, np.ndarray] = {}

    def put(prefix, matrix):  # matrix (W, n) or (W, a, b) -> columns prefix_j or prefix_i_j
        matrix = matrix.float().numpy()
        if matrix.ndim == 2:
            for j in range(matrix.shape[1]):
                out[f"{prefix}_{j}"] = np.ascontiguousarray(matrix[:, j])
            return
        for i in range(matrix.shape[1]):
            for j in range(matrix.shape[2]):
                out[f"{prefix}_{i}_{j}"] = np.ascontiguousarray(matrix[:, i, j])

    for name in streams:
        tok = tokens[f"token_{name}"].reshape(w, -1).long()
        if "hist" in parts:
            hist = torch.zeros(w, size).scatter_add_(1, tok, torch.ones_like(tok, dtype=torch.float32))
            put(f"hist_{name}", hist / tok.shape[1])
        if "mean" in parts:
            put(f"mean_{name}", codes[name].float().mean(dim=1))
    for name in streams:
        if "chmean" in parts:
            put(f"chmean_{name}", codes[name].float().reshape(w, c, p, -1).mean(dim=2))
    if "champ" in parts or ("chpow" in parts and model.dual):
        recon = model.decode(codes, c, p)
        half = recon["amplitude"].shape[-1] // 2 + 1
        if "champ" in parts:
            bands = _band_means(recon["amplitude"].float()[..., :half], sfreq)
            for b, (band, _, _) in enumerate(BANDS):
                put(f"champ_{band}", bands[:, b])
        if "chpow" in parts and model.dual:
            power = torch.fft.rfft(recon["signal"].double(), dim=-1).abs().pow(2)
            bands = torch.log10(_band_means(power, sfreq) + 1e-12)
            for b, (band, _, _) in enumerate(BANDS):
                put(f"chpow_{band}", bands[:, b])
    return out
