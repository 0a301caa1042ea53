"""Warm start: begin TFDual's training at the k-means floor instead of at a random decoder.

The k-means floor (:mod:`cortexkit.tools.eeg.floor`) codes each 1-s patch by its nearest raw-patch
centroid (temporal) and log-amplitude centroid (frequency). Before the main training, for ``steps``
Adam steps on random batches of the training windows:

* each stream's codebook follows the floor's partition: codeword j is the EMA of the l2-normalised
  head outputs of the patches k-means put in cluster j (no dead-code restart in this phase);
* the encoder and heads learn to put each patch nearest its k-means cluster's codeword
  (cross-entropy over the cosine similarities to the codewords, temperature ``temperature``);
* the decoders learn TFDual's own reconstruction terms (signal, standardised FFT amplitude and
  phase) from the codewords of the floor's clusters (teacher forcing), so decoding a code gives
  its cluster's mean patch: the floor's reconstruction.

Then the usual training starts from there with the paper's losses unchanged (the codebooks are
marked initialised, so the quantizer's own k-means init on the first batch is skipped). Only the
starting point changes.

Shapes: windows ``x`` (N, C, P, L) in 100 uV; tokens are channel-major (token ``c * P + p``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cortexkit.tools.eeg.floor import _log_amplitude, kmeans, nearest
from cortexkit.tools.eeg.losses import amplitude_head_loss, fft_targets, signal_amplitude_loss
from cortexkit.tools.eeg.quantizer import l2norm


def floor_assignments(x: torch.Tensor, k: int, *, generator: torch.Generator,
                      max_patches: int = 4096, iterations: int = 8) -> dict[str, torch.Tensor]:
    """k-means of the patches of ``x`` (N, C, P, L) (fitted on at most ``max_patches`` random
    patches), raw (stream ``t``) and log|rfft| (stream ``f``) -> {stream: cluster index (N, C*P)}."""
    n, c, p, length = x.shape
    patches = x.reshape(-1, length).float()
    fit = patches
    if len(patches) > max_patches:
        fit = patches[torch.randperm(len(patches), generator=generator)[:max_patches]]
    out = {}
    for stream, transform in (("t", lambda a: a), ("f", _log_amplitude)):
        centroids = kmeans(transform(fit), k, iterations=iterations, generator=generator)
        out[stream] = nearest(transform(patches), centroids)[0].reshape(n, c * p)
    return out


def warm_start(model, x: torch.Tensor, *, steps: int, batch_size: int, lr: float,
               generator: torch.Generator, temperature: float = 0.1,
               kmeans_patches: int = 4096, kmeans_iterations: int = 8,
               signal_amplitude_weight: float = 0.0) -> dict[str, float]:
    """Pre-fit ``model`` in place on windows ``x`` (N, C, P, L) so that its tokens follow the
    k-means floor's partition and its decoders reproduce the floor's centroids; returns the last
    step's terms and the share of training patches whose nearest codeword is their cluster's.
    ``signal_amplitude_weight`` > 0 adds the training's optional amplitude-spectrum term on the
    decoded signal (:func:`losses.signal_amplitude_loss`) at that weight, as in the training."""
    device = next(model.parameters()).device
    n, c, p, _ = x.shape
    streams = ("t", "f") if model.dual else ("f",)
    assign = floor_assignments(x, model.config.codebook_size, generator=generator,
                               max_patches=kmeans_patches, iterations=kmeans_iterations)
    quantizers = {s: getattr(model, f"quantize_{s}") for s in streams}
    heads = {s: getattr(model, f"head_{s}") for s in streams}
    model.train()
    with torch.no_grad():  # codewords start as the cluster means of the initial head outputs
        sums = {s: torch.zeros_like(q.embedding) for s, q in quantizers.items()}
        for start in range(0, n, 64):
            features = model.encoder(x[start:start + 64].to(device))
            for s in streams:
                z = l2norm(heads[s](features)).reshape(-1, model.config.code_dim)
                sums[s].index_add_(0, assign[s][start:start + 64].reshape(-1).to(device), z.float())
        for s, q in quantizers.items():
            used = sums[s].norm(dim=-1) > 0
            q.embedding.copy_(torch.where(used[:, None], l2norm(sums[s]), q.embedding))
            q.initted.fill_(True)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    terms: dict[str, float] = {}
    for _ in range(steps):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=generator)
        batch = x[idx].to(device)
        features = model.encoder(batch)
        loss, codes = 0.0, {}
        for s in streams:
            target = assign[s][idx].to(device).reshape(-1)
            z = l2norm(heads[s](features).float()).reshape(-1, model.config.code_dim)
            embedding = quantizers[s].embedding.clone()  # the EMA below moves it in place
            ce = F.cross_entropy(z @ embedding.t() / temperature, target)
            loss = loss + ce
            terms[f"ce_{s}"] = float(ce.detach())
            codes[s] = embedding[target].reshape(len(idx), c * p, -1)
            with torch.no_grad():  # the codeword of cluster j tracks its patches' mean direction
                q = quantizers[s]
                counts = torch.bincount(target, minlength=q.size).to(z.dtype)
                sums_s = torch.zeros_like(q.embedding).index_add_(0, target, z.detach())
                moved = l2norm(q.decay * q.embedding + (1 - q.decay) * l2norm(sums_s))
                q.embedding.copy_(torch.where((counts > 0)[:, None], moved, q.embedding))
        recon = model.decode(codes, c, p)
        amplitude, phase = fft_targets(batch)
        recon_terms = {"amplitude": F.mse_loss(recon["amplitude"].float(), amplitude),
                       "phase": F.mse_loss(recon["phase"].float(), phase)}
        if model.dual:
            recon_terms["signal"] = F.mse_loss(recon["signal"].float(), batch.float())
            if "signal_amplitude" in recon:  # the amplitude head, as in the training
                recon_terms["amplitude_head"] = amplitude_head_loss(recon["signal_amplitude"], batch)
        for key, value in recon_terms.items():
            loss = loss + value
            terms[key] = float(value.detach())
        if model.dual and signal_amplitude_weight > 0:
            value = signal_amplitude_loss(recon["signal"], batch)
            loss = loss + signal_amplitude_weight * value
            terms["signal_amplitude"] = float(value.detach())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    with torch.no_grad():  # EMA usage as if each code had been used at its cluster's rate
        patches_per_batch = min(batch_size, n) * c * p
        for s, q in quantizers.items():
            counts = torch.bincount(assign[s].reshape(-1), minlength=q.size).float()
            expected = counts * patches_per_batch / counts.sum()
            q.cluster_size.copy_(expected.clamp_min(q.dead_code_threshold).to(q.cluster_size))
        agree = {}
        for s in streams:
            hits = 0
            for start in range(0, n, 64):
                features = model.encoder(x[start:start + 64].to(device))
                z = l2norm(heads[s](features).float()).reshape(-1, model.config.code_dim)
                hits += int((quantizers[s].nearest(z).cpu()
                             == assign[s][start:start + 64].reshape(-1)).sum())
            agree[f"agreement_{s}"] = hits / assign[s].numel()
    return {**terms, **agree, "steps": steps}

