"""Labelled image sets from the files people have, as uint8 (N, C, H, W) + int64 (N,) arrays.

:func:`read_images` recognises:

- a safetensors file (or ``-``): tensors ``images`` (uint8, NCHW or NHWC) and ``labels`` (int
  64), or per split ``{split}_x``/``{split}_y`` (also ``{split}_images``/``{split}_labels``);
  class names from the metadata key ``classes`` (comma-separated) when present;
- an image folder: ``DIR/<class>/*.png|jpg|...`` (class index = sorted subfolder order), or
  ``DIR/{split}/<class>/...``;
- CIFAR-10/100 python batches: a folder with ``data_batch_1..5`` and ``test_batch`` (CIFAR-10)
  or ``train``/``test`` (CIFAR-100, fine labels), ``batches.meta``/``meta`` for names, or one
  batch file;
- MNIST IDX files: a folder with ``{train,t10k}-images-idx3-ubyte[.gz]`` and the labels files,
  or the images file itself (labels found beside it).

Images are returned exactly as stored (no scaling); layout NHWC is recognised when the last axis
has 1, 3 or 4 entries and the second does not (or from the metadata key ``layout``).
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cortexkit.formats.errors import CortexError
from cortexkit.formats.stdio import display_name, is_stdio, read_bytes

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm"}


@dataclass
class ImageSet:
    """``images``: uint8 (N, C, H, W); ``labels``: int64 (N,) or None; ``classes``: names."""

    images: np.ndarray
    labels: np.ndarray | None
    classes: list[str] = field(default_factory=list)
    source: str = "<images>"

    def __len__(self) -> int:
        return int(self.images.shape[0])


def _check(images: np.ndarray, labels: np.ndarray | None, name: str, need_labels: bool,
           classes: list[str]) -> ImageSet:
    if images.ndim == 3:  # (N, H, W) gray
        images = images[:, None]
    if images.ndim != 4:
        raise CortexError(f"{name}: images must be (N, C, H, W) or (N, H, W, C), got shape "
                          f"{list(images.shape)}")
    if images.dtype != np.uint8:
        raise CortexError(f"{name}: images must be uint8 (0-255), got {images.dtype}")
    if images.shape[0] == 0:
        raise CortexError(f"{name}: no images")
    if labels is None:
        if need_labels:
            raise CortexError(f"{name}: no labels (a 'labels' tensor is needed here)")
    else:
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.dtype.kind not in "iu":
            raise CortexError(f"{name}: labels must be a 1-D integer tensor, got "
                              f"{labels.dtype} {list(labels.shape)}")
        if len(labels) != len(images):
            raise CortexError(f"{name}: {len(images)} images but {len(labels)} labels")
        if labels.min() < 0:
            raise CortexError(f"{name}: negative label {int(labels.min())}")
        if classes and labels.max() >= len(classes):
            # the names fix the class range: a label past them is a broken file, not a new class
            shown = ", ".join(classes[:6]) + (", ..." if len(classes) > 6 else "")
            raise CortexError(f"{name}: label {int(labels.max())} is outside the {len(classes)} "
                              f"classes the set names ({shown})")
        labels = labels.astype(np.int64)
    return ImageSet(np.ascontiguousarray(images), labels, classes, name)


def _nchw(images: np.ndarray, layout: str | None) -> np.ndarray:
    if images.ndim != 4:
        return images
    if layout is None:
        nhwc = images.shape[-1] in (1, 3, 4) and images.shape[1] not in (1, 3, 4)
    else:
        nhwc = layout.upper().startswith("NHWC")
    return images.transpose(0, 3, 1, 2) if nhwc else images


# ---------------------------------------------------------------------------------------------
# safetensors

def _from_safetensors(data: bytes, name: str, split: str | None, need_labels: bool) -> ImageSet:
    from cortexkit.formats.artifact import decode

    artifact = decode(data, name, framework="np")
    tensors, meta = artifact.tensors, artifact.metadata
    if "images" in tensors:
        x_key, y_key = "images", "labels"
    else:
        splits = sorted({k.rsplit("_", 1)[0] for k in tensors if k.endswith(("_x", "_images"))})
        if split is None:
            split = "train" if "train" in splits else (splits[0] if len(splits) == 1 else None)
        if split is None or split not in splits:
            held = ", ".join(sorted(tensors)) or "none"
            raise CortexError(f"{name}: no 'images' tensor" + (f" and no split '{split}'" if split
                              else "") + f" (it holds: {held}; splits: {', '.join(splits) or 'none'})")
        x_key = f"{split}_x" if f"{split}_x" in tensors else f"{split}_images"
        y_key = f"{split}_y" if f"{split}_y" in tensors else f"{split}_labels"
    images = _nchw(tensors[x_key], meta.get("layout"))
    classes = [c for c in meta.get("classes", "").split(",") if c]
    return _check(images, tensors.get(y_key), name, need_labels, classes)


# ---------------------------------------------------------------------------------------------
# image folders

def _decode_image(path: Path) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError:
        raise CortexError("reading image folders needs Pillow: pip install pillow") from None
    try:
        with Image.open(path) as img:
            mode = "L" if img.mode in ("L", "1", "I;16", "I") else "RGB"
            array = np.asarray(img.convert(mode), dtype=np.uint8)
    except OSError as exc:
        raise CortexError(f"{path}: not a readable image ({exc})") from None
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


def _from_folder(root: Path, split: str | None, need_labels: bool) -> ImageSet:
    if split is not None and (root / split).is_dir():
        root = root / split
    elif split is None and (root / "train").is_dir() and not any(
            p.suffix.lower() in IMAGE_SUFFIXES for p in (root / "train").iterdir() if p.is_file()):
        if any((root / "train").iterdir()) and all(p.is_dir() for p in (root / "train").iterdir()):
            root = root / "train"
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not classes:
        raise CortexError(f"{root}: an image folder needs one subfolder per class")
    images, labels, shape = [], [], None
    for index, cls in enumerate(classes):
        for path in sorted((root / cls).iterdir()):
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            array = _decode_image(path)
            if shape is None:
                shape = array.shape
            elif array.shape != shape:
                raise CortexError(f"{path}: image of shape {list(array.shape)} (C, H, W), the "
                                  f"others are {list(shape)}; resize them first")
            images.append(array)
            labels.append(index)
    if not images:
        raise CortexError(f"{root}: no image files in the class subfolders")
    return _check(np.stack(images), np.asarray(labels, np.int64), str(root), need_labels, classes)


# ---------------------------------------------------------------------------------------------
# CIFAR python batches

def _unpickle(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
    except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError) as exc:
        raise CortexError(f"{path}: not a CIFAR python batch ({exc})") from None
    if not isinstance(batch, dict):
        raise CortexError(f"{path}: not a CIFAR python batch (not a dict)")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}


def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    batch = _unpickle(path)
    if "data" not in batch:
        raise CortexError(f"{path}: not a CIFAR python batch (no 'data')")
    data = np.asarray(batch["data"], dtype=np.uint8)
    labels = batch.get("labels", batch.get("fine_labels"))
    if labels is None or data.ndim != 2 or data.shape[1] != 3072:
        raise CortexError(f"{path}: not a CIFAR python batch (data {list(data.shape)})")
    return data.reshape(-1, 3, 32, 32), np.asarray(labels, np.int64)


def _cifar_names(folder: Path) -> list[str]:
    for meta, key in (("batches.meta", "label_names"), ("meta", "fine_label_names")):
        if (folder / meta).is_file():
            names = _unpickle(folder / meta).get(key, [])
            return [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    return []


def _is_cifar_dir(root: Path) -> bool:
    return any((root / n).is_file() for n in ("data_batch_1", "test_batch", "batches.meta")) or (
        (root / "meta").is_file() and (root / "train").is_file())


def _from_cifar(root: Path, split: str | None, need_labels: bool) -> ImageSet:
    split = split or "train"
    if (root / "data_batch_1").is_file() or (root / "test_batch").is_file():
        files = sorted(root.glob("data_batch_*")) if split == "train" else [root / "test_batch"]
    else:
        files = [root / split]
    files = [f for f in files if f.is_file()]
    if not files:
        raise CortexError(f"{root}: no CIFAR batch for split '{split}'")
    parts = [_cifar_batch(f) for f in files]
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    return _check(images, labels, str(root), need_labels, _cifar_names(root))


# ---------------------------------------------------------------------------------------------
# MNIST IDX

def _read_maybe_gz(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise CortexError(f"{path}: broken gzip ({exc})") from None
    return data


def parse_idx(data: bytes, name: str) -> np.ndarray:
    """An IDX array (MNIST's format: zero, zero, dtype code, ndim, big-endian dims, data)."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise CortexError(f"{name}: not an IDX file")
    dtypes = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    code, ndim = data[2], data[3]
    if code not in dtypes or len(data) < 4 + 4 * ndim:
        raise CortexError(f"{name}: not an IDX file (type {code:#x}, {ndim} dims)")
    dims = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    dtype = np.dtype(dtypes[code])
    need = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    body = data[4 + 4 * ndim:]
    if len(body) < need:
        raise CortexError(f"{name}: truncated IDX file ({len(body)} of {need} data bytes)")
    return np.frombuffer(body[:need], dtype=dtype).reshape(dims).astype(dtype.newbyteorder("="))


def _idx_pair(root: Path, split: str | None) -> tuple[Path, Path | None]:
    if root.is_file():
        label = root.name.replace("images-idx3", "labels-idx1").replace("images.idx3",
                                                                         "labels.idx1")
        path = root.with_name(label)
        return root, path if path != root and path.is_file() else None
    prefix = {"train": "train", "test": "t10k", None: "train"}.get(split, split)
    for suffix in ("", ".gz"):
        images = root / f"{prefix}-images-idx3-ubyte{suffix}"
        if images.is_file():
            labels = root / f"{prefix}-labels-idx1-ubyte{suffix}"
            return images, labels if labels.is_file() else None
    raise CortexError(f"{root}: no {prefix}-images-idx3-ubyte[.gz] file")


def _from_idx(root: Path, split: str | None, need_labels: bool) -> ImageSet:
    images_path, labels_path = _idx_pair(root, split)
    images = parse_idx(_read_maybe_gz(images_path), str(images_path))
    if images.dtype != np.uint8:
        raise CortexError(f"{images_path}: IDX images must be unsigned bytes")
    labels = None
    if labels_path is not None:
        labels = parse_idx(_read_maybe_gz(labels_path), str(labels_path)).astype(np.int64)
    return _check(images, labels, str(images_path), need_labels, [])


# ---------------------------------------------------------------------------------------------

def read_images(source: str | os.PathLike | None, split: str | None = None, *,
                need_labels: bool = True) -> ImageSet:
    """A labelled image set from a safetensors file (or ``-``), an image folder, CIFAR python
    batches or MNIST IDX files; ``split`` picks train/test inside a file or folder that holds both."""
    name = display_name(source)
    if is_stdio(source):
        return _from_safetensors(read_bytes(source), name, split, need_labels)
    path = Path(source)
    if not path.exists():
        raise CortexError(f"{path}: no such file or folder")
    if path.is_dir():
        if _is_cifar_dir(path):
            return _from_cifar(path, split, need_labels)
        if any(p.name.endswith(("idx3-ubyte", "idx3-ubyte.gz")) for p in path.iterdir()):
            return _from_idx(path, split, need_labels)
        return _from_folder(path, split, need_labels)
    data = _read_maybe_gz(path) if "idx" in path.name else path.read_bytes()
    if ("idx" in path.name or "ubyte" in path.name) and data[:3] == b"\x00\x00\x08":
        return _from_idx(path, split, need_labels)
    if data[:1] == b"\x80" and data[8:9] != b"{":  # a pickle (not a safetensors header): CIFAR
        images, labels = _cifar_batch(path)
        return _check(images, labels, name, need_labels, _cifar_names(path.parent))
    return _from_safetensors(data, name, split, need_labels)
