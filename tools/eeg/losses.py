"""TFDual's training objective.

    L = L_vq,t + L_vq,f + mse(x_hat, x) + mse(A_hat, std(A)) + mse(phi_hat, std(phi)) + L_NTXent

with A = |FFT_200(x)|, phi = angle(FFT_200(x)) (the full 200-point FFT of each patch, not rfft),
``std`` the per-sample standardisation over (channel, patch, bin) with the unbiased std, and
NT-Xent (tau 0.1) between the encoder features of the two halves (in patches) of each window.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def std_norm(a: torch.Tensor) -> torch.Tensor:
    """Standardise each sample of ``a`` (B, C, P, F) over (C, P, F), unbiased std (torch's)."""
    mean = a.mean(dim=(1, 2, 3), keepdim=True)
    std = a.std(dim=(1, 2, 3), keepdim=True)
    return (a - mean) / std.clamp_min(1e-8)


def fft_targets(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (B, C, P, L) -> standardised amplitude and phase of the L-point FFT, each (B, C, P, L)."""
    spectrum = torch.fft.fft(x.float(), dim=-1)
    return std_norm(spectrum.abs()), std_norm(torch.angle(spectrum))


def nt_xent(a: torch.Tensor, b: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """NT-Xent between views ``a`` and ``b`` (B, D): cosine similarities of the 2B views over tau,
    positives the pairs (a_i, b_i), the other 2B - 2 views negatives; summed CE / 2B."""
    n = a.shape[0]
    z = F.normalize(torch.cat([a, b]).float(), dim=-1)
    logits = z @ z.t() / temperature
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(logits, target, reduction="sum") / (2 * n)


def tokenizer_loss(model, x: torch.Tensor, *, contrastive: bool = True,
                   signal_weight: float = 1.0, phase_weight: float = 1.0) -> dict[str, torch.Tensor]:
    """All terms for a batch x (B, C, P, L); ``total`` is their sum (weights 1, the signal term's
    ``signal_weight``, the phase term's ``phase_weight``; the terms are reported unweighted)."""
    b, c, p, _ = x.shape
    out = model.quantize(x)
    codes = {"f": out["z_q_f"]}
    if model.dual:
        codes["t"] = out["z_q_t"]
    recon = model.decode(codes, c, p)
    amplitude, phase = fft_targets(x)
    terms = {"vq_f": out["loss_f"],
             "amplitude": F.mse_loss(recon["amplitude"].float(), amplitude),
             "phase": F.mse_loss(recon["phase"].float(), phase)}
    if model.dual:
        terms["vq_t"] = out["loss_t"]
        terms["signal"] = F.mse_loss(recon["signal"].float(), x.float())
    if contrastive and b >= 2 and p >= 2:
        half = p // 2
        first = model.encoder(x[:, :, :half]).reshape(b, -1)
        second = model.encoder(x[:, :, half:2 * half]).reshape(b, -1)
        terms["ntxent"] = nt_xent(first, second)
    terms["total"] = sum(terms.values())
    if model.dual and signal_weight != 1.0:
        terms["total"] = terms["total"] + (signal_weight - 1.0) * terms["signal"]
    if phase_weight != 1.0:
        terms["total"] = terms["total"] + (phase_weight - 1.0) * terms["phase"]
    terms["_tokens"] = {k: out[k] for k in ("token_t", "token_f") if k in out}
    return terms
