"""Stop 40: the first weight step of a 16-layer GELU MLP (width 128) at initialisation, plain BP
against BP + WN (`fan`): per-layer gradient RMS on one batch of 128 and the size of AdamW's
first step relative to its rate, mean over entries of |g| / (|g| + eps), eps = 1e-8 (the
first step of Adam is g / (|g| + eps) times lr). Patches (held-out folder) and the MNIST subset.
``--identity``: instead, the largest relative difference between Meta-PCN's default gradients
(T = L - 1, eta_x 1) and BP's on a `fan` WN net of patches, at init and after ``--epochs`` of
BP + WN training (the gradient identity the study leans on).

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
from cortexkit.tools.pcn import api
from cortexkit.tools.pcn.inference import InferenceConfig, bp_gradients, meta_inference
from cortexkit.tools.pcn.network import NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn.train import TrainConfig, normalize_weights

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "pcn"


def identity(path: str, depth: int, epochs: int) -> None:
    tr = read_images(path, "train")
    images, labels = tr.images, tr.labels.astype(np.int64)
    spec = NetworkSpec("mlp", tuple(images.shape[1:]), int(labels.max()) + 1, width=128,
                       depth=depth)
    for n_epochs in (0, epochs):
        cfg = TrainConfig(method="bp", epochs=n_epochs, weight_norm=True, weight_norm_gain="fan",
                          inference=InferenceConfig(0, 1.0))
        model, _ = api.fit(images, labels, spec, cfg, normalize="dataset", seed=0)
        x = model.prep(torch.from_numpy(images[:128]))
        y = torch.from_numpy(labels[:128])
        bp = bp_gradients(model.net, x, y, "ce", scale=1 / 128)
        meta = meta_inference(model.net, x, y, InferenceConfig(depth - 1, 1.0), scale=1 / 128)
        worst = max(float((a - b).norm() / a.norm()) for a, b in zip(bp.grads, meta.grads))
        print(f"after {n_epochs} epochs of BP + WN: max over parameters of "
              f"||g_meta - g_bp|| / ||g_bp|| = {worst:.1e}")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--patches", default="/tmp/pcnb/heldout/patches")
    p.add_argument("--depth", type=int, default=16)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--identity", action="store_true")
    p.add_argument("--epochs", type=int, default=10)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.identity:
        identity(args.patches, args.depth, args.epochs)
        return
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
