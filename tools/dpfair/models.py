"""Models trained by RaCO-DP: logistic regression and a ReLU MLP, both giving K logits."""
from __future__ import annotations

import torch
from torch import nn


def build_model(kind: str, n_features: int, n_classes: int, hidden: list[int] | tuple[int, ...] = ()) -> nn.Module:
    """``kind`` 'logistic': Linear(d, K).  'mlp': Linear -> ReLU -> ... -> Linear(K), sizes ``hidden``.

    Input (batch, n_features) -> logits (batch, n_classes).  No batch norm (per-example gradients).
    """
    if kind == "logistic":
        return nn.Sequential(nn.Linear(n_features, n_classes))
    if kind == "mlp":
        if not hidden:
            raise ValueError("an MLP needs at least one hidden layer size")
        layers: list[nn.Module] = []
        prev = n_features
        for h in hidden:
            layers += [nn.Linear(prev, int(h)), nn.ReLU()]
            prev = int(h)
        layers.append(nn.Linear(prev, n_classes))
        return nn.Sequential(*layers)
    raise ValueError(f"unknown model {kind!r}: use 'logistic' or 'mlp'")


def init_zero_(model: nn.Module) -> nn.Module:
    """Zero all parameters (the usual start for private logistic regression)."""
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model
