"""The artifact contract: safetensors files with cortexkit metadata.

Every tensor artifact carries, in its ``__metadata__`` (string -> string):

``cortexkit.kind``      what the file is (``table``, ``permutations``, ``npe-posterior``, ...)
``cortexkit.version``   schema version of that kind
``cortexkit.producer``  the command line that made it
``cortexkit.config``    the resolved configuration, as YAML

plus tool-specific keys. The file is written by :func:`encode` rather than by the
safetensors library because the library serialises metadata from a hash map in random
order; ours sorts every key so that the same run gives the same bytes. The layout is the
safetensors format exactly (8-byte little-endian header length, JSON header, aligned data),
and tests read our files back with the safetensors library itself.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import yaml

from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import display_name, in_command, read_bytes, write_bytes

KIND = "cortexkit.kind"
VERSION = "cortexkit.version"
PRODUCER = "cortexkit.producer"
CONFIG = "cortexkit.config"

# safetensors dtype tag <-> numpy dtype (BF16 has no numpy dtype: see _bf16_to_float32)
_NUMPY_OF_TAG = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8,
    "BOOL": np.bool_,
}
_TAG_OF_NUMPY = {np.dtype(v).str.lstrip("<>|="): k for k, v in _NUMPY_OF_TAG.items()}
_ITEMSIZE = {"BF16": 2, **{k: np.dtype(v).itemsize for k, v in _NUMPY_OF_TAG.items()}}
_MAX_HEADER = 100 * 1024 * 1024


@dataclass
class Artifact:
    """A decoded artifact: its metadata and its named tensors (numpy arrays or torch tensors)."""

    source: str
    metadata: dict[str, str]
    tensors: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str | None:
        return self.metadata.get(KIND)

    @property
    def version(self) -> str | None:
        return self.metadata.get(VERSION)

    @property
    def producer(self) -> str | None:
        return self.metadata.get(PRODUCER)

    @property
    def config(self) -> dict:
        text = self.metadata.get(CONFIG)
        if not text:
            return {}
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            raise CortexError(f"{self.source}: metadata '{CONFIG}' is not readable YAML "
                              "(damaged file)") from None
        if value is not None and not isinstance(value, dict):
            raise CortexError(f"{self.source}: metadata '{CONFIG}' is not a mapping "
                              "(damaged file)")
        return value or {}

    def meta_json(self, key: str, default: Any = None) -> Any:
        """A tool-specific metadata value that was stored as JSON."""
        text = self.metadata.get(key)
        if text is None:
            return default
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise CortexError(f"{self.source}: metadata '{key}' is not valid JSON "
                              "(damaged file)") from None

    def tensor(self, *names: str):
        """The first tensor of ``names`` that the artifact holds (``tensor("x_o", "x")``), or a
        clear error naming what it does hold."""
        for name in names:
            if name in self.tensors:
                return self.tensors[name]
        held = ", ".join(sorted(self.tensors)) or "none"
        wanted = " or ".join(f"'{n}'" for n in names)
        raise CortexError(f"{self.source}: {self.kind or 'artifact'} has no tensor {wanted} "
                          f"(it holds: {held})")


# ---------------------------------------------------------------------------------------------
# encoding

def _as_numpy(value: Any) -> tuple[str, np.ndarray]:
    """(safetensors dtype tag, C-contiguous numpy array) for a numpy array or torch tensor."""
    if type(value).__module__.startswith("torch"):
        import torch

        tensor = value.detach().cpu().contiguous()
        if tensor.dtype == torch.bfloat16:
            return "BF16", tensor.view(torch.int16).numpy().view(np.uint16)
        value = tensor.numpy()
    array = np.asarray(value)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        array = array.copy(order="C")
    tag = _TAG_OF_NUMPY.get(array.dtype.str.lstrip("<>|="))
    if tag is None:
        raise CortexError(f"cannot store dtype {array.dtype} in an artifact")
    return tag, array.astype(array.dtype.newbyteorder("<"), copy=False)


def encode(tensors: dict[str, Any], metadata: dict[str, str]) -> bytes:
    """Serialise to safetensors bytes, deterministically (sorted names and metadata keys)."""
    header: dict[str, Any] = {"__metadata__": {k: metadata[k] for k in sorted(metadata)}}
    chunks, offset = [], 0
    for name in sorted(tensors):
        tag, array = _as_numpy(tensors[name])
        raw = array.tobytes()
        header[name] = {"dtype": tag, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"), sort_keys=False).encode("utf-8")
    text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned, as the library does
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def build_metadata(kind: str, *, version: str = "1", producer: str = "", config: dict | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, str]:
    """The metadata dict of the contract; ``extra`` values that are not strings become JSON."""
    meta = {KIND: kind, VERSION: str(version), PRODUCER: producer,
            CONFIG: yaml.safe_dump(config or {}, sort_keys=True)}
    for key, value in (extra or {}).items():
        meta[key] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return meta


def write_artifact(target: str | os.PathLike | None, tensors: dict[str, Any], kind: str, *,
                   version: str = "1", producer: str = "", config: dict | None = None,
                   metadata: dict[str, Any] | None = None, now: bool = False) -> None:
    """Write an artifact to a file or to stdout for ``-``/None (staged inside a command unless
    ``now``; see :func:`cortexkit.formats.stdio.write_bytes`)."""
    if not tensors:
        raise CortexError(f"refusing to write an empty '{kind}' artifact (no tensors)")
    from cortexkit.formats.stdio import TEXT_FORMATS, suffix_format

    fmt = suffix_format(target)
    if fmt != "safetensors":  # the name promises another format: keep the promise or refuse
        write_bytes(target, encode_as(tensors, kind, fmt, str(target)),
                    binary=fmt not in TEXT_FORMATS, now=now)
        return
    meta = build_metadata(kind, version=version, producer=producer, config=config, extra=metadata)
    from cortexkit.formats.schema import schema_for

    schema = schema_for(kind) if in_command() else None
    if schema is not None:  # a command never writes what a reader would refuse (NaN weights)
        name = "stdout" if target is None or str(target) == "-" else str(target)
        schema.validate(Artifact(f"refusing to write {name}", meta, dict(tensors)))
    write_bytes(target, encode(tensors, meta), now=now)


def encode_as(tensors: dict[str, Any], kind: str, fmt: str, name: str) -> bytes:
    """An artifact's tensors in ``fmt`` (its metadata stays behind): NPZ holds every tensor,
    NPY one; CSV, TSV, YAML and JSON hold tensors that share a row count, as a wide table.
    Anything else is a one-line error naming ``cortexkit convert``."""
    from cortexkit.formats import table as T
    from cortexkit.formats import tables

    arrays = {k: _as_numpy(v)[1] for k, v in tensors.items()}
    if fmt == "npz":
        return tables.write_npz(arrays)
    if fmt == "npy":
        if len(arrays) != 1:
            raise CortexError(f"{name}: a '{kind}' artifact holds {len(arrays)} tensors "
                              f"({', '.join(sorted(arrays))}), NPY holds one; name the file .npz, "
                              "or write safetensors and take one out with 'cortexkit convert "
                              "FILE.st --tensor NAME OUT.npy'")
        return tables.write_npy(next(iter(arrays.values())))
    return T.encode_table(T.from_tensors(arrays, name), fmt)


# ---------------------------------------------------------------------------------------------
# decoding

def _bf16_to_float32(raw: np.ndarray) -> np.ndarray:
    return (raw.astype(np.uint32) << 16).view(np.float32)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**62


def what_it_is(data: bytes) -> str | None:
    """What non-safetensors bytes look like (``"a CSV table"``), or None when not recognised."""
    head = data[:4096]
    if head.startswith(b"\x93NUMPY"):
        return "an NPY array"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (NPZ)"
    if head.startswith(b"\x1f\x8b"):
        return "a gzip file"
    if head.startswith(b"\x89HDF"):
        return "an HDF5 file"
    if head.startswith(b"\x89PNG") or head.startswith(b"\xff\xd8\xff"):
        return "an image"
    if len(data) >= 9 and data[8:9] == b"{":
        return None  # safetensors-shaped: let the header checks speak
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = head[:-4].decode("utf-8", "replace") if b"\x00" not in head else ""
        if not text or "\ufffd" in text:
            return None
    if "\x00" in text:
        return None
    lines = [line for line in text.splitlines() if line.strip()][:5]
    if not lines:
        return "a blank text file"
    first = lines[0].lstrip()
    if first.startswith(("{", "[")):
        return "JSON text"
    if len(lines) > 1 and all(line.count("\t") == lines[0].count("\t") > 0 for line in lines):
        return "a TSV table"
    if len(lines) > 1 and all(line.count(",") >= 1 for line in lines):
        return "a CSV table"
    if first.startswith("---") or all(":" in line for line in lines):
        return "a YAML file"
    return "a text file"


def _not_an_artifact(name: str, data: bytes) -> CortexError | None:
    """The error for input that is recognisably something else, naming what converts it."""
    what = what_it_is(data)
    if what is None:
        return None
    shown = "FILE" if name == "<stdin>" else name
    if what in ("an NPY array", "a zip archive (NPZ)", "a CSV table", "a TSV table"):
        hint = (f"; tools that take tables read it as it is, and 'cortexkit convert {shown} "
                "OUT.st' makes it an artifact")
    elif what == "a YAML file":
        hint = " (a config? give it with --config FILE.yaml)"
    else:
        hint = ""
    return CortexError(f"{name}: {what}, not a safetensors artifact{hint}")


def decode_header(data: bytes, name: str) -> tuple[dict, dict[str, str], int]:
    """Validate the safetensors layout; return (tensor entries, metadata, data start)."""
    what = f"{name}: not a safetensors artifact"
    if len(data) == 0:
        raise CortexError(f"{name}: empty input, expected a safetensors artifact")
    other = _not_an_artifact(name, data)
    if other is not None:
        raise other
    if len(data) < 8:
        raise CortexError(f"{what} (only {len(data)} bytes)")
    (length,) = struct.unpack("<Q", data[:8])
    if length > _MAX_HEADER or 8 + length > len(data):
        raise CortexError(f"{what} or truncated (header of {length} bytes, file of {len(data)})")
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CortexError(f"{what} (header is not JSON)") from None
    if not isinstance(header, dict):
        raise CortexError(f"{what} (header is not a JSON object)")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise CortexError(f"{name}: malformed __metadata__ (must map strings to strings)")
    start, size = 8 + length, len(data) - 8 - length
    for tname, entry in header.items():
        try:
            tag, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
            if not isinstance(shape, list) or not all(_whole(v) for v in [*shape, begin, end]):
                raise TypeError("shape and offsets must be whole numbers")
            count = int(np.prod(shape, dtype=np.int64))
        except (KeyError, TypeError, ValueError):
            raise CortexError(f"{name}: malformed header entry for tensor '{tname}' (dtype, shape"
                              " and data_offsets must be a tag and whole numbers)") from None
        if tag not in _ITEMSIZE:
            raise CortexError(f"{name}: tensor '{tname}' has unsupported dtype {tag}")
        if not 0 <= begin <= end or end - begin != count * _ITEMSIZE[tag]:
            raise CortexError(f"{name}: tensor '{tname}' has inconsistent offsets")
        if end > size:
            raise CortexError(f"{name}: truncated (tensor '{tname}' runs past the end of the data)")
    return header, metadata, start


def decode(data: bytes, name: str = "<bytes>", framework: str = "np") -> Artifact:
    """Decode safetensors bytes into an :class:`Artifact` of numpy arrays or torch tensors."""
    header, metadata, start = decode_header(data, name)
    arrays: dict[str, np.ndarray] = {}
    for tname, entry in header.items():
        begin, end = entry["data_offsets"]
        tag = entry["dtype"]
        raw = np.frombuffer(data, dtype=np.uint16 if tag == "BF16" else _NUMPY_OF_TAG[tag],
                            count=(end - begin) // _ITEMSIZE[tag], offset=start + begin)
        arrays[tname] = raw.reshape(entry["shape"])
        if tag == "BF16" and framework == "np":
            arrays[tname] = _bf16_to_float32(arrays[tname])
    if framework == "np":
        return Artifact(name, metadata, {k: v.copy() for k, v in arrays.items()})
    if framework != "pt":
        raise ValueError(f"framework must be 'np' or 'pt', not {framework!r}")
    import torch

    tensors = {}
    for tname, array in arrays.items():
        if header[tname]["dtype"] == "BF16":
            tensors[tname] = torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
        else:
            tensors[tname] = torch.from_numpy(array.copy())
    return Artifact(name, metadata, tensors)


def _kinds(kind: str | Iterable[str] | None) -> tuple[str, ...]:
    if kind is None:
        return ()
    return (kind,) if isinstance(kind, str) else tuple(kind)


def check_kind(artifact: Artifact, kind: str | Iterable[str] | None, *,
               schema: bool = False) -> None:
    """Refuse an artifact of another kind; then, with ``schema``, check it against its kind's
    registered schema (:func:`check_schema`), so a reader that decodes bytes itself (codes,
    orderings) checks what :func:`read_artifact` checks: dtypes, shapes against each other and
    the metadata, finite values, the schema version and a readable ``cortexkit.config``."""
    wanted = _kinds(kind)
    if not wanted or artifact.kind in wanted:
        if schema and wanted:
            check_schema(artifact)
        return
    expected = " or ".join(f"'{k}'" for k in wanted)
    if artifact.kind is None:
        raise CortexError(f"{artifact.source}: expected a {expected} artifact, got a safetensors "
                          "file without cortexkit metadata (convert it with 'cortexkit convert')")
    raise CortexError(f"{artifact.source}: expected a {expected} artifact, got '{artifact.kind}'")


def check_schema(artifact: Artifact) -> None:
    """The checks on read: a readable ``cortexkit.config`` and the registered schema, if any."""
    from cortexkit.formats.schema import schema_for

    artifact.config  # noqa: B018 - a damaged cortexkit.config is refused on read
    schema = schema_for(artifact.kind)
    if schema is not None:
        schema.validate(artifact)


def read_artifact(source: str | os.PathLike | None, kind: str | Iterable[str] | None = None, *,
                  framework: str = "pt", max_version: int | None = None,
                  check: bool = True) -> Artifact:
    """Read a whole artifact from a path or stdin (``-``), checking its kind.

    ``framework`` is ``"pt"`` for torch tensors or ``"np"`` for numpy arrays.
    ``max_version`` rejects artifacts written by a newer schema than the reader knows.
    With ``check`` (the default) an artifact whose kind has a registered
    :class:`~cortexkit.formats.schema.Schema` is checked against it (tensors, dtypes, shapes,
    finiteness, version); ``inspect`` reads with ``check=False`` to show damaged files too.
    """
    from cortexkit.formats.schema import schema_for

    name = display_name(source)
    artifact = decode(read_bytes(source), name, framework)
    check_kind(artifact, kind)
    if check:
        artifact.config  # noqa: B018 - a damaged cortexkit.config is refused on read
    schema = schema_for(artifact.kind) if check else None
    if schema is not None:  # the kind's registered schema (formats/schema.py)
        schema.validate(artifact)
        return artifact
    if max_version is not None and artifact.version is not None:
        if not artifact.version.isdigit() or int(artifact.version) > max_version:
            raise CortexError(f"{name}: '{artifact.kind}' schema version {artifact.version} is newer"
                              f" than this cortexkit reads ({max_version}); upgrade cortexkit")
    return artifact
