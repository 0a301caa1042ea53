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


FOX = "avatar/fox/glTF-Binary/Fox.glb"


def fox_commands(directory, installed, commands):
    """Run fit-avatar command lines (``{fox}`` stands for the shipped Fox.glb) in ``directory``
    through the installed command; skips when the shared data is absent."""
    import os
    import subprocess

    import pytest

    fox = os.path.join(os.environ.get("CORTEXKIT_SHARED_DATA", ""), FOX)
    if not os.path.exists(fox):
        pytest.skip("shared data not found (set CORTEXKIT_SHARED_DATA)")
    exe, env = installed
    for line in commands:
        proc = subprocess.run([exe, *line.format(fox=fox).split()], cwd=directory, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    return directory
