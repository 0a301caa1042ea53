"""The artifact contract: our safetensors bytes, validated reading, kind checks."""

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cortexkit.formats.artifact import (Artifact, build_metadata, check_kind, decode, encode)
from cortexkit.formats.errors import CortexError


def sample_tensors():
    return {
        "weights": torch.arange(12, dtype=torch.float32).reshape(3, 4) / 7,
        "codes": torch.tensor([[0, 3], [2, 1]], dtype=torch.int64),
        "mask": torch.tensor([True, False, True]),
        "half": torch.linspace(-1, 1, 5, dtype=torch.bfloat16),
        "empty": torch.zeros(0, 3),
    }


def test_our_bytes_are_read_by_the_safetensors_library():
    meta = build_metadata("table", producer="cortexkit test", config={"n": 3}, extra={"k": [1, 2]})
    data = encode(sample_tensors(), meta)
    loaded = safetensors.torch.load(data)
    for name, tensor in sample_tensors().items():
        assert loaded[name].dtype == tensor.dtype
        assert torch.equal(loaded[name], tensor)
    with _tmp(data) as f:
        assert f.metadata() == meta


class _tmp:
    """safe_open needs a path: write the bytes to a temporary file."""

    def __init__(self, data):
        import tempfile

        self.file = tempfile.NamedTemporaryFile(suffix=".safetensors")
        self.file.write(data)
        self.file.flush()

    def __enter__(self):
        self.handle = safetensors.safe_open(self.file.name, framework="pt")
        return self.handle.__enter__()

    def __exit__(self, *exc):
        self.handle.__exit__(*exc)
        self.file.close()


def test_library_bytes_are_read_by_us():
    arrays = {"a": np.arange(6, dtype=np.int16).reshape(2, 3), "b": np.ones(4, dtype=np.float64)}
    data = safetensors.numpy.save(arrays, metadata={"cortexkit.kind": "table"})
    artifact = decode(data, "x", framework="np")
    assert artifact.kind == "table"
    for name, array in arrays.items():
        assert artifact.tensors[name].dtype == array.dtype
        np.testing.assert_array_equal(artifact.tensors[name], array)


def test_encoding_is_deterministic_whatever_the_insertion_order():
    tensors = sample_tensors()
    meta = build_metadata("table", config={"b": 1, "a": 2}, extra={"z": "1", "y": "2"})
    reordered_tensors = dict(reversed(list(tensors.items())))
    reordered_meta = dict(reversed(list(meta.items())))
    assert encode(tensors, meta) == encode(reordered_tensors, reordered_meta)


def test_torch_round_trip_including_bfloat16():
    data = encode(sample_tensors(), build_metadata("table"))
    artifact = decode(data, "x", framework="pt")
    for name, tensor in sample_tensors().items():
        assert artifact.tensors[name].dtype == tensor.dtype
        assert torch.equal(artifact.tensors[name], tensor)
    as_numpy = decode(data, "x", framework="np").tensors["half"]
    np.testing.assert_array_equal(as_numpy, sample_tensors()["half"].float().numpy())


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(dtype=st.sampled_from([np.float32, np.float64, np.int64, np.int32, np.uint8,
                                          np.int8, np.float16, np.bool_]),
                  shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)))
def test_any_array_round_trips_exactly(array):
    artifact = decode(encode({"x": array}, build_metadata("table")), "x", framework="np")
    out = artifact.tensors["x"]
    assert out.dtype == array.dtype and out.shape == array.shape
    assert out.tobytes() == array.copy(order="C").tobytes()  # bit-exact, NaNs included


def test_metadata_contract_keys_and_config():
    meta = build_metadata("permutations", version="2", producer="cortexkit x y",
                          config={"seed": 3, "name": "a"}, extra={"n": 10, "s": "text"})
    artifact = Artifact("x", meta)
    assert artifact.kind == "permutations" and artifact.version == "2"
    assert artifact.producer == "cortexkit x y"
    assert artifact.config == {"seed": 3, "name": "a"}
    assert artifact.meta_json("n") == 10 and artifact.metadata["s"] == "text"


@pytest.mark.parametrize("data, fragment", [
    (b"", "empty input"),
    (b"abc", "not a safetensors artifact"),
    (b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!", "header is not JSON"),
    (b"\xff" * 64, "truncated"),
    (b"\x02\x00\x00\x00\x00\x00\x00\x00[]", "not a JSON object"),
])
def test_garbage_is_refused_with_a_clear_message(data, fragment):
    with pytest.raises(CortexError, match=fragment):
        decode(data, "in")


def test_truncated_data_is_refused():
    data = encode(sample_tensors(), build_metadata("table"))
    with pytest.raises(CortexError, match="truncated"):
        decode(data[:-5], "in")
    with pytest.raises(CortexError):
        decode(data[:20], "in")


def test_kind_check_says_what_it_expected_and_got():
    artifact = Artifact("f.safetensors", build_metadata("copula-model"))
    check_kind(artifact, "copula-model")
    check_kind(artifact, ("table", "copula-model"))
    with pytest.raises(CortexError, match="expected a 'permutations' artifact, got 'copula-model'"):
        check_kind(artifact, "permutations")
    with pytest.raises(CortexError, match="without cortexkit metadata"):
        check_kind(Artifact("g", {}), "permutations")


def test_missing_tensor_names_what_is_there():
    artifact = Artifact("f", build_metadata("table"), {"data": np.zeros(2)})
    with pytest.raises(CortexError, match="no tensor 'weights' .*holds: data"):
        artifact.tensor("weights")


def test_tensor_takes_alternative_names_in_order():
    artifact = Artifact("f", build_metadata("table"), {"x": np.zeros(2), "theta": np.ones(3)})
    assert artifact.tensor("x_o", "x").shape == (2,)
    assert artifact.tensor("theta", "x").shape == (3,)
    with pytest.raises(CortexError, match="no tensor 'x_o' or 'obs' .*holds: theta, x"):
        artifact.tensor("x_o", "obs")
