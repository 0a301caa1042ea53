"""Reading the permutation tool's inputs from files: models, rows checked against a model,
feature contexts and reference orders (the bytes themselves are parsed in formats/rankings.py)."""

from __future__ import annotations

import torch

from cortexkit.formats.errors import CortexError
from cortexkit.formats.rankings import OrderOptions, Orders, load_orders, read_context, read_reference
from cortexkit.tools.permutations import api
from cortexkit.tools.permutations.model import PermutationModel


def load_model(source, device: torch.device | str = "cpu") -> PermutationModel:
    """A ``permutation-model`` artifact from a path or stdin (``-``)."""
    from cortexkit.formats.artifact import read_artifact

    art = read_artifact(source, "permutation-model")
    return api.model_from_tensors(art.tensors, art.metadata, art.source, device)


def parse_reference(spec: str, n: int) -> torch.Tensor | None:
    """identity | borda (None: left to :func:`api.reference_order`) | FILE (one ordering ``(n,)``)."""
    if spec in ("identity", "borda"):
        return None
    return torch.as_tensor(read_reference(spec, n))


def row_items(model: PermutationModel, orders: Orders, source) -> torch.Tensor | None:
    """Per-row item ids ``(m, n)`` for a conditional model (None for others); checked before work."""
    if model.vocabulary is None:
        return None
    if orders.items is None:
        raise CortexError(f"{source}: the model is conditioned on item ids; give rows with items "
                          "(a rating table, or a permutations artifact with an 'items' tensor)")
    return torch.as_tensor(orders.items)


def model_context(model: PermutationModel, source, rows: int | None) -> torch.Tensor | None:
    """The feature context ``(rows, m, d)`` of a conditional model (None for models that take none)."""
    shape = model.context_shape
    if shape is None:
        if source is not None:
            raise CortexError("--context: the model takes no feature context "
                              "(fit it with --condition features --context FILE)")
        return None
    if source is None:
        raise CortexError(f"the model is conditioned on feature tokens {shape}: give --context FILE")
    ctx = read_context(source, rows)
    if tuple(ctx.shape[1:]) != shape:
        raise CortexError(f"{source}: context rows are {tuple(ctx.shape[1:])} (tokens, features), "
                          f"the model takes {shape}")
    return ctx


def load_rows(model: PermutationModel, source, options: OrderOptions,
              items: bool = True) -> tuple[Orders, torch.Tensor | None]:
    """Orders of ``source`` for ``model`` (the same n) and, with ``items``, the rows' item ids
    when the model needs them."""
    orders = load_orders(source, options)
    n = orders.orderings.shape[1]
    if n != model.n:
        raise CortexError(f"{source}: holds permutations of n = {n} items, the model is for n = {model.n}")
    return orders, row_items(model, orders, source) if items else None


def training_rows(source, options: OrderOptions, condition: str = "none",
                  context_file=None) -> tuple[Orders, torch.Tensor | None]:
    """What ``fit`` trains on: the orders of ``source`` and, with ``condition='features'``, the
    per-row context read from ``context_file``; refuses ``condition='items'`` on rows without item
    ids before any work."""
    orders = load_orders(source, options)
    if condition == "items" and orders.items is None:
        raise CortexError(f"{source}: --condition items needs per-row item ids (a rating table or a "
                          "permutations artifact with an 'items' tensor)")
    context = read_context(context_file, len(orders.orderings)) if condition == "features" else None
    return orders, context


def read_evidence(source, n: int) -> torch.Tensor:
    """Per-row evidence ``(rows, r)`` int64 padded with -1 (``sample --given-file``), checked
    against ``n`` before any work: a safetensors file (any kind) holding a ``given`` tensor, a
    PrefLib file of (incomplete) strict orders (.soi: each order's items on top, one row per
    voter), or a table (CSV, NPY, NPZ, table artifact) of integers, one row per line, -1 (or, in
    CSV, an empty cell) after the revealed items."""
    import numpy as np

    from cortexkit.formats import tables as raw
    from cortexkit.formats.rankings import read_preflib_partial, sniff_orders
    from cortexkit.formats.stdio import display_name, read_bytes
    from cortexkit.formats.table import parse_table
    from cortexkit.tools.permutations import evidence as E

    name = display_name(source)
    data = read_bytes(source)
    if not data:
        raise CortexError(f"{name}: empty input, expected per-row evidence (a 'given' tensor or a table)")
    given = None
    if raw.sniff(data) == "safetensors":
        from cortexkit.formats.artifact import decode

        art = decode(data, name, "np")
        if "given" in art.tensors:
            given = np.asarray(art.tensors["given"])
            if given.dtype.kind not in "iu" or given.ndim not in (1, 2):
                raise CortexError(f"{name}: 'given' must be an integer tensor (rows, r) padded with -1, "
                                  f"got {given.dtype} of shape {list(given.shape)}")
    if given is None and sniff_orders(data, name) == "preflib":  # .soi: each order's top items
        items, given = read_preflib_partial(data, name)
        if items != n:
            raise CortexError(f"{name}: orders of {items} items, the model is for n = {n}")
    if given is None:
        table = parse_table(data, name)
        x = table.matrix(dtype=np.float64, finite=False)
        x = np.where(np.isnan(x), -1.0, x)  # an empty CSV cell is padding
        if not np.isfinite(x).all() or not np.array_equal(x, np.round(x)):
            r, c = map(int, np.argwhere(~np.isfinite(x) | (x != np.round(x)))[0])
            raise CortexError(f"{name}: row {r + 1}, column '{table.names[c]}' holds {x[r, c]}, "
                              "not an item index (give 0-based items, -1 for padding)")
        given = x.astype(np.int64)
    if len(given) == 0:
        raise CortexError(f"{name}: holds no evidence rows")
    return E.check_given(torch.as_tensor(given.astype(np.int64)), n, name)
