"""formats/images: every image-set reader returns the same uint8 NCHW arrays and labels."""

import gzip
import pickle
import struct

import numpy as np
import pytest

from cortexkit.formats.errors import CortexError
from cortexkit.formats.images import parse_idx, read_images


def _set(n=12, c=3, h=6, w=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, c, h, w), dtype=np.uint8), rng.integers(0, 4, n).astype(np.int64)


def test_safetensors_layouts_and_splits(tmp_path):
    from safetensors.numpy import save_file

    images, labels = _set()
    save_file({"images": images.transpose(0, 2, 3, 1).copy(), "labels": labels},
              str(tmp_path / "nhwc.st"), metadata={"classes": "a,b,c,d"})
    got = read_images(tmp_path / "nhwc.st")
    np.testing.assert_array_equal(got.images, images)
    np.testing.assert_array_equal(got.labels, labels)
    assert got.classes == ["a", "b", "c", "d"]
    save_file({"train_x": images, "train_y": labels, "test_x": images[:3], "test_y": labels[:3]},
              str(tmp_path / "splits.st"))
    assert len(read_images(tmp_path / "splits.st")) == 12
    assert len(read_images(tmp_path / "splits.st", "test")) == 3
    with pytest.raises(CortexError, match="no split 'valid'.*splits: test, train"):
        read_images(tmp_path / "splits.st", "valid")
    gray = images[:, :1].copy()
    save_file({"images": gray, "labels": labels}, str(tmp_path / "gray.st"))
    assert read_images(tmp_path / "gray.st").images.shape == (12, 1, 6, 5)


def test_safetensors_bad_sets(tmp_path):
    from safetensors.numpy import save_file

    images, labels = _set()
    save_file({"images": images, "labels": labels[:-1]}, str(tmp_path / "a.st"))
    with pytest.raises(CortexError, match="12 images but 11 labels"):
        read_images(tmp_path / "a.st")
    save_file({"images": images, "labels": -labels - 1}, str(tmp_path / "b.st"))
    with pytest.raises(CortexError, match="negative label"):
        read_images(tmp_path / "b.st")
    save_file({"images": images}, str(tmp_path / "c.st"))
    with pytest.raises(CortexError, match="no labels"):
        read_images(tmp_path / "c.st")
    assert read_images(tmp_path / "c.st", need_labels=False).labels is None
    save_file({"images": images, "labels": labels + 1}, str(tmp_path / "e.st"),
              metadata={"classes": "a,b,c,d"})
    with pytest.raises(CortexError, match=r"label 4 is outside the 4 classes the set names \(a, b"):
        read_images(tmp_path / "e.st")
    save_file({"images": images[:0], "labels": labels[:0]}, str(tmp_path / "d.st"))
    with pytest.raises(CortexError, match="no images"):
        read_images(tmp_path / "d.st")


def test_image_folder(tmp_path):
    from PIL import Image

    images, labels = _set(n=6, c=3)
    for i, (img, lab) in enumerate(zip(images, labels)):
        folder = tmp_path / "train" / f"cls{lab}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img.transpose(1, 2, 0)).save(folder / f"{i:02d}.png")
    got = read_images(tmp_path)  # DIR/train/CLASS found by default
    names = sorted({f"cls{lab}" for lab in labels})
    assert got.classes == names and got.images.shape == (6, 3, 6, 5)
    order = sorted(range(6), key=lambda i: (names.index(f"cls{labels[i]}"), i))
    np.testing.assert_array_equal(got.images, images[order])
    np.testing.assert_array_equal(got.labels, [names.index(f"cls{labels[i]}") for i in order])
    odd = tmp_path / "train" / names[0] / "zz.png"
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(odd)
    with pytest.raises(CortexError, match="resize them first"):
        read_images(tmp_path, "train")


def test_cifar_batches(tmp_path):
    images, labels = _set(n=10, c=3, h=32, w=32)
    for name, part in (("data_batch_1", slice(0, 6)), ("data_batch_2", slice(6, 8)),
                       ("test_batch", slice(8, 10))):
        batch = {b"data": images[part].reshape(-1, 3072), b"labels": labels[part].tolist()}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    (tmp_path / "batches.meta").write_bytes(pickle.dumps({b"label_names": [b"x", b"y", b"z", b"w"]}))
    train = read_images(tmp_path, "train")
    np.testing.assert_array_equal(train.images, images[:8])
    np.testing.assert_array_equal(train.labels, labels[:8])
    assert train.classes == ["x", "y", "z", "w"]
    np.testing.assert_array_equal(read_images(tmp_path, "test").images, images[8:])
    one = read_images(tmp_path / "test_batch")
    np.testing.assert_array_equal(one.labels, labels[8:])


def _idx(array, code=0x08):
    return bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + \
        array.astype(">u1").tobytes()


def test_mnist_idx(tmp_path):
    images, labels = _set(n=7, c=1, h=28, w=28)
    (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(images[:, 0])))
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(_idx(labels)))
    got = read_images(tmp_path, "test")
    np.testing.assert_array_equal(got.images, images)
    np.testing.assert_array_equal(got.labels, labels)
    direct = read_images(tmp_path / "t10k-images-idx3-ubyte.gz")
    np.testing.assert_array_equal(direct.labels, labels)
    with pytest.raises(CortexError, match="truncated IDX"):
        parse_idx(_idx(images[:, 0])[:-5], "x")
    with pytest.raises(CortexError, match="not an IDX"):
        parse_idx(b"\x01\x02\x03", "x")
