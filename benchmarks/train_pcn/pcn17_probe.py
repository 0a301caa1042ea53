"""pcn17 §1: what --weight-norm-mode cap does under AdamW. Trains BP, Meta-PCN pinned and Meta-PCN
capped (train-pcn's own loop, api.fit, defaults otherwise) on IMAGES' train split, MLP width 128
depth L, 5 epochs, and prints test top-1 per epoch, the final train loss, the final spectral proxy
per layer and, for the capped run, the share of weight steps on which each layer's proxy was below
its gain before the cap acted (a layer the cap leaves alone) and the range of the pre-cap ratio.

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn17_probe.py /tmp/pcn17/heldout/patches 5 [SEED]
"""

import sys

import torch

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn import api
from cortexkit.tools.pcn import train as T
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, weight_layers
from cortexkit.tools.pcn.train import TrainConfig, layer_gains, spectral_proxy


def main(argv):
    torch.set_num_threads(1)
    data, depth = argv[0], int(argv[1])
    seed = int(argv[2]) if len(argv) > 2 else 0
    tr, te = read_images(data, "train"), read_images(data, "test")
    spec = NetworkSpec("mlp", tuple(tr.images.shape[1:]), int(tr.labels.max()) + 1, width=128,
                       depth=depth)
    original, ratios = T.normalize_weights, []

    def recording(net, gain=1.0, clip=None, mode="pin"):
        ratios.append([spectral_proxy(l.weight) / t
                       for l, t in zip(weight_layers(net), layer_gains(net, gain))])
        original(net, gain, clip, mode)

    T.normalize_weights = recording
    for name, method, wn, mode in [("BP", "bp", False, "pin"), ("Meta-PCN pin", "meta-pcn", True, "pin"),
                                   ("Meta-PCN cap", "meta-pcn", True, "cap")]:
        ratios.clear()
        cfg = TrainConfig(method=method, epochs=5, weight_norm=wn, weight_norm_mode=mode,
                          inference=InferenceConfig(depth - 1 if method != "bp" else 0, 1.0))
        model, result = api.fit(tr.images, tr.labels, spec, cfg, test=(te.images, te.labels),
                                seed=seed)
        h = result.history
        print(f"{name} seed {seed}: test top-1 per epoch {[round(100 * r.test_top1, 2) for r in h]}, "
              f"train loss {h[-1].train_loss:.3f}, proxy per layer "
              f"{[round(spectral_proxy(l.weight), 2) for l in weight_layers(model.net)]}", flush=True)
        if mode == "cap":
            steps = ratios[1:]   # [0] is the initialisation
            print(f"  {len(steps)} steps; share of steps below the gain before the cap, per layer "
                  f"{[round(sum(s[i] < 1 for s in steps) / len(steps), 3) for i in range(depth)]}; "
                  f"pre-cap ratio range [{min(min(s) for s in steps):.4f}, "
                  f"{max(max(s) for s in steps):.4f}]")


if __name__ == "__main__":
    main(sys.argv[1:])
