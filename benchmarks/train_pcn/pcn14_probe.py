"""pcn14 probe: why the default (Meta-PCN = BP + WN at the `fan` gain) trails plain BP on the
patches MLP at L = 5. Trains plain BP and BP + WN variants with train-pcn's own loop
(tools/pcn/train.py through api.fit: AdamW 1e-3, PCX warmup-cosine, batch 128, the same batch
order for every variant of a seed) and records per run: test top-1 after every epoch, the final
epoch's forward train loss and top-1, and at the end the RMS of the logits on the test images, the
mean max-softmax probability there, and each layer's spectral proxy (sqrt(m)+sqrt(n)) std(W).
With T >= L - 1 Meta-PCN's weights are BP + WN's (the gradient identity), so BP + WN stands for
the default here.

Variants (``--variants``, comma list):
  BP            plain backprop, no weight normalisation
  WN            BP + WN at the default gain rule (`fan`)
  WN:out=S      BP + WN, the output layer's gain S times fan's (hypothesis i: the fixed output
                gain caps the logit scale)
  WN:noout      BP + WN on the hidden layers only, the output layer free (hypothesis ii)

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/pcn14_probe.py \
        --data /tmp/pcnb/heldout/patches --depth 5 --epochs 5 --seeds 0,1,2 \
        --variants BP,WN,WN:out=2,WN:out=4,WN:noout -o benchmarks/train_pcn/pcn14_probe_L5.yaml
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn import api
from cortexkit.tools.pcn import train as train_mod
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, weight_layers
from cortexkit.tools.pcn.train import TrainConfig, logits_of, spectral_proxy

ORIGINAL_GAINS = train_mod.layer_gains
ORIGINAL_NORMALIZE = train_mod.normalize_weights


@torch.no_grad()
def normalize_hidden_only(net, gain=1.0, clip=None):
    """normalize_weights on every weight layer but the output block's."""
    out_ids = {id(m) for m in weight_layers(net.blocks[-1])}
    for layer, target in zip(weight_layers(net), train_mod.layer_gains(net, gain)):
        if id(layer) in out_ids:
            continue
        m, n = train_mod.fan_out_in(layer.weight)
        std = layer.weight.std(unbiased=False)
        if std > 0:
            layer.weight.mul_(target / ((math.sqrt(m) + math.sqrt(n)) * std))


def configure(variant: str):
    """Set train.py's gain and normalisation functions for ``variant``; (weight_norm, label)."""
    train_mod.layer_gains = ORIGINAL_GAINS
    train_mod.normalize_weights = ORIGINAL_NORMALIZE
    if variant == "BP":
        return False
    if variant.startswith("WN:out="):
        train_mod.layer_gains = functools.partial(ORIGINAL_GAINS,
                                                  out_scale=float(variant.split("=")[1]))
    elif variant == "WN:noout":
        train_mod.normalize_weights = normalize_hidden_only
    elif variant != "WN":
        raise SystemExit(f"unknown variant {variant}")
    return True


def run(variant, spec, train, test, epochs, seed):
    wn = configure(variant)
    cfg = TrainConfig(method="bp", epochs=epochs, batch_size=128, lr=1e-3, weight_norm=wn,
                      weight_norm_gain="fan", inference=InferenceConfig(0, 1.0))
    model, result = api.fit(train[0], train[1], spec, cfg, normalize="dataset", test=test,
                            seed=seed)
    logits = logits_of(model.net, torch.from_numpy(test[0]), model.prep).double()
    probs = logits.softmax(1)
    hist = result.history
    configure("WN")  # restore
    return {"variant": variant, "seed": seed,
            "test_top1": [round(100 * h.test_top1, 2) for h in hist],
            "final_top1": round(100 * hist[-1].test_top1, 2),
            "train_loss": round(hist[-1].train_loss, 4),
            "train_top1": round(100 * hist[-1].train_top1, 2),
            "logit_rms": round(float(logits.pow(2).mean().sqrt()), 3),
            "logit_spread": round(float((logits - logits.mean(1, keepdim=True)).pow(2).mean().sqrt()), 3),
            "max_prob": round(float(probs.max(1).values.mean()), 4),
            "spectral": [round(spectral_proxy(l.weight), 3) for l in weight_layers(model.net)]}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--depth", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seeds", default="0")
    p.add_argument("--variants", default="BP,WN")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    tr, te = read_images(args.data, "train"), read_images(args.data, "test")
    classes = int(max(tr.labels.max(), te.labels.max())) + 1
    spec = NetworkSpec("mlp", tuple(tr.images.shape[1:]), classes, width=128, depth=args.depth)
    out = {"data": str(args.data), "depth": args.depth, "epochs": args.epochs, "runs": []}
    for seed in map(int, args.seeds.split(",")):
        for variant in args.variants.split(","):
            row = run(variant, spec, (tr.images, tr.labels), (te.images, te.labels),
                      args.epochs, seed)
            out["runs"].append(row)
            print(yaml.safe_dump([row], sort_keys=False, width=200).strip(), file=sys.stderr,
                  flush=True)
            if args.output != "-":
                Path(args.output).write_text(yaml.safe_dump(out, sort_keys=False, width=200))
    if args.output == "-":
        print(yaml.safe_dump(out, sort_keys=False, width=200))


if __name__ == "__main__":
    main()
