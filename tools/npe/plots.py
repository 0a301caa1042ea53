"""Figures for `simulate-npe evaluate --plot`: a pair plot of posterior samples against reference
samples, and SBC rank histograms with the band expected under calibration. Needs matplotlib
(the `[plot]` extra); callers check for it before doing any work."""
from __future__ import annotations

import numpy as np
import torch


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def pair_plot(path: str, samples: torch.Tensor, reference: torch.Tensor, names: list[str], title: str = "") -> None:
    """d x d grid: 1-D histograms on the diagonal (shared bins), 2-D scatter below it."""
    plt = _pyplot()
    s = samples.numpy()
    r = reference.numpy()
    d = s.shape[1]
    both = np.concatenate([s, r])
    lo, hi = both.min(0), both.max(0)
    pad = 0.02 * np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad, hi + pad
    size = min(2.2 * d, 12)
    fig, axes = plt.subplots(d, d, figsize=(size + 0.6, size), squeeze=False)
    for i in range(d):
        for j in range(d):
            ax = axes[i, j]
            if j > i:
                ax.axis("off")
                continue
            if i == j:
                bins = np.linspace(lo[i], hi[i], 41)
                ax.hist(r[:, i], bins=bins, density=True, histtype="step", color="0.3", label="reference")
                ax.hist(s[:, i], bins=bins, density=True, alpha=0.55, color="C0", label="samples")
                ax.set_yticks([])
            else:
                ax.scatter(r[:, j], r[:, i], s=2, color="0.3", alpha=0.25, linewidths=0)
                ax.scatter(s[:, j], s[:, i], s=2, color="C0", alpha=0.25, linewidths=0)
                ax.set_ylim(lo[i], hi[i])
            ax.set_xlim(lo[j], hi[j])
            if i == d - 1:
                ax.set_xlabel(names[j])
            if j == 0 and i > 0:
                ax.set_ylabel(names[i])
    axes[0, 0].legend(fontsize=7, loc="upper right", frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def sbc_plot(path: str, ranks: torch.Tensor, n_samples: int, names: list[str]) -> None:
    """One rank histogram per parameter, with the central 99% band of a bin count under uniform
    ranks (Talts et al. 2018): bars leaving the band mark miscalibration."""
    from scipy import stats

    plt = _pyplot()
    r = ranks.numpy()
    n, d = r.shape
    bins = min(20, n_samples + 1)
    edges = np.linspace(-0.5, n_samples + 0.5, bins + 1)
    p = 1.0 / bins
    band = stats.binom.ppf([0.005, 0.995], n, p)
    fig, axes = plt.subplots(1, d, figsize=(min(2.6 * d, 14), 2.4), squeeze=False)
    for j in range(d):
        ax = axes[0, j]
        ax.hist(r[:, j], bins=edges, color="C0", alpha=0.7, zorder=1)
        ax.axhspan(band[0], band[1], color="0.4", alpha=0.2, lw=0, zorder=2)
        ax.axhline(n * p, color="0.3", lw=0.8, zorder=3)
        ax.set_xlabel(f"rank of {names[j]}")
        ax.set_xlim(edges[0], edges[-1])
    axes[0, 0].set_ylabel(f"count ({n} pairs)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
