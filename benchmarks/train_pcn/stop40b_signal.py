"""Stop 40b: the forward signal at initialisation under each weight-norm gain rule, per block, for
the default MLP and the VGG nets (issue 31 item 1: "neither halves nor explodes per layer").
For every block: RMS over a batch of the input-dependent part of the pre-activation (h minus its
batch mean), and the geometric-mean ratio per block from block 1 to the last hidden block.

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/stop40b_signal.py \
        -o benchmarks/train_pcn/stop40b_signal.yaml
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn.api import preprocess_for
from cortexkit.tools.pcn.network import NetworkSpec, build_network
from cortexkit.tools.pcn.train import normalize_weights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import write_yaml  # noqa: E402
from stop40_probe import forward_stats  # noqa: E402  (the same per-block measurement)

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "pcn"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--gains", default="fan,fan-act")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    sets = {"mnist": ("mnist_png_train10k_test10k.safetensors", "mnist",
                      [("mlp", 16)]),
            "cifar": ("cifar10_jpg_train10k_test2k.safetensors", "cifar10",
                      [("vgg5", None), ("vgg7", None), ("vgg9", None)])}
    out = {"batch": args.batch, "seeds": args.seeds, "rows": []}
    for name, (file, norm, nets) in sets.items():
        images = read_images(DATA / file, "train").images[:args.batch]
        x = preprocess_for(images, norm)(torch.from_numpy(images))
        for arch, depth in nets:
            spec = (NetworkSpec("mlp", tuple(images.shape[1:]), 10, width=128, depth=depth)
                    if arch == "mlp" else
                    NetworkSpec(arch, tuple(images.shape[1:]), 10, width_scale=0.125))
            for gain in args.gains.split(","):
                per_seed = []
                for seed in map(int, args.seeds.split(",")):
                    torch.manual_seed(seed)
                    net = build_network(spec)
                    normalize_weights(net, gain)
                    per_seed.append([r["h_input_rms"] for r in forward_stats(net, x)])
                rms = np.mean(per_seed, axis=0)
                hidden = rms[:-1]   # the last block is the linear output
                ratio = math.exp(math.log(hidden[-1] / hidden[0]) / max(1, len(hidden) - 1))
                row = {"set": name, "net": f"{arch} L={depth}" if depth else f"{arch} x0.125",
                       "gain": gain, "h_input_rms": [float(f"{v:.3g}") for v in rms],
                       "ratio_per_block": round(ratio, 3)}
                out["rows"].append(row)
                print(row, file=sys.stderr, flush=True)
    write_yaml(out, args.output)


if __name__ == "__main__":
    main()
