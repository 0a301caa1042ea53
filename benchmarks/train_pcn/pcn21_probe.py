"""pcn21 probe (decides nothing): do mode ``learn``'s per-layer gains move on patches MLP L = 5?
Meta-PCN at its defaults, 5 epochs, pin and learn on the same seeds; after training, every weight
layer's spectral proxy (sqrt(m)+sqrt(n)) std(W), which mode learn pins at the learnt gain, so the
proxy is the gain; reported beside the resolved (initial) gain, with final test top-1.
``--gain-lr-scales 1,30`` also runs learn with the log-gains' AdamW rate x k (the weights' rate
unchanged; k = 1 is the candidate): where the gains would go if their step were not bounded by
Adam's ~lr per step (a diagnostic, not a candidate). ``--modes`` may name ``bp`` (plain BP, no
weight normalisation: its layers' proxies after training against the resolved gains, beside
those of torch's default initialisation, ``init_over_resolved``); ``--pin-gain-scales k`` adds
pin runs at every resolved gain x k (informational).

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn21_probe.py --data /tmp/pcn21/heldout/patches \\
        --depth 5 --seeds 0,1 -o benchmarks/train_pcn/pcn21_probe_L5.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn import api
from cortexkit.tools.pcn.defaults import DEFAULT_GAIN
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn import train as train_module
from cortexkit.tools.pcn.train import TrainConfig, layer_gains, spectral_proxy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import write_yaml  # noqa: E402


GAIN_LR_SCALE = [1.0]
_AdamW = torch.optim.AdamW


class _ScaledGainAdamW(_AdamW):
    """AdamW whose last parameter (train's log-gains, appended after the network's) gets the
    rate x GAIN_LR_SCALE[0]."""

    def __init__(self, params, lr, **kw):
        params = list(params)
        groups = [{"params": params[:-1]}, {"params": params[-1:], "lr": lr * GAIN_LR_SCALE[0]}]
        super().__init__(groups, lr=lr, **kw)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--depth", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--modes", default="pin,learn")
    p.add_argument("--method", default="meta-pcn")
    p.add_argument("--gain-lr-scales", default="1")
    p.add_argument("--pin-gain-scales", default="")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    tr, te = read_images(args.data, "train"), read_images(args.data, "test")
    shape, classes = tuple(tr.images.shape[1:]), int(tr.labels.max()) + 1
    spec = NetworkSpec("mlp", shape, classes, width=128, depth=args.depth)
    init = [round(float(g), 4) for g in layer_gains(build_network(spec), DEFAULT_GAIN)]
    torch.manual_seed(0)
    fresh = [spectral_proxy(l.weight) for l in weight_layers(build_network(spec))]
    out = {"data": str(args.data), "depth": args.depth, "epochs": args.epochs,
           "resolved_gain": init,
           "init_over_resolved": [round(a / b, 4) for a, b in zip(fresh, init)], "runs": []}
    plain_gains = train_module.layer_gains
    for seed in map(int, args.seeds.split(",")):
        variants = [(m, 1.0) for m in args.modes.split(",")] + [
            ("learn", float(k)) for k in args.gain_lr_scales.split(",") if float(k) != 1.0] + [
            ("pin", -float(k)) for k in args.pin_gain_scales.split(",") if k]
        for mode, scale in variants:
            GAIN_LR_SCALE[0] = scale
            torch.optim.AdamW = _ScaledGainAdamW if mode == "learn" and scale != 1.0 else _AdamW
            k = -scale if scale < 0 else 1.0       # negative: a pin run at the gains x k
            train_module.layer_gains = (plain_gains if k == 1.0 else lambda *a, k=k, **kw: [
                None if g is None else g * k for g in plain_gains(*a, **kw)])
            cfg = TrainConfig(method="bp" if mode == "bp" else args.method, epochs=args.epochs,
                              weight_norm=mode != "bp",
                              weight_norm_mode="pin" if mode == "bp" else mode,
                              inference=InferenceConfig(steps=args.depth - 1, state_lr=1.0))
            model, result = api.fit(tr.images, tr.labels, spec, cfg, normalize="dataset",
                                    test=(te.images, te.labels), seed=seed)
            proxies = [round(spectral_proxy(l.weight), 4) for l in weight_layers(model.net)]
            row = {"seed": seed, "mode": mode if k == 1.0 else f"pin x {k:.4g}",
                   "gain_lr_scale": scale if scale > 0 else 1.0, "proxy": proxies,
                   "proxy_over_resolved": [round(a / b, 4) for a, b in zip(proxies, init)],
                   "top1_per_epoch": [round(100 * h.test_top1, 2) for h in result.history]}
            out["runs"].append(row)
            print(row, flush=True)
    write_yaml(out, args.output)


if __name__ == "__main__":
    main()
