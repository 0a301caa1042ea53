"""Artifact schemas (formats/schema.py) checked on read: names, dtypes, symbolic shapes bound
by metadata and by each other, finiteness, bounds, versions; and malformed headers/metadata."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from cortexkit.formats.artifact import build_metadata, decode, encode, read_artifact
from cortexkit.formats.errors import CortexError
from cortexkit.formats.schema import Schema, Tensor, register

TOY = Schema("toy-model", version=2, sizes={"n": "toy.n"}, metadata=("toy.name",),
             json_metadata=("toy.info",),
             tensors=(Tensor("weights", "float", ("n", "h"), finite=True),
                      Tensor("bias", "float", ("h",), no_nan=True),
                      Tensor("codes", "int", ("m",), min=0, below="n"),
                      Tensor("state.*", "any", finite=True, optional=True)))
register(TOY)


def write(tmp_path, tensors=None, version="2", **meta):
    tensors = {"weights": np.ones((3, 2), np.float32), "bias": np.array([0.0, -np.inf]),
               "codes": np.array([0, 2, 1]), **(tensors or {})}
    tensors = {k: v for k, v in tensors.items() if v is not None}
    extra = {"toy.n": "3", "toy.name": "a", "toy.info": "{}", **meta}
    extra = {k: v for k, v in extra.items() if v is not None}
    path = tmp_path / "m.st"
    path.write_bytes(encode(tensors, build_metadata("toy-model", version=version, extra=extra)))
    return path


def test_a_good_artifact_passes_with_sizes_bound(tmp_path):
    art = read_artifact(write(tmp_path), "toy-model", framework="np")
    assert TOY.validate(art) == {"n": 3, "h": 2, "m": 3}


@pytest.mark.parametrize("change,fragment", [
    (dict(tensors={"weights": None}), "no tensor 'weights'"),
    (dict(tensors={"weights": np.ones((3, 2), np.int64)}), "expected a float"),
    (dict(tensors={"weights": np.ones((4, 2), np.float32)}), "expected n = 3"),
    (dict(tensors={"bias": np.zeros(3)}), "expected h = 2"),
    (dict(tensors={"weights": np.ones(6, np.float32)}), "expected 2 dimensions"),
    (dict(tensors={"weights": np.full((3, 2), np.nan, np.float32)}), "NaN or infinite"),
    (dict(tensors={"bias": np.array([0.0, np.nan])}), "NaN"),
    (dict(tensors={"codes": np.array([0, 3, 1])}), "below n = 3"),
    (dict(tensors={"codes": np.array([0, -1, 1])}), "below the smallest"),
    (dict(tensors={"codes": np.array([0.0, 1.0, 1.0])}), "expected an integer"),
    (dict(tensors={"state.w": np.array([np.inf])}), "'state.w'"),
    (dict(version="3"), "written by a newer cortexkit"),
    (dict(version="x"), "not one cortexkit writes"),
    (dict(**{"toy.n": "three"}), "whole number"),
    (dict(**{"toy.name": None}), "lacks metadata 'toy.name'"),
    (dict(**{"toy.info": "{oops"}), "not valid JSON"),
])
def test_schema_violations_name_file_and_tensor(tmp_path, change, fragment):
    path = write(tmp_path, **change)
    with pytest.raises(CortexError) as info:
        read_artifact(path, "toy-model", framework="np")
    assert fragment in str(info.value) and str(path) in str(info.value)
    art = read_artifact(path, check=False, framework="np")  # inspect still reads it
    assert art.kind == "toy-model"


def _raw(header: dict, data: bytes = b"\0" * 16) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize("entry", [
    {"dtype": "F32", "shape": [2], "data_offsets": [0.0, 8.0]},
    {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]},
    {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]},
    {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]},
    {"dtype": "F32", "shape": [2], "data_offsets": [True, 8]},
    ["F32", [2], [0, 8]],
])
def test_malformed_headers_are_one_line_errors(entry):
    with pytest.raises(CortexError, match="f.st: malformed header entry"):
        decode(_raw({"t": entry}), "f.st")


def test_unreadable_metadata_yaml_and_json_name_the_file():
    data = encode({"t": np.zeros(1)}, {"cortexkit.config": "a: [1,", "k": "{oops"})
    art = decode(data, "f.st")
    with pytest.raises(CortexError, match="f.st: metadata 'cortexkit.config' is not readable"):
        art.config
    with pytest.raises(CortexError, match="f.st: metadata 'k' is not valid JSON"):
        art.meta_json("k")


# The model kinds of the tools that landed after the schema work: each is registered by its
# command module, and a NaN weight or a damaged layout is refused on read (issue 16).
_COPULA_META = {"copula.columns": '["a", "b"]', "copula.copula": '"gaussian"',
                "copula.marginals": '"ecdf"', "copula.n_train": "4"}
MODELS = {
    "pcn-model": ("cortexkit.cli.train_pcn", "blocks.0.layer.weight",
                  {"blocks.0.layer.weight": np.ones((3, 4), np.float32),
                   "blocks.0.layer.bias": np.zeros(3, np.float32)},
                  {"pcn.network": "{}", "pcn.method": "{}", "pcn.preprocess": "{}"}),
    "copula-model": ("cortexkit.cli.estimate_copula", "corr",
                     {"marginals.sizes": np.array([2, 2]), "marginals.knots_x": np.arange(4.0),
                      "marginals.knots_u": np.full(4, 0.5), "corr": np.eye(2),
                      "net.0.weight": np.ones((2, 2), np.float32)}, _COPULA_META),
    "eeg-tokenizer": ("cortexkit.cli.tokenize_eeg", "quantizer_t.codebook",
                      {"quantizer_t.codebook": np.ones((16, 8), np.float32),
                       "quantizer_t.initted": np.array([True])},
                      {"eeg.model": "{}", "eeg.preprocessing": "{}"}),
}


def _model_file(tmp_path, kind, tensors, meta):
    path = tmp_path / f"{kind}.st"
    path.write_bytes(encode(tensors, build_metadata(kind, version="1", extra=meta)))
    return path


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_model_kinds_of_every_tool_refuse_nan_weights(tmp_path, kind):
    import importlib

    module, weight, tensors, meta = MODELS[kind]
    importlib.import_module(module)
    read_artifact(_model_file(tmp_path, kind, tensors, meta), kind, framework="np")
    bad = {**tensors, weight: np.where(np.eye(*tensors[weight].shape, dtype=bool), np.nan,
                                       tensors[weight]).astype(tensors[weight].dtype)}
    path = _model_file(tmp_path, kind, bad, meta)
    with pytest.raises(CortexError, match=f"{path}: tensor '{weight}' of the {kind} holds"):
        read_artifact(path, kind, framework="np")
    with pytest.raises(CortexError, match="written by a newer cortexkit"):
        path.write_bytes(encode(tensors, build_metadata(kind, version="9", extra=meta)))
        read_artifact(path, kind, framework="np")


@pytest.mark.parametrize("change,fragment", [
    ({"marginals.sizes": np.array([2, 3])}, "sums to 5"),
    ({"corr": np.eye(3)}, "expected d = 2"),
    ({"marginals.knots_x": np.arange(4.0).astype(np.int64)}, "expected a float"),
])
def test_copula_model_layout_is_checked(tmp_path, change, fragment):
    import cortexkit.cli.estimate_copula  # noqa: F401  (registers the schema)

    _, _, tensors, meta = MODELS["copula-model"]
    path = _model_file(tmp_path, "copula-model", {**tensors, **change}, meta)
    with pytest.raises(CortexError, match=fragment):
        read_artifact(path, "copula-model", framework="np")
