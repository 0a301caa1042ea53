"""Stop 40: the first weight step of a 16-layer GELU MLP (width 128) at initialisation, plain BP
against BP + WN (`fan`): per-layer gradient RMS on one batch of 128 and the size of AdamW's
first step relative to its rate, mean over entries of |g| / (|g| + eps), eps = 1e-8 (the
first step of Adam is g / (|g| + eps) times lr). Patches (held-out folder) and the MNIST subset.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/stop40_gradprobe.py \
        --patches /tmp/pcnb/heldout/patches
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import torch

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn.api import preprocess_for
from cortexkit.tools.pcn.inference import bp_gradients
from cortexkit.tools.pcn.network import NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn.train import normalize_weights

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", "/work/shared/data")) / "pcn"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--patches", default="/tmp/pcnb/heldout/patches")
    p.add_argument("--depth", type=int, default=16)
    p.add_argument("--eps", type=float, default=1e-8)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    sets = [("patches", args.patches, "dataset", None),
            ("mnist", str(DATA / "mnist_png_train10k_test10k.safetensors"), "mnist", 5000)]
    show = [i for i in (0, 3, 7, 11, args.depth - 1) if i < args.depth]
    for name, file, norm, limit in sets:
        tr = read_images(file, "train")
        images, labels = tr.images, tr.labels.astype(np.int64)
        if limit is not None:
            keep = np.random.default_rng(1234).permutation(len(labels))[:limit]
            images, labels = images[keep], labels[keep]
        prep = preprocess_for(images, norm)
        for wn in (False, True):
            torch.manual_seed(0)
            net = build_network(NetworkSpec("mlp", tuple(images.shape[1:]), int(labels.max()) + 1,
                                            width=128, depth=args.depth))
            if wn:
                normalize_weights(net, "fan")
            index = np.random.default_rng(0).permutation(len(labels))[:128]
            x, y = prep(torch.from_numpy(images[index])), torch.from_numpy(labels[index])
            res = bp_gradients(net, x, y, "ce", scale=1 / 128)
            grad = {id(q): g for q, g in zip(net.parameters(), res.grads)}
            layers = weight_layers(net)
            rms = [float(grad[id(l.weight)].pow(2).mean().sqrt()) for l in layers]
            step = [float((grad[id(l.weight)].abs() / (grad[id(l.weight)].abs() + args.eps)).mean())
                    for l in layers]
            print(f"{name} {'BP+WN' if wn else 'BP'}: grad RMS at layers "
                  f"{[i + 1 for i in show]}: {['%.1e' % rms[i] for i in show]}; Adam first step "
                  f"/ lr: {['%.3f' % step[i] for i in show]}")


if __name__ == "__main__":
    main()
