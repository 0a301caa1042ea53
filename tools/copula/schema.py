"""The copula-model schema, checked on read (see formats/schema.py).

Shapes: ``d`` columns, ``K`` marginal knots in all (``marginals.sizes`` per column, summing to K).
"""

from __future__ import annotations

import json

from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register


def _check(artifact, sizes) -> None:
    import numpy as np

    counts = np.asarray(artifact.tensors["marginals.sizes"])
    if int(counts.sum()) != sizes["K"]:
        raise CortexError(f"{artifact.source}: tensor 'marginals.sizes' sums to {int(counts.sum())}, "
                          f"the knots hold {sizes['K']} (damaged)")
    corr = np.asarray(artifact.tensors["corr"], dtype=np.float64)
    # positive semi-definite: duplicated or comonotone columns give a singular correlation,
    # which the model keeps (with a warning) and regularises with its ridge when used
    if corr.size and (not np.allclose(corr, corr.T, atol=1e-6)
                      or not np.allclose(np.diag(corr), 1.0, atol=1e-6)
                      or np.abs(corr).max() > 1 + 1e-6
                      or np.linalg.eigvalsh((corr + corr.T) / 2).min() < -1e-6):
        raise CortexError(f"{artifact.source}: tensor 'corr' is not a correlation matrix (symmetric, "
                          "unit diagonal, positive semi-definite); damaged or edited file")
    columns = json.loads(artifact.metadata["copula.columns"])
    if not isinstance(columns, list) or len(columns) != sizes["d"]:
        raise CortexError(f"{artifact.source}: metadata copula.columns names {columns!r}, the "
                          f"model has d = {sizes['d']} columns (damaged)")


MODEL = Schema(
    "copula-model", version=2,
    metadata=("copula.columns", "copula.copula", "copula.marginals", "copula.n_train"),
    json_metadata=("copula.columns", "copula.copula", "copula.info", "copula.cdc",
                   "copula.reflection", "copula.column_types", "copula.levels"),
    tensors=(Tensor("marginals.sizes", "int", ("d",), min=1),
             Tensor("marginals.knots_x", "float", ("K",), finite=True),
             Tensor("marginals.knots_u", "float", ("K",), finite=True, min=0),
             Tensor("corr", "float", ("d", "d"), finite=True),
             Tensor("*", "any", finite=True)),
    check=_check)

register(MODEL)
