"""TFDual's training objective.

    L = L_vq,t + L_vq,f + mse(x_hat, x) + mse(A_hat, std(A)) + mse(phi_hat, std(phi)) + L_NTXent

with A = |FFT_200(x)|, phi = angle(FFT_200(x)) (the full 200-point FFT of each patch, not rfft),
``std`` the per-sample standardisation over (channel, patch, bin) with the unbiased std, and
NT-Xent (tau 0.1) between the encoder features of the two halves (in patches) of each window.

Optional, not the paper's: ``signal_amplitude_weight`` w > 0 adds
w * mse(|rfft(x_hat)|, |rfft(x)|) (orthonormal rfft of each patch, so on the scale of the signal
term), the amplitude spectrum of the temporal decoder's output: the tokens-only amplitude that
``analysis.amplitude_nmse_signal`` reads (issue 33, RESULTS.md "Study: the tokens-only amplitude").

Optional, not the paper's: a tokenizer built with ``amplitude_head`` has an amplitude output
(``signal_amplitude``) read from the temporal codes, whose first L//2+1 values are asked for
|rfft(x)| (orthonormal, the scale of :func:`signal_amplitude_loss`) by the term ``amplitude_head``
= mse(output, |rfft(x)|), weight 1: the amplitude spectrum is read from the tokens by an output
trained for it, so the waveform keeps its own (time-MSE) optimum. With ``amplitude_head_detach``
(``train --amplitude-head own``, the CLI default) the output is a decoder of its own on the
detached codes, and the term trains that decoder only; without it, a second head on the temporal
decoder (issue 33, RESULTS.md "Study: an amplitude head").
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def std_norm(a: torch.Tensor) -> torch.Tensor:
    """Standardise each sample of ``a`` (B, C, P, F) over (C, P, F), unbiased std (torch's)."""
    mean = a.mean(dim=(1, 2, 3), keepdim=True)
    std = a.std(dim=(1, 2, 3), keepdim=True)
    return (a - mean) / std.clamp_min(1e-8)


def signal_amplitude_loss(signal: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """mse(|rfft(signal)|, |rfft(x)|) over each patch's L//2+1 bins (orthonormal rfft: summed over
    the full spectrum it is the patch's energy, so this sits on mse(signal, x)'s scale). The
    magnitude is sqrt(|.|^2 + 1e-12), differentiable at 0."""
    pred = torch.fft.rfft(signal.float(), dim=-1, norm="ortho")
    target = torch.fft.rfft(x.float(), dim=-1, norm="ortho").abs()
    return F.mse_loss((pred.real.pow(2) + pred.imag.pow(2) + 1e-12).sqrt(), target)


def amplitude_head_loss(head: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """mse(head[..., :L//2+1], |rfft(x)|) with x (B, C, P, L), head (B, C, P, L): the amplitude
    head's term (orthonormal rfft, the scale of :func:`signal_amplitude_loss`)."""
    target = torch.fft.rfft(x.float(), dim=-1, norm="ortho").abs()
    return F.mse_loss(head[..., :target.shape[-1]].float(), target)


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
                   signal_weight: float = 1.0, phase_weight: float = 1.0,
                   signal_amplitude_weight: float = 0.0) -> dict[str, torch.Tensor]:
    """All terms for a batch x (B, C, P, L); ``total`` is their sum (weights 1, the signal term's
    ``signal_weight``, the phase term's ``phase_weight``, the amplitude head's term where the
    model has one (weight 1), and with ``signal_amplitude_weight`` > 0
    the amplitude spectrum of the decoded signal, :func:`signal_amplitude_loss`, at that weight;
    the terms are reported unweighted)."""
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
        if "signal_amplitude" in recon:
            terms["amplitude_head"] = amplitude_head_loss(recon["signal_amplitude"], x)
    if contrastive and b >= 2 and p >= 2:
        half = p // 2
        first = model.encoder(x[:, :, :half]).reshape(b, -1)
        second = model.encoder(x[:, :, half:2 * half]).reshape(b, -1)
        terms["ntxent"] = nt_xent(first, second)
    terms["total"] = sum(terms.values())
    if model.dual and signal_amplitude_weight > 0:
        terms["signal_amplitude"] = signal_amplitude_loss(recon["signal"], x)
        terms["total"] = terms["total"] + signal_amplitude_weight * terms["signal_amplitude"]
    if model.dual and signal_weight != 1.0:
        terms["total"] = terms["total"] + (signal_weight - 1.0) * terms["signal"]
    if phase_weight != 1.0:
        terms["total"] = terms["total"] + (phase_weight - 1.0) * terms["phase"]
    terms["_tokens"] = {k: out[k] for k in ("token_t", "token_f") if k in out}
    return terms
