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
TINY_TOKENIZER = {"dim": 16, "depth": 1, "heads": 2, "decoder_depth": 1, "codebook_size": 8,
                  "code_dim": 4, "patch_size": 200}
MODELS = {
    "pcn-model": ("cortexkit.cli.train_pcn", "blocks.0.layer.weight",
                  {"blocks.0.layer.weight": np.ones((3, 4), np.float32),
                   "blocks.0.layer.bias": np.zeros(3, np.float32)},
                  {"pcn.network": "{}", "pcn.method": "{}", "pcn.preprocess": json.dumps({"mean": [0.5], "std": [0.25]})}),
    "copula-model": ("cortexkit.cli.estimate_copula", "corr",
                     {"marginals.sizes": np.array([2, 2]), "marginals.knots_x": np.arange(4.0),
                      "marginals.knots_u": np.full(4, 0.5), "corr": np.eye(2),
                      "net.0.weight": np.ones((2, 2), np.float32)}, _COPULA_META),
    "eeg-tokenizer": ("cortexkit.cli.tokenize_eeg", "quantize_f.embedding", None,
                      {"eeg.model": json.dumps(TINY_TOKENIZER), "eeg.preprocessing": "{}"}),
}


def _tokenizer_tensors() -> dict:
    """The state of a real tokenizer of :data:`TINY_TOKENIZER` (its schema checks every tensor's
    shape against the model the stored config builds)."""
    from cortexkit.tools.eeg.model import TFDualTokenizer, TokenizerConfig

    model = TFDualTokenizer(TokenizerConfig.from_dict(TINY_TOKENIZER))
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def _model_file(tmp_path, kind, tensors, meta):
    path = tmp_path / f"{kind}.st"
    path.write_bytes(encode(tensors, build_metadata(kind, version="1", extra=meta)))
    return path


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_model_kinds_of_every_tool_refuse_nan_weights(tmp_path, kind):
    import importlib

    module, weight, tensors, meta = MODELS[kind]
    importlib.import_module(module)
    tensors = _tokenizer_tensors() if tensors is None else tensors
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


def test_tokenizer_tensors_that_disagree_with_its_config_are_refused_on_read(tmp_path):
    """Issue 30 item 4: a codebook whose shape disagrees with the stored config was an internal
    'size mismatch for quantize_f.embedding' deep in load_state_dict; now the schema's one shape
    check against the model the config builds names the tensor and both shapes."""
    import cortexkit.cli.tokenize_eeg  # noqa: F401  (registers the schema)

    tensors = _tokenizer_tensors()
    meta = {"eeg.model": json.dumps(TINY_TOKENIZER), "eeg.preprocessing": "{}"}
    read_artifact(_model_file(tmp_path, "eeg-tokenizer", tensors, meta), "eeg-tokenizer")
    wrong = {**tensors, "quantize_f.embedding": np.zeros((5, 4), np.float32)}
    with pytest.raises(CortexError, match=r"tensor 'quantize_f.embedding' of the eeg-tokenizer has "
                                          r"shape \[5, 4\], its stored config needs \[8, 4\]"):
        read_artifact(_model_file(tmp_path, "eeg-tokenizer", wrong, meta), "eeg-tokenizer")
    extra = {**tensors, "quantize_f.stray": np.zeros(3, np.float32)}
    with pytest.raises(CortexError, match="quantize_f.stray"):
        read_artifact(_model_file(tmp_path, "eeg-tokenizer", extra, meta), "eeg-tokenizer")
    bad_config = {**meta, "eeg.model": json.dumps({**TINY_TOKENIZER, "codebooks": "triple"})}
    with pytest.raises(CortexError, match="stored config does not build a model"):
        read_artifact(_model_file(tmp_path, "eeg-tokenizer", tensors, bad_config), "eeg-tokenizer")


@pytest.mark.parametrize("prep", [{"mean": [0.5], "std": [0.0]}, {"mean": [0.5], "std": [-1]},
                                  {"mean": [0.5, 0.1], "std": [0.2]}, {"mean": [], "std": []},
                                  {"mean": ["x"], "std": [1]}])
def test_pcn_model_with_a_degenerate_normalisation_is_refused(tmp_path, prep):
    """Issue 30 item 5: a stored std of 0 gave NaN logits (predict) and loss: null (evaluate)."""
    import cortexkit.cli.train_pcn  # noqa: F401  (registers the schema)

    _, _, tensors, meta = MODELS["pcn-model"]
    path = _model_file(tmp_path, "pcn-model", tensors, {**meta, "pcn.preprocess": json.dumps(prep)})
    with pytest.raises(CortexError, match="one positive std per channel"):
        read_artifact(path, "pcn-model", framework="np")


@pytest.mark.parametrize("corr", [np.array([[1.0, 1.5], [1.5, 1.0]]), np.array([[1.0, 0.3], [0.2, 1.0]]),
                                  np.array([[2.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 0.0]])])
def test_copula_model_correlation_must_be_one(tmp_path, corr):
    """Issue 30 item 6: a stored correlation is checked on read (a singular one, from duplicated
    columns, stays allowed: the tool fits it with a warning and its ridge)."""
    import cortexkit.cli.estimate_copula  # noqa: F401  (registers the schema)

    _, _, tensors, meta = MODELS["copula-model"]
    read_artifact(_model_file(tmp_path, "copula-model", tensors, meta), "copula-model")
    path = _model_file(tmp_path, "copula-model", {**tensors, "corr": corr}, meta)
    with pytest.raises(CortexError, match="not a correlation matrix"):
        read_artifact(path, "copula-model", framework="np")
