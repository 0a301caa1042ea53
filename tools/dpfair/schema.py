"""The artifact schemas of dp-fairness-train, checked on read (see formats/schema.py).

Shapes: ``K`` constraints (dual variables), ``m`` rows, ``C`` classes.
"""

from __future__ import annotations

import json

from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register

MODEL_VERSION = 1


def _layers(artifact, prefix: str) -> list[tuple[int, tuple]]:
    """(layer index, weight shape) of the ``prefix``.N.weight tensors, in layer order."""
    out = []
    for name, value in artifact.tensors.items():
        parts = name.split(".")
        if name.startswith(prefix + ".") and parts[-1] == "weight" and parts[-2].isdigit():
            out.append((int(parts[-2]), tuple(value.shape)))
    return sorted(out)


def _check_model(artifact, sizes) -> None:
    name = artifact.source
    model = json.loads(artifact.metadata["dpfair.model"])
    if not isinstance(model, dict) or not isinstance(model.get("n_features"), int) \
            or not isinstance(model.get("classes"), list):
        raise CortexError(f"{name}: metadata dpfair.model lacks n_features or classes (damaged)")
    for prefix in ("last", "average"):
        layers = _layers(artifact, prefix)
        if not layers:
            raise CortexError(f"{name}: dpfair-model holds no {prefix}.*.weight tensors (damaged)")
        first, last = layers[0][1], layers[-1][1]
        if len(first) != 2 or first[1] != model["n_features"]:
            raise CortexError(f"{name}: tensor '{prefix}.{layers[0][0]}.weight' has shape "
                              f"{list(first)}, the model reads {model['n_features']} features")
        if last[0] != len(model["classes"]):
            raise CortexError(f"{name}: tensor '{prefix}.{layers[-1][0]}.weight' has shape "
                              f"{list(last)}, the model has {len(model['classes'])} classes")
    lasts = {k[5:]: tuple(v.shape) for k, v in artifact.tensors.items() if k.startswith("last.")}
    avgs = {k[8:]: tuple(v.shape) for k, v in artifact.tensors.items() if k.startswith("average.")}
    if lasts != avgs:
        raise CortexError(f"{name}: the last.* and average.* weights differ in names or shapes")


MODEL = Schema(
    "dpfair-model", version=MODEL_VERSION,
    metadata=("dpfair.model", "dpfair.encoder", "dpfair.ledger"),
    json_metadata=("dpfair.model", "dpfair.encoder", "dpfair.ledger", "dpfair.constraints"),
    tensors=(Tensor("last.*", "float", finite=True), Tensor("average.*", "float", finite=True),
             Tensor("dual.last", "float", ("K",), finite=True, min=0),
             Tensor("dual.average", "float", ("K",), finite=True, min=0)),
    check=_check_model)

PREDICTIONS = Schema(
    "dpfair-predictions", version=1,
    tensors=(Tensor("labels", "int", ("m",), min=0, below="C"),
             Tensor("probabilities", "float", ("m", "C"), finite=True, min=0)))

register(MODEL, PREDICTIONS)
