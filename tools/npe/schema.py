"""The artifact schemas of simulate-npe, checked on read (see formats/schema.py).

Shapes: ``N`` simulations, ``d`` parameters, ``x_dim`` data dimensions (metadata npe.x_dim for a
posterior), ``k`` observations, ``n`` samples per observation.
"""

from __future__ import annotations

import json

from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register


def _check_members(artifact, sizes) -> None:
    members = json.loads(artifact.metadata["npe.members"])
    if not isinstance(members, int) or members < 1:
        raise CortexError(f"{artifact.source}: metadata npe.members must be a positive count")
    held = {name.split(".", 1)[0] for name in artifact.tensors if name.startswith("member")}
    wanted = {f"member{m}" for m in range(members)}
    if held != wanted:
        raise CortexError(f"{artifact.source}: npe-posterior says {members} member(s) but holds "
                          f"weights of {sorted(held) or 'none'} (damaged)")


SIMULATIONS = Schema(
    "npe-simulations", version=1, json_metadata=("npe.prior", "npe.parameter_names"),
    tensors=(Tensor("theta", "float", ("N", "d"), finite=True),
             Tensor("x", "float", ("N", "x_dim"), finite=True),
             Tensor("index", "int", ("N",), min=0, optional=True),
             Tensor("round", "int", ("N",), min=0, optional=True)))

THETA = Schema("npe-theta", version=1, tensors=(Tensor("theta", "float", ("N", "d"), finite=True),))

POSTERIOR = Schema(
    "npe-posterior", version=1, sizes={"x_dim": "npe.x_dim"},
    metadata=("npe.prior", "npe.flow", "npe.members"),
    json_metadata=("npe.prior", "npe.flow", "npe.members", "npe.history", "npe.parameter_names"),
    tensors=(Tensor("member*", "any", finite=True),
             Tensor("member0.standardizer.mean", "float", ("x_dim",), finite=True),
             Tensor("member0.standardizer.std", "float", ("x_dim",), finite=True, min=0,
                    min_open=True),
             Tensor("x_o", "float", ("x_dim",), finite=True, optional=True),
             Tensor("rounds.theta", "float", ("N", "d"), finite=True, optional=True),
             Tensor("rounds.x", "float", ("N", "x_dim"), finite=True, optional=True),
             Tensor("rounds.round", "int", ("N",), optional=True)),
    check=_check_members)

SAMPLES = Schema(
    "npe-samples", version=1,
    tensors=(Tensor("theta", "float", ("k", "n", "d"), finite=True),
             Tensor("x_o", "float", ("k", "x_dim"), finite=True)))

LOG_PROB = Schema("npe-log-prob", version=1,
                  tensors=(Tensor("log_prob", "float", no_nan=True),))

register(SIMULATIONS, THETA, POSTERIOR, SAMPLES, LOG_PROB)
