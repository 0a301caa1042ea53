"""Encoding, decoding, reconstruction metrics, codebook health and per-window features.

Definitions (shared with the benchmarks and the k-means floor):

* time NMSE = sum (x_hat - x)^2 / sum (x - mean_patch(x))^2 over all patches;
* amplitude NMSE: the same on |rfft(patch)| (101 bins), with the amplitude prediction of the
  frequency decoder brought back from its per-window standardisation with the window's own mean
  and std of the full-FFT amplitude (two numbers per window); ``amplitude_nmse_signal`` uses
  |rfft(x_hat)| of the temporal reconstruction instead (no side information);
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
                                      "phase", "phase_n")}

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
            amp_sig = torch.fft.rfft(signal, dim=-1).abs()
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


def window_features(model, tokens: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Per window: token histograms (share of the C*P patches per code) and mean quantized vectors.
    token_s (W, C, P) -> hist_s (W, K) float32 and mean_s (W, code_dim) float32."""
    size = model.config.codebook_size
    out = {}
    codes = model.codewords(tokens)
    for name in (("t", "f") if model.dual else ("f",)):
        tok = tokens[f"token_{name}"].reshape(tokens[f"token_{name}"].shape[0], -1).long()
        hist = torch.zeros(tok.shape[0], size).scatter_add_(1, tok, torch.ones_like(tok, dtype=torch.float32))
        out[f"hist_{name}"] = (hist / tok.shape[1]).numpy()
        out[f"mean_{name}"] = codes[name].float().mean(dim=1).numpy()
    return out
