"""The pcn-model schema, checked on read (see formats/schema.py): the network's description and
finite weights (a diverged run is refused before any evaluation, not scored as NaN)."""

from __future__ import annotations

from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register


def _check_preprocess(artifact, sizes) -> None:
    """The stored normalisation: finite means, positive finite stds, one per channel (a std of
    0 would turn every prediction into NaN logits)."""
    import math

    prep = artifact.meta_json("pcn.preprocess")
    mean = prep.get("mean") if isinstance(prep, dict) else None
    std = prep.get("std") if isinstance(prep, dict) else None
    numbers = lambda xs: isinstance(xs, list) and all(  # noqa: E731
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in xs)
    if not numbers(mean) or not numbers(std) or len(mean) != len(std) or not mean \
            or min(std) <= 0:
        raise CortexError(f"{artifact.source}: metadata 'pcn.preprocess' needs one finite mean and "
                          f"one positive std per channel, got {prep!r} (damaged or edited file)")


MODEL = Schema(
    "pcn-model", version=1,
    metadata=("pcn.network", "pcn.method", "pcn.preprocess"),
    json_metadata=("pcn.network", "pcn.method", "pcn.preprocess", "pcn.history"),
    tensors=(Tensor("*", "any", finite=True),),
    check=_check_preprocess)

register(MODEL)
