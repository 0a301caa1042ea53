"""Issue 31, helper pcn13: the forward signal at initialisation under candidate weight-norm gain
rules between ``fan`` (activation power p = 0) and ``fan-act`` (p = 1), per block, for the MLP
(MNIST, L = 5/8/12/16) and VGG-5/7/9 x1/8 (CIFAR-10 subset), as stop40b_signal.py measures it
(RMS over 512 training images of the input-dependent part of each block's pre-activation, mean of
seeds 0-2; ratio per block = geometric mean from block 1 to the last hidden block), plus the
initial logit RMS (input-dependent part and whole).

A candidate is ``p=P`` (activation factor (1/rms(phi))^P on every hidden layer) with an optional
``;out=S`` (the output layer's gain times S), or a named rule (fan, fan-act, fan-sqrt-act =
p=0.5, fan-act-readout = p=1;out=0.125).

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn13_signal.py \
        --candidates fan,fan-act,p=0.25,p=0.5,p=0.75 -o benchmarks/train_pcn/pcn13_signal.yaml
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import torch

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn.api import preprocess_for
from cortexkit.tools.pcn.defaults import GAIN_RULE_PARAMS
from cortexkit.tools.pcn.network import NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn.train import layer_gains, normalize_weights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import write_yaml  # noqa: E402
from stop40_probe import forward_stats  # noqa: E402  (the same per-block measurement)
from stop40b_signal import DATA  # noqa: E402


def parse(candidate):
    """a rule name (fan, fan-sqrt-act, ...) / 'p=0.5' / 'p=1;out=0.1' -> (act_power, out_scale)."""
    if candidate in GAIN_RULE_PARAMS:
        return GAIN_RULE_PARAMS[candidate]
    fields = dict(part.split("=") for part in candidate.split(";"))
    return float(fields.get("p", 0.0)), float(fields.get("out", 1.0))


@torch.no_grad()
def apply(net, power, out_scale):
    """normalize_weights at the rule 'fan' with the activation power and output scale given."""
    normalize_weights(net, "fan")   # the same projection; then rescale to the candidate's gains
    for layer, base, target in zip(weight_layers(net), layer_gains(net, "fan"),
                                   layer_gains(net, "fan", act_power=power, out_scale=out_scale)):
        layer.weight.mul_(target / base)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--candidates", default="fan,fan-act,p=0.5",
                   help="comma list; inside one candidate ';' joins p and out (p=1;out=0.1)")
    p.add_argument("--depths", default="5,8,12,16")
    p.add_argument("--archs", default="vgg5,vgg7,vgg9")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    sets = {"mnist": ("mnist_png_train10k_test10k.safetensors", "mnist",
                      [("mlp", int(d)) for d in args.depths.split(",") if d]),
            "cifar": ("cifar10_jpg_train10k_test2k.safetensors", "cifar10",
                      [(a, None) for a in args.archs.split(",") if a])}
    out = {"batch": args.batch, "seeds": args.seeds, "rows": []}
    for name, (file, norm, nets) in sets.items():
        if not nets:
            continue
        images = read_images(DATA / file, "train").images[:args.batch]
        x = preprocess_for(images, norm)(torch.from_numpy(images))
        for arch, depth in nets:
            spec = (NetworkSpec("mlp", tuple(images.shape[1:]), 10, width=128, depth=depth)
                    if arch == "mlp" else
                    NetworkSpec(arch, tuple(images.shape[1:]), 10, width_scale=0.125))
            for cand in args.candidates.split(","):
                power, out_scale = parse(cand)
                per_seed, logit, logit_in = [], [], []
                for seed in map(int, args.seeds.split(",")):
                    torch.manual_seed(seed)
                    net = build_network(spec)
                    apply(net, power, out_scale)
                    stats = forward_stats(net, x)
                    per_seed.append([r["h_input_rms"] for r in stats])
                    logit.append(stats[-1]["h_rms"])
                    logit_in.append(stats[-1]["h_input_rms"])
                rms = np.mean(per_seed, axis=0)
                hidden = rms[:-1]   # the last block is the linear output
                ratio = math.exp(math.log(hidden[-1] / hidden[0]) / max(1, len(hidden) - 1))
                row = {"set": name, "net": f"{arch} L={depth}" if depth else f"{arch} x0.125",
                       "candidate": cand, "act_power": power, "out_scale": out_scale,
                       "h_input_rms": [float(f"{v:.3g}") for v in rms],
                       "ratio_per_block": round(ratio, 3),
                       "logit_rms": float(f"{np.mean(logit):.3g}"),
                       "logit_input_rms": float(f"{np.mean(logit_in):.3g}")}
                out["rows"].append(row)
                print({k: row[k] for k in ("net", "candidate", "ratio_per_block", "logit_rms",
                                           "logit_input_rms")}, file=sys.stderr, flush=True)
    write_yaml(out, args.output)


if __name__ == "__main__":
    main()
