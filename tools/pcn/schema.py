"""The pcn-model schema, checked on read (see formats/schema.py): the network's description and
finite weights (a diverged run is refused before any evaluation, not scored as NaN)."""

from __future__ import annotations

from cortexkit.formats.schema import Schema, Tensor, register

MODEL = Schema(
    "pcn-model", version=1,
    metadata=("pcn.network", "pcn.method", "pcn.preprocess"),
    json_metadata=("pcn.network", "pcn.method", "pcn.preprocess", "pcn.history"),
    tensors=(Tensor("*", "any", finite=True),))

register(MODEL)
