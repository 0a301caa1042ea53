"""pcn17, after the verdict (informational, decides nothing): AdamW weight decay is moot under the
pinned normalisation (a decay step scales W by a scalar that the next normalisation undoes), but
not under the cap, which lets a decayed layer stay below its gain. Runs Meta-PCN with
--weight-norm-mode cap at --weight-decay values (and BP, Meta-PCN pin for reference) through
api.fit, MLP width 128, and writes final test top-1, train loss and the final spectral proxy over
the gain per layer.

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn17_wd_probe.py --data /tmp/pcn17/heldout/patches \
        --depths 5,16 --epochs 5 --seeds 0,1,2 --decays 1,3,10 -o benchmarks/train_pcn/pcn17_wd_patches.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn import api
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, weight_layers
from cortexkit.tools.pcn.train import TrainConfig, layer_gains, spectral_proxy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import DATA, subset  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=None, help="IMAGES (default: the MNIST subset, 5,000 images)")
    p.add_argument("--depths", default="5,16")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--decays", default="1,3,10")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    mnist = args.data is None
    file = DATA / "mnist_png_train10k_test10k.safetensors" if mnist else Path(args.data)
    tr, te = read_images(file, "train"), read_images(file, "test")
    train = subset(tr.images, tr.labels, 5000 if mnist else None)
    normalize = "mnist" if mnist else "dataset"
    classes = int(max(tr.labels.max(), te.labels.max())) + 1
    variants = [("BP", "bp", False, "pin", 0.0), ("Meta-PCN pin", "meta-pcn", True, "pin", 0.0),
                ("Meta-PCN cap", "meta-pcn", True, "cap", 0.0)]
    variants += [(f"Meta-PCN cap wd {d:g}", "meta-pcn", True, "cap", d)
                 for d in map(float, args.decays.split(","))]
    out = {"data": file.name, "epochs": args.epochs, "train_examples": int(len(train[1])),
           "runs": []}
    for depth in map(int, args.depths.split(",")):
        spec = NetworkSpec("mlp", tuple(tr.images.shape[1:]), classes, width=128, depth=depth)
        for name, method, wn, mode, decay in variants:
            for seed in map(int, args.seeds.split(",")):
                cfg = TrainConfig(method=method, epochs=args.epochs, weight_norm=wn,
                                  weight_norm_mode=mode, weight_decay=decay,
                                  inference=InferenceConfig(depth - 1 if method != "bp" else 0, 1.0))
                model, result = api.fit(train[0], train[1], spec, cfg, normalize=normalize,
                                        test=(te.images, te.labels), seed=seed)
                gains = layer_gains(model.net, "fan")
                row = {"L": depth, "variant": name, "seed": seed,
                       "final_top1": round(100 * result.history[-1].test_top1, 2),
                       "train_loss": round(result.history[-1].train_loss, 3),
                       "proxy_over_fan": [round(spectral_proxy(l.weight) / g, 3)
                                          for l, g in zip(weight_layers(model.net), gains)]}
                out["runs"].append(row)
                print(row, file=sys.stderr, flush=True)
                if args.output != "-":
                    Path(args.output).write_text(yaml.safe_dump(out, sort_keys=False, width=200))
    summary = {}
    for r in out["runs"]:
        summary.setdefault((r["L"], r["variant"]), []).append(r["final_top1"])
    for (depth, name), v in summary.items():
        print(f"L={depth} {name}: {np.mean(v):.2f} ± {np.std(v, ddof=1) if len(v) > 1 else 0:.2f}")
    if args.output == "-":
        print(yaml.safe_dump(out, sort_keys=False, width=200))


if __name__ == "__main__":
    main()
