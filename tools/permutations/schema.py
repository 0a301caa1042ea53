"""The artifact schemas of sample-permutations, checked on read (see formats/schema.py).

Shapes: ``m`` rows, ``n`` items (from metadata ``permutations.n``), ``V`` vocabulary ids.
"""

from __future__ import annotations

from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register

CLASSICAL = {"product": ("log_probs",), "rim": ("log_probs",), "mallows": ("log_probs", "theta"),
             "gmallows": ("log_probs", "theta"), "plackett-luce": ("log_weights",)}
NEURAL = ("ar", "mlm")


def _numpy(value):
    import numpy as np

    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _is_permutation(values, n: int) -> bool:
    import numpy as np

    return np.array_equal(np.sort(values, axis=-1), np.broadcast_to(np.arange(n), values.shape))


def _check_reference(artifact, sizes) -> None:
    if "reference" in artifact.tensors and not _is_permutation(_numpy(artifact.tensors["reference"]),
                                                                sizes["n"]):
        raise CortexError(f"{artifact.source}: tensor 'reference' is not an ordering of the "
                          f"{sizes['n']} items 0..{sizes['n'] - 1}")


def _check_orderings(artifact, sizes) -> None:
    import numpy as np

    x = _numpy(artifact.tensors["orderings"])
    bad = np.flatnonzero(~(np.sort(x, axis=1) == np.arange(sizes["n"])).all(axis=1))
    if bad.size:
        raise CortexError(f"{artifact.source}: row {int(bad[0]) + 1} of 'orderings' is not a "
                          f"permutation of 0..{sizes['n'] - 1} ({bad.size} such row(s))")


def _check_model(artifact, sizes) -> None:
    _check_reference(artifact, sizes)
    kind = artifact.metadata["permutations.model"]
    if kind in NEURAL:
        if not any(name.startswith("net.") for name in artifact.tensors):
            raise CortexError(f"{artifact.source}: {kind} model holds no net.* weights (damaged)")
        if "permutations.net" not in artifact.metadata:
            raise CortexError(f"{artifact.source}: {kind} model lacks metadata permutations.net")
        return
    if kind not in CLASSICAL:
        raise CortexError(f"{artifact.source}: unknown model '{kind}' (this cortexkit knows "
                          f"{', '.join([*CLASSICAL, *NEURAL])}; written by a newer cortexkit?)")
    missing = [t for t in CLASSICAL[kind] if t not in artifact.tensors]
    if missing:
        raise CortexError(f"{artifact.source}: {kind} model lacks tensor(s) {missing} (damaged)")
    if "log_weights" in artifact.tensors and "vocabulary" not in artifact.tensors:
        length = len(_numpy(artifact.tensors["log_weights"]))
        if length != sizes["n"]:
            raise CortexError(f"{artifact.source}: tensor 'log_weights' has {length} weights, "
                              f"the model has n = {sizes['n']} items")


PERMUTATIONS = Schema(
    "permutations", version=1, sizes={"n": "permutations.n"},
    json_metadata=("permutations.items",),
    tensors=(Tensor("orderings", "int", ("m", "n"), min=0, below="n"),
             Tensor("items", "int", ("m", "n"), optional=True),
             Tensor("ratings", "float", ("m", "n"), finite=True, optional=True),
             Tensor("users", "int", ("m",), optional=True),
             Tensor("log_likelihood", "float", ("m",), no_nan=True, optional=True),
             Tensor("expected_metric", "float", ("m",), finite=True, optional=True)),
    check=_check_orderings)

CODES = Schema(
    "permutation-codes", version=1, metadata=("permutations.representation",),
    # the reference first: it fixes n, so codes of another length are named as such
    tensors=(Tensor("reference", "int", ("n",), min=0, below="n"),
             Tensor("codes", "int", ("m", "n"), min=0, below="n")),
    check=_check_reference)

MODEL = Schema(
    "permutation-model", version=1, sizes={"n": "permutations.n"},
    metadata=("permutations.model", "permutations.representation"),
    json_metadata=("permutations.info", "permutations.net", "permutations.items"),
    tensors=(Tensor("reference", "int", ("n",), min=0, below="n"),
             Tensor("log_probs", "float", ("n", "n"), no_nan=True, optional=True),
             Tensor("theta", "float", (None,), finite=True, optional=True),
             Tensor("log_weights", "float", (None,), finite=True, optional=True),
             Tensor("vocabulary", "int", ("V",), optional=True),
             Tensor("net.*", "any", finite=True, optional=True)),
    check=_check_model)

SCORES = Schema("permutation-scores", version=1,
                tensors=(Tensor("log_likelihood", "float", ("m",), no_nan=True),))

register(PERMUTATIONS, CODES, MODEL, SCORES)
