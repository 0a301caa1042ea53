"""Artifact schemas: what each kind must hold, checked when it is read.

A :class:`Schema` names a kind's tensors (:class:`Tensor`: name, dtype class, shape in symbols,
finite or not, value bounds), the metadata keys it needs, and the sizes the metadata fixes
(``sizes={"n": "permutations.n"}``); shapes written with the same symbol must agree with each
other and with the metadata. :func:`register` makes :func:`~cortexkit.formats.artifact.read_artifact`
check every artifact of that kind on read, so a model with NaN weights, tensors that disagree
with its ``n``, codes of a float dtype, a missing state tensor or a schema version this cortexkit
does not know are one-line errors naming the file and the tensor, before any work.

Each tool declares its kinds' schemas next to its method (``tools/<pkg>/schema.py``), calling
:func:`register` at import; the tool's cli module imports that module::

    MODEL = Schema("permutation-model", version=1, sizes={"n": "permutations.n"},
                   metadata=("permutations.model",),
                   tensors=(Tensor("reference", "int", ("n",), min=0, below="n"),
                            Tensor("net.*", "float", finite=True, optional=True)))
    register(MODEL)

Nothing here imports numpy or torch at import time (``--help`` stays fast).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from cortexkit.formats.errors import CortexError

DTYPES = {"float": "f", "int": "iu", "integer": "iub", "bool": "b", "any": "fiub"}
_WORDS = {"float": "a float", "int": "an integer", "integer": "an integer or boolean",
          "bool": "a boolean", "any": "a numeric"}


@dataclass(frozen=True)
class Tensor:
    """One tensor (or, with a name ending in ``*``, every tensor whose name starts so).

    ``shape``: a tuple of dims, each an int, a symbol bound by the metadata or by the first
    tensor that uses it, or None (any); None for any shape. ``finite``: no NaN or inf;
    ``no_nan``: inf allowed (log-probabilities of impossible events), NaN not. ``min`` and
    ``below`` bound the values (``below`` may be a symbol: codes ``0 <= c < n``)."""

    name: str
    dtype: str = "any"
    shape: tuple | None = None
    finite: bool = False
    no_nan: bool = False
    optional: bool = False
    min: float | None = None
    below: int | str | None = None
    min_open: bool = False  # values must be above ``min`` (a std, a scale: 0 gives NaN)

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}")


@dataclass(frozen=True)
class Schema:
    """What an artifact of ``kind`` (schema ``version`` or older) must hold."""

    kind: str
    version: int = 1
    tensors: tuple[Tensor, ...] = ()
    sizes: dict[str, str] = field(default_factory=dict)
    metadata: tuple[str, ...] = ()
    json_metadata: tuple[str, ...] = ()
    check: Callable[[Any, dict], None] | None = None
    state: Callable[[Any], dict[str, tuple]] | None = None

    """``state``: for a model kind, ``artifact -> {tensor name: shape}`` that the model built
    from the artifact's stored config holds (built without memory, e.g. on torch's ``meta``
    device). On read every such tensor must be there with that shape, and no other under the
    same prefixes: a model whose tensors disagree with its config is a one-line error naming
    the tensor, not a ``size mismatch`` deep in ``load_state_dict``."""

    def validate(self, artifact) -> dict[str, int]:
        """Check ``artifact`` (numpy or torch tensors); returns the bound sizes."""
        check_version(artifact, self.kind, self.version)
        name = artifact.source
        for key in self.metadata + tuple(self.sizes.values()):
            if key not in artifact.metadata:
                raise CortexError(f"{name}: {self.kind} artifact lacks metadata '{key}' "
                                  "(damaged, or not written by cortexkit)")
        for key in self.json_metadata:
            if key in artifact.metadata:
                try:
                    json.loads(artifact.metadata[key])
                except json.JSONDecodeError:
                    raise CortexError(f"{name}: metadata '{key}' is not valid JSON") from None
        sizes = {symbol: _size(artifact, key) for symbol, key in self.sizes.items()}
        for spec in self.tensors:
            for tname in _matching(spec, artifact, self.kind):
                _check_tensor(artifact, tname, spec, sizes, self.kind)
        if self.state is not None:
            check_state(artifact, self.kind, self.state)
        if self.check is not None:
            self.check(artifact, sizes)
        return sizes


def check_state(artifact, kind: str, state: Callable[[Any], dict[str, tuple]]) -> None:
    """The one shape check of a model's tensors against the model its stored config builds."""
    try:
        expected = state(artifact)
    except CortexError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, RuntimeError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise CortexError(f"{artifact.source}: the {kind}'s stored config does not build a model "
                          f"({text}); damaged, or written by another version") from None
    held = artifact.tensors
    for name, shape in expected.items():
        if name not in held:
            raise CortexError(f"{artifact.source}: {kind} artifact has no tensor '{name}', which "
                              "its stored config needs; damaged, or not written by cortexkit")
        got = tuple(held[name].shape)
        if got != tuple(shape):
            raise CortexError(f"{artifact.source}: tensor '{name}' of the {kind} has shape "
                              f"{list(got)}, its stored config needs {list(shape)}; the tensors "
                              "and the config disagree (damaged or edited file)")
    prefixes = {name.split(".")[0] for name in expected}
    extra = sorted(n for n in held if n.split(".")[0] in prefixes and n not in expected)
    if extra:
        raise CortexError(f"{artifact.source}: {kind} artifact holds tensor '{extra[0]}', which "
                          "its stored config has no place for; damaged or edited file")


def check_version(artifact, kind: str, newest: int) -> None:
    """Refuse a version this cortexkit does not know, saying a newer one wrote it."""
    version = artifact.version
    if version is None:
        return
    if not version.isdigit():
        raise CortexError(f"{artifact.source}: '{kind}' schema version {version!r} is not one "
                          "cortexkit writes (damaged metadata?)")
    if int(version) > newest:
        raise CortexError(f"{artifact.source}: '{kind}' schema version {version} was written by "
                          f"a newer cortexkit (this one reads up to {newest}); upgrade cortexkit")


def _size(artifact, key: str) -> int:
    text = artifact.metadata[key]
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CortexError(f"{artifact.source}: metadata '{key}' must be a whole number, "
                          f"got {text!r}")
    return value


def _matching(spec: Tensor, artifact, kind: str) -> list[str]:
    if spec.name.endswith("*"):
        prefix = spec.name[:-1]
        names = sorted(n for n in artifact.tensors if n.startswith(prefix))
    else:
        names = [spec.name] if spec.name in artifact.tensors else []
    if not names and not spec.optional:
        held = ", ".join(sorted(artifact.tensors)) or "none"
        raise CortexError(f"{artifact.source}: {kind} artifact has no tensor '{spec.name}' "
                          f"(it holds: {held}); damaged, or not a {kind}")
    return names


def _numpy(value):
    if type(value).__module__.startswith("torch"):
        import torch

        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.numpy()
    import numpy as np

    return np.asarray(value)


def _check_tensor(artifact, tname: str, spec: Tensor, sizes: dict, kind: str) -> None:
    import numpy as np

    where = f"{artifact.source}: tensor '{tname}' of the {kind}"
    array = _numpy(artifact.tensors[tname])
    if array.dtype.kind not in DTYPES[spec.dtype]:
        raise CortexError(f"{where} is {array.dtype}, expected {_WORDS[spec.dtype]} tensor")
    if spec.shape is not None:
        if array.ndim != len(spec.shape):
            raise CortexError(f"{where} has shape {list(array.shape)}, expected "
                              f"{len(spec.shape)} dimensions {_show(spec.shape)}")
        for axis, (dim, want) in enumerate(zip(array.shape, spec.shape)):
            if want is None:
                continue
            if isinstance(want, str):
                if want not in sizes:
                    sizes[want] = int(dim)
                    continue
                want_value = sizes[want]
            else:
                want_value = want
            if dim != want_value:
                raise CortexError(f"{where} has shape {list(array.shape)}: dimension {axis} is "
                                  f"{dim}, expected {want} = {want_value} {_show(spec.shape)}")
    if array.dtype.kind == "f" and array.size and (spec.finite or spec.no_nan):
        bad = np.isnan(array) if spec.no_nan and not spec.finite else ~np.isfinite(array)
        if bad.any():
            what = "NaN" if spec.no_nan and not spec.finite else "NaN or infinite"
            raise CortexError(f"{where} holds {int(bad.sum())} {what} value(s); the file is "
                              "damaged or came from a diverged run")
    if array.size and spec.min is not None and array.min() < spec.min:
        raise CortexError(f"{where} holds {array.min()}, below the smallest allowed {spec.min}")
    if array.size and spec.min is not None and spec.min_open and array.min() <= spec.min:
        raise CortexError(f"{where} holds {array.min()}, expected values above {spec.min}")
    if array.size and spec.below is not None:
        bound = sizes.get(spec.below) if isinstance(spec.below, str) else spec.below
        if bound is not None and array.max() >= bound:
            raise CortexError(f"{where} holds {array.max()}, expected values below "
                              f"{spec.below} = {bound}")


def _show(shape: tuple) -> str:
    return "(" + ", ".join("*" if d is None else str(d) for d in shape) + ")"


_REGISTRY: dict[str, Schema] = {}


def register(*schemas: Schema) -> None:
    """Check every artifact of these kinds when it is read (the newest registration wins)."""
    for schema in schemas:
        _REGISTRY[schema.kind] = schema


def schema_for(kind: str | None) -> Schema | None:
    return _REGISTRY.get(kind) if kind else None
