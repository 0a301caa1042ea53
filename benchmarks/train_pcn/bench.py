"""train-pcn benchmark: BP, BP + WN, PC, iPC, Meta-PCN, Meta-PCN without WN on the same arrays,
the same seeds and the same subsets, in one run; writes YAML.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/bench.py mnist \
        --depths 3,5,8,12,16 --epochs 2 --seeds 0 -o benchmarks/train_pcn/mnist.yaml
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/bench.py cifar \
        --archs vgg5,vgg7,vgg9 --width-scale 0.125 --train-limit 5000 --epochs 2 --seeds 0 \
        -o benchmarks/train_pcn/cifar.yaml
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/bench.py mnist --depths 5,8,12,16 \
        --train-limit 5000 --methods BP,BP+WN,Meta-PCN,'Meta-PCN w/o WN' \
        --gains 1,sqrt(2),2,2*sqrt(2) -o benchmarks/train_pcn/mnist_gain.yaml

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/bench.py path \
        --data /tmp/heldout/digits-idx --depths 5,8,12,16 --seeds 0,1,2 -o digits.yaml
    ... bench.py path --data /tmp/heldout/patches --kind conv --archs vgg5,vgg7,vgg9 ...
    ... bench.py path --data /tmp/pcnb/heldout/patches --depths 5 --epochs 5 --seeds 60,61 \
        --methods BP,Meta-PCN --wn-lr-scales 1,0.5   (pcn16: the WN methods at lr x 1 and x 0.5)
    ... bench.py path --data /tmp/pcn17/heldout/patches --depths 5 --epochs 5 --seeds 100 \
        --methods BP+WN,Meta-PCN --wn-modes pin,cap   (pcn17: the WN pinned and capped)
    ... bench.py path --data /tmp/pcn17/heldout/patches --depths 5 --epochs 5 --seeds 112 \
        --methods BP+WN,Meta-PCN --wn-variants pin,cap:0.3,cap:1   (pcn18: MODE[:AdamW decay])

(``path``: any IMAGES train-pcn reads, its train and test splits; build the held-out sets with
heldout.py.) Every method uses AdamW (lr 1e-3, PCX warmup-cosine), batch 128 and train-pcn's
default inference settings (tools/pcn/defaults.py): Meta-PCN T = L - 1, eta_x = 1 (SGD states,
no momentum, Jacobi); PC and iPC T = max(8, L - 1), eta_x = 0.1; WN at the default gain rule
unless --gains names others. Imbalance = log10(max/min) over hidden layers of
the mean error energy at the end of each method's own inference, on 1,000 test images after
training (backprop's own errors for BP).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn import api
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec
from cortexkit.tools.pcn.defaults import (DEFAULT_GAIN, DEFAULT_WEIGHT_NORM_MODE, default_state_lr,
                                          default_steps)
from cortexkit.tools.pcn.train import GAIN_RULES, TrainConfig

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA",
                          Path(__file__).resolve().parents[3] / "shared" / "data")) / "pcn"
METHODS = {  # name: (method, weight_norm)
    "BP": ("bp", False), "BP+WN": ("bp", True), "PC": ("pc", False), "iPC": ("ipc", False),
    "Meta-PCN": ("meta-pcn", True), "Meta-PCN w/o WN": ("meta-pcn", False),
}


def write_yaml(data, output, width=200):
    """A benchmark's YAML to stdout (``-``) or to the file ``output``."""
    text = yaml.safe_dump(data, sort_keys=False, width=width)
    print(text) if output == "-" else Path(output).write_text(text)


def subset(images, labels, limit, seed=1234):
    if limit is None or limit >= len(labels):
        return images, labels
    order = np.random.default_rng(seed).permutation(len(labels))[:limit]
    return images[order], labels[order]


def run_one(name, spec, train, test, epochs, seed, steps, augment, normalize, init="default",
            gain=1.0, lr=1e-3, mode=DEFAULT_WEIGHT_NORM_MODE, decay=0.0):
    method, wn = METHODS[name]
    eta = default_state_lr(method)
    steps = default_steps(method, steps)   # ``steps`` arrives as L
    cfg = TrainConfig(method=method, epochs=epochs, batch_size=128, lr=lr, weight_norm=wn,
                      weight_norm_gain=gain, augment=augment, inference=InferenceConfig(steps=steps, state_lr=eta),
                      weight_norm_mode=mode, weight_decay=decay)
    start = time.perf_counter()
    model, result = api.fit(train[0], train[1], spec, cfg, normalize=normalize, test=test,
                            seed=seed, init=init)
    wall = time.perf_counter() - start
    probe = api.evaluate_model(model, test[0][:1000], test[1][:1000])
    hist = result.history
    return {"method": name, "seed": seed, "weight_norm_gain": (gain if isinstance(gain, str) else round(gain, 4)) if wn else None,
            "weight_norm_mode": mode if wn else None, "weight_decay": decay, "steps": steps if method != "bp" else 0,
            "lr": float(f"{lr:.6g}"),
            "final_top1": round(100 * hist[-1].test_top1, 2),
            "best_top1": round(100 * max(h.test_top1 for h in hist), 2),
            "s_per_epoch": round(float(np.mean([h.seconds for h in hist])), 2),
            "wall_s": round(wall, 1),
            "imbalance_log10": None if probe["imbalance_log10"] is None
            else round(float(probe["imbalance_log10"]), 2),
            "layer_energy": [float(f"{e:.3g}") for e in probe["layer_energy"]],
            "train_imbalance_log10": None if hist[-1].imbalance is None
            else round(float(hist[-1].imbalance), 2)}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("suite", choices=["mnist", "cifar", "path"])
    p.add_argument("--data", default=None,
                   help="IMAGES for the path suite; for mnist/cifar, another file of that layout")
    p.add_argument("--kind", choices=["mlp", "conv"], default="mlp",
                   help="path suite: MLPs of --depths or the --archs")
    p.add_argument("--depths", default="3,5,8,12,16")
    p.add_argument("--archs", default="vgg5,vgg7,vgg9")
    p.add_argument("--width-scale", type=float, default=0.125)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seeds", default="0")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--train-limit", type=int, default=None)
    p.add_argument("--test-limit", type=int, default=None)
    p.add_argument("--gains", default=DEFAULT_GAIN,
                   help="comma list of --weight-norm-gain values, each run for the WN methods "
                        "(BP+WN, Meta-PCN); methods without WN run once")
    p.add_argument("--init", choices=["default", "kaiming"], default="default")
    p.add_argument("--wn-lr-scales", default="1",
                   help="comma list of factors on AdamW's rate 1e-3, each run for the WN methods "
                        "(BP+WN, Meta-PCN) at every gain; methods without WN run at 1e-3")
    p.add_argument("--wn-modes", default=DEFAULT_WEIGHT_NORM_MODE,
                   help="comma list of --weight-norm-mode values (pin, cap), each run for the WN "
                        "methods at every gain and rate (pcn17)")
    p.add_argument("--wn-variants", default=None,
                   help="comma list of MODE[:DECAY] (e.g. pin,cap:0.3,cap:1), each run for the WN "
                        "methods with AdamW weight decay DECAY (default 0); replaces --wn-modes "
                        "(pcn18); methods without WN run at decay 0")
    p.add_argument("--ipc-max-depth", type=int, default=99,
                   help="skip iPC (T weight steps per batch) above this depth, to fit the time")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    file = Path(args.data) if args.data else DATA / (
        "mnist_png_train10k_test10k.safetensors" if args.suite == "mnist"
        else "cifar10_jpg_train10k_test2k.safetensors")
    tr, te = read_images(file, "train"), read_images(file, "test")
    train = subset(tr.images, tr.labels, args.train_limit)
    test = subset(te.images, te.labels, args.test_limit)
    seeds = [int(s) for s in args.seeds.split(",")]
    methods = args.methods.split(",")
    gains = [g if g in GAIN_RULES else float(eval(g, {"sqrt": np.sqrt}))  # e.g. 2*sqrt(2)
             for g in args.gains.split(",")]
    scales = [float(eval(k, {"sqrt": np.sqrt})) for k in args.wn_lr_scales.split(",")]
    modes = args.wn_modes.split(",")
    variants = ([(v.split(":")[0], float(v.split(":")[1]) if ":" in v else 0.0)
                 for v in args.wn_variants.split(",")] if args.wn_variants
                else [(m, 0.0) for m in modes])
    shape, classes = tuple(tr.images.shape[1:]), int(max(tr.labels.max(), te.labels.max())) + 1
    if args.suite == "mnist" or (args.suite == "path" and args.kind == "mlp"):
        configs = [(f"MLP L={d}", NetworkSpec("mlp", shape, classes, width=128, depth=d), d)
                   for d in map(int, args.depths.split(","))]
        augment, normalize = False, "mnist" if args.suite == "mnist" else "dataset"
    else:
        configs = []
        for arch in args.archs.split(","):
            spec = NetworkSpec(arch, shape, classes, width_scale=args.width_scale)
            from cortexkit.tools.pcn.network import Network
            configs.append((f"{arch} x{args.width_scale:g}", spec, len(Network(spec).blocks)))
        augment, normalize = args.suite == "cifar", "cifar10" if args.suite == "cifar" else "dataset"
    out = {"suite": args.suite, "data": file.name, "spec": configs[0][1].arch, "train_examples": int(len(train[1])),
           "test_examples": int(len(test[1])), "epochs": args.epochs, "seeds": seeds,
           "torch_threads": torch.get_num_threads(), "init": args.init,
           "gains": [g if isinstance(g, str) else round(g, 4) for g in gains],
           "wn_lr_scales": [round(k, 4) for k in scales], "wn_modes": modes,
           "wn_variants": [f"{m}:{d:g}" for m, d in variants], "runs": []}
    for label, spec, depth in configs:
        steps = depth   # run_one applies the default rule of each method
        for name in methods:
            if name == "iPC" and depth > args.ipc_max_depth:
                continue
            wn = METHODS[name][1]
            for gain, scale, (mode, decay) in [
                    (g, k, w) for g in (gains if wn else [1.0]) for k in (scales if wn else [1.0])
                    for w in (variants if wn else [(DEFAULT_WEIGHT_NORM_MODE, 0.0)])]:
                for seed in seeds:
                    row = {"config": label, "L": depth,
                           **run_one(name, spec, train, test, args.epochs, seed, steps, augment,
                                     normalize, args.init, gain, 1e-3 * scale, mode, decay)}
                    out["runs"].append(row)
                    print(yaml.safe_dump([row], sort_keys=False, width=200).strip(),
                          file=sys.stderr, flush=True)
                    if args.output != "-":
                        Path(args.output).write_text(yaml.safe_dump(out, sort_keys=False,
                                                                    width=200))
    if args.output == "-":
        print(yaml.safe_dump(out, sort_keys=False, width=200))


if __name__ == "__main__":
    main()
