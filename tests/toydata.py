"""Small data sets several test files build (tests/ is on sys.path: pyproject.toml pythonpath)."""

import numpy as np


def make_images(n=96, classes=3, size=8, seed=0, sort=False):
    """Labelled 1-channel uint8 images: noise with a bright bar whose row says the class."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % classes
    if sort:
        labels = np.sort(labels)
    images = rng.integers(0, 60, (n, 1, size, size), dtype=np.uint8)
    for i, c in enumerate(labels):
        images[i, :, 2 * c:2 * c + 3, 1:4] = 230
    return images, labels.astype(np.int64)


def write_set(path, images, labels):
    """An image set file train-pcn reads (tensors images, labels)."""
    from safetensors.numpy import save_file

    save_file({"images": images, "labels": labels}, str(path))
    return path
