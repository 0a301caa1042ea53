"""Turning estimators into named tensors + metadata and back (the npe-posterior artifact's layout).

Tensors: ``member{m}.<state_dict key>`` for each ensemble member m (flow weights, the x
standardiser ``standardizer.mean``/``standardizer.std`` and embedding weights). Metadata (JSON):
``npe.prior`` (the prior spec), ``npe.flow`` (architecture), ``npe.x_dim``, ``npe.members``.
"""
from __future__ import annotations

import torch

from .estimator import EnsemblePosterior, FlowConfig, PosteriorEstimator
from .priors import Prior


def posterior_tensors(posterior: EnsemblePosterior) -> dict[str, torch.Tensor]:
    out = {}
    for m, member in enumerate(posterior.members):
        for key, value in member.state_dict().items():
            if value is None:
                continue
            out[f"member{m}.{key}"] = value.detach().clone().contiguous()
    return out


def posterior_metadata(posterior: EnsemblePosterior) -> dict:
    first = posterior.members[0]
    return {"npe.prior": first.prior.to_spec(), "npe.flow": first.cfg.as_dict(), "npe.x_dim": first.x_dim,
            "npe.members": len(posterior.members), "npe.parameter_names": first.prior.names}


def posterior_from(tensors: dict[str, torch.Tensor], meta: dict) -> EnsemblePosterior:
    """Rebuild the ensemble from :func:`posterior_tensors` output and the decoded metadata."""
    prior = Prior.from_spec(meta["npe.prior"])
    cfg = FlowConfig(**meta["npe.flow"])
    members = []
    for m in range(int(meta["npe.members"])):
        est = PosteriorEstimator(prior, int(meta["npe.x_dim"]), cfg)
        prefix = f"member{m}."
        state = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
        est.load_state_dict(state, strict=True)
        est.eval()
        members.append(est)
    return EnsemblePosterior(members)
