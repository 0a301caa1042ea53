"""The sweep's picture: test error against the fairness gap, one point per gamma (matplotlib)."""
from __future__ import annotations


def pareto_figure(rows: list[dict]):
    """A matplotlib Figure of ``rows`` (the sweep report's rows: gamma, error, dp_gap or
    max_violation_hard, epsilon)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    gap = "dp_gap" if "dp_gap" in rows[0] else "max_violation_hard"
    ax.plot([r[gap] for r in rows], [r["error"] for r in rows], "o-", label="RaCO-DP")
    for r in rows:
        ax.annotate(f"{r['gamma']:g}", (r[gap], r["error"]), fontsize=7)
    ax.set_xlabel(gap.replace("_", " ") + " (test)")
    ax.set_ylabel("misclassification (test)")
    ax.set_title(f"epsilon {rows[0]['epsilon']:.3g}")
    ax.legend()
    fig.tight_layout()
    return fig
