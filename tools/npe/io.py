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
    # files from before --theta-map used the logit, files from before --lognormal-map the log map
    cfg = FlowConfig(**{"theta_map": "logit", "lognormal_map": "log", **meta["npe.flow"]})
    members = []
    for m in range(int(meta["npe.members"])):
        est = PosteriorEstimator(prior, int(meta["npe.x_dim"]), cfg)
        prefix = f"member{m}."
        state = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
        est.load_state_dict(state, strict=True)
        est.eval()
        members.append(est)
    return EnsemblePosterior(members)


# ---------------------------------------------------------------------------------------------
# readers of the tool's inputs: prior specs, simulation files, observations, posteriors.
# Each takes what the caller read (an Artifact from formats.artifact, or a path it was handed)
# and raises CortexError with a one-line message naming the source.

SIM_KIND = "npe-simulations"
THETA_KIND = "npe-theta"
POSTERIOR_KIND = "npe-posterior"
SAMPLES_KIND = "npe-samples"
LOGPROB_KIND = "npe-log-prob"
POSTERIOR_META = ("npe.prior", "npe.flow", "npe.x_dim", "npe.members")


def read_prior(prior_path: str | None, task: str | None = None) -> Prior | None:
    """The prior of a YAML spec file (``--prior``), else the built-in task's, else None."""
    from cortexkit.formats.errors import CortexError

    from .tasks import get_task

    if prior_path:
        from pathlib import Path

        from cortexkit.formats.report import read_yaml_file

        if not Path(prior_path).is_file():
            raise CortexError(f"--prior {prior_path}: no such file")
        spec = read_yaml_file(prior_path, f"--prior {prior_path}", expect=None)
        try:
            prior = Prior.from_spec(spec)
        except ValueError as exc:
            raise CortexError(f"--prior {prior_path}: {exc}") from None
        if task:  # a task's simulator reads a fixed number of parameters
            want = get_task(task).prior
            if prior.dim != want.dim:
                raise CortexError(f"--prior {prior_path}: {prior.dim} parameters ({', '.join(prior.names)}), "
                                  f"but task {task} takes {want.dim} ({', '.join(want.names)})")
        return prior
    if task:
        return get_task(task).prior
    return None


def prior_from_artifact(art) -> Prior | None:
    """The prior spec an artifact carries in ``npe.prior`` (None when absent)."""
    spec = art.meta_json("npe.prior")
    return Prior.from_spec(spec) if spec else None


def check_in_prior(source: str, theta: torch.Tensor, prior: Prior, row: str) -> None:
    """theta (n, d) must have the prior's dimension and lie in its support (error names the row)."""
    from cortexkit.formats.errors import CortexError

    if theta.shape[1] != prior.dim:
        raise CortexError(f"{source}: theta has {theta.shape[1]} columns but the prior has {prior.dim} "
                          f"parameters ({', '.join(prior.names)})")
    inside = prior.in_support(theta)
    if not inside.all():
        i = int((~inside).nonzero()[0])
        raise CortexError(f"{source}: {row} {i} has theta {[round(v, 6) for v in theta[i].tolist()]} "
                          "outside the prior")


def simulations_from(art, what: str, prior: Prior | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(theta (n, d), x (n, x_dim)) float32 of a simulations artifact; checks shapes, finiteness and the prior."""
    from cortexkit.formats.errors import CortexError

    if art.kind not in (None, SIM_KIND):
        raise CortexError(f"{art.source}: expected an '{SIM_KIND}' artifact (or a safetensors with theta and x), got '{art.kind}'")
    theta, x = art.tensor("theta").float(), art.tensor("x").float()
    if theta.dim() == 1:
        theta = theta[:, None]
    if theta.dim() != 2 or x.dim() != 2 or theta.shape[0] != x.shape[0]:
        raise CortexError(f"{art.source}: theta {tuple(theta.shape)} and x {tuple(x.shape)} must be (n, d) and (n, x_dim) with the same n")
    if theta.shape[0] < 2:
        raise CortexError(f"{art.source}: {what} holds {theta.shape[0]} simulations; at least 2 are needed")
    bad = ~torch.isfinite(x).all(1)
    if bad.any():
        raise CortexError(f"{art.source}: {what} simulation {int(bad.nonzero()[0])} has non-finite x; drop invalid rows first")
    if prior is not None:
        check_in_prior(art.source, theta, prior, f"{what} simulation")
    return theta, x


def observations_from(art, observation: int | None = None, x_dim: int | None = None) -> torch.Tensor:
    """x_o (n_obs, x_dim) of an observations artifact (tensor x_o or x); one row when ``observation``."""
    from cortexkit.formats.errors import CortexError

    raw = art.tensor("x_o", "x")
    if raw.dtype.is_complex or not raw.dtype.is_floating_point:
        raise CortexError(f"{art.source}: observations must be a float tensor, got {raw.dtype}")
    x_o = raw.float()
    if not torch.isfinite(x_o).all():
        raise CortexError(f"{art.source}: observations hold {int((~torch.isfinite(x_o)).sum())} NaN "
                          "or infinite value(s)")
    if x_o.numel() == 0:
        raise CortexError(f"{art.source}: holds no observations")
    if x_o.dim() == 1:
        x_o = x_o[None]
    if x_o.dim() != 2:
        raise CortexError(f"{art.source}: observations must be (n_obs, x_dim) or (x_dim,), got {tuple(x_o.shape)}")
    if x_dim is not None and x_o.shape[1] != x_dim:
        raise CortexError(f"{art.source}: observations have {x_o.shape[1]} dimensions but the posterior was trained on x of dimension {x_dim}")
    if observation is not None:
        if not 0 <= observation < x_o.shape[0]:
            raise CortexError(f"{art.source}: --observation {observation} out of range (the file holds {x_o.shape[0]} observations, 0-based)")
        return x_o[observation:observation + 1]
    return x_o


def posterior_from_artifact(art) -> EnsemblePosterior:
    """The ensemble of an npe-posterior artifact (read with kind npe-posterior, version <= 1)."""
    return posterior_from(art.tensors, {k: art.meta_json(k) for k in POSTERIOR_META})


def theta_from_artifact(art) -> torch.Tensor:
    """Parameters to simulate: tensor theta (n, d), (n,) or the (n_obs, n, d) of npe-samples, as (N, d)."""
    theta = art.tensor("theta").float()
    if theta.dim() == 3:
        theta = theta.reshape(-1, theta.shape[-1])
    if theta.dim() == 1:
        theta = theta[:, None]
    return theta


def encode_theta(theta: torch.Tensor) -> bytes:
    """The npe-theta artifact an external simulator reads on stdin."""
    from cortexkit.formats.artifact import build_metadata, encode

    return encode({"theta": theta.float().contiguous()}, build_metadata(THETA_KIND, producer="cortexkit simulate-npe"))


def decode_x(data: bytes) -> torch.Tensor:
    """Tensor x of the safetensors an external simulator wrote on stdout."""
    from cortexkit.formats.artifact import decode

    return decode(data, "<simulator stdout>", framework="pt").tensor("x")
