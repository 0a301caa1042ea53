"""Seconds per training batch of BP, Meta-PCN (jacobi, sweep), PC and iPC at equal T, measured
interleaved and taken as the minimum over repeats, so a loaded shared machine distorts it less
than the per-epoch wall clock of bench.py.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/timing.py --repeats 7 \
        -o benchmarks/train_pcn/timing.yaml

``--defaults``: every method at train-pcn's default settings instead (T and eta_x of
tools/pcn/defaults.py, weight normalisation at the default gain for BP + WN and Meta-PCN only),
MLPs of L = 5, 8, 12, 16 and VGG-5/7/9 at 1/8 width: the issue's "seconds per epoch <= 1.3x BP's
at T chosen by the default rule".

``--modes``: Meta-PCN at its defaults with the weight normalisation pinned and capped
(``--weight-norm-mode pin|cap``, pcn17), interleaved, on the same MLPs and VGGs; with
``--variants pin,cap:0.3,cap:1`` (pcn18) each MODE[:AdamW weight decay], ratios over the first.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, build_network
from cortexkit.tools.pcn.defaults import (DEFAULT_GAIN, block_count, default_state_lr,
                                          default_steps)
from cortexkit.tools.pcn.train import TrainConfig, _inference, normalize_weights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import write_yaml  # noqa: E402


def step_seconds(spec, method, steps, batch, repeats, schedule="jacobi", wn=True, eta=None,
                 gain=1.0, mode="pin", decay=0.0):
    torch.manual_seed(0)
    net = build_network(spec)
    x = torch.randn(batch, *spec.in_shape)
    y = torch.randint(0, spec.classes, (batch,))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, weight_decay=decay)
    eta = eta if eta is not None else (1.0 if method == "meta-pcn" else 0.1)
    cfg = TrainConfig(method=method, inference=InferenceConfig(steps, eta, schedule=schedule))
    params = list(net.parameters())

    def weight_step(grads):
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
        if wn:
            normalize_weights(net, gain, mode=mode)

    def one():
        res = _inference(net, x, y, cfg, 1.0 / batch, weight_step)
        if method != "ipc":
            weight_step(res.grads)

    one()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        one()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--defaults", action="store_true")
    p.add_argument("--modes", action="store_true")
    p.add_argument("--variants", default="pin,cap", help="--modes: MODE[:DECAY] list (pcn18)")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.defaults:
        return defaults_table(args)
    if args.modes:
        return modes_table(args)
    configs = {"MLP L=8 w128 (MNIST shape)": NetworkSpec("mlp", (1, 28, 28), 10, width=128, depth=8),
               "VGG-5 x0.125 (CIFAR shape)": NetworkSpec("vgg5", (3, 32, 32), 10, width_scale=0.125)}
    methods = [("BP", "bp", "jacobi"), ("Meta-PCN jacobi", "meta-pcn", "jacobi"),
               ("Meta-PCN sweep", "meta-pcn", "sweep"), ("PC", "pc", "jacobi"),
               ("iPC", "ipc", "jacobi")]
    out = {"T": args.steps, "batch": 128, "repeats": args.repeats, "statistic": "min seconds per batch",
           "results": {}}
    for label, spec in configs.items():
        best = {name: float("inf") for name, _, _ in methods}
        for _ in range(2):  # interleave the methods twice
            for name, method, schedule in methods:
                best[name] = min(best[name], step_seconds(spec, method, args.steps, 128,
                                                          args.repeats, schedule))
        bp = best["BP"]
        out["results"][label] = {name: {"s_per_batch": round(t, 4), "x_bp": round(t / bp, 2)}
                                 for name, t in best.items()}
        print(label, out["results"][label], flush=True)
    write_yaml(out, args.output)


def defaults_table(args):
    configs = {f"MLP L={d} w128": NetworkSpec("mlp", (1, 28, 28), 10, width=128, depth=d)
               for d in (5, 8, 12, 16)}
    configs.update({f"{a.upper()} x1/8": NetworkSpec(a, (3, 32, 32), 10, width_scale=0.125)
                    for a in ("vgg5", "vgg7", "vgg9")})
    methods = [("BP", "bp", False), ("BP+WN", "bp", True), ("Meta-PCN", "meta-pcn", True),
               ("PC", "pc", False)]
    out = {"settings": "train-pcn defaults", "batch": 128, "repeats": args.repeats,
           "statistic": "min seconds per batch, methods interleaved twice", "results": {}}
    for label, spec in configs.items():
        L = block_count(spec.arch, spec.depth)
        best = {name: float("inf") for name, _, _ in methods}
        for _ in range(2):
            for name, method, wn in methods:
                if name == "PC" and spec.arch != "mlp":
                    continue  # 7-9x BP on VGG at T = 8 (timing.yaml); saves the shared CPU
                best[name] = min(best[name], step_seconds(
                    spec, method, default_steps(method, L), 128, args.repeats, wn=wn,
                    eta=default_state_lr(method), gain=DEFAULT_GAIN))
        out["results"][label] = {
            name: {"T": default_steps(m, L), "s_per_batch": round(best[name], 4),
                   "x_bp": round(best[name] / best["BP"], 2)}
            for name, m, _ in methods if best[name] < float("inf")}
        print(label, out["results"][label], flush=True)
    write_yaml(out, args.output)


def modes_table(args):
    configs = {f"MLP L={d} w128": NetworkSpec("mlp", (1, 28, 28), 10, width=128, depth=d)
               for d in (5, 8, 12, 16)}
    configs.update({f"{a.upper()} x1/8": NetworkSpec(a, (3, 32, 32), 10, width_scale=0.125)
                    for a in ("vgg5",)})
    out = {"settings": "Meta-PCN defaults, weight norm pinned vs capped", "batch": 128,
           "repeats": args.repeats, "statistic": "min seconds per batch, modes interleaved 3 times",
           "results": {}}
    for label, spec in configs.items():
        L = block_count(spec.arch, spec.depth)
        best = {v: float("inf") for v in args.variants.split(",")}
        for _ in range(3):
            for v in best:
                mode, _, decay = v.partition(":")
                best[v] = min(best[v], step_seconds(
                    spec, "meta-pcn", default_steps("meta-pcn", L), 128, args.repeats, wn=True,
                    eta=1.0, gain=DEFAULT_GAIN, mode=mode, decay=float(decay or 0)))
        first = next(iter(best))
        if list(best) == ["pin", "cap"]:   # pcn17's file layout
            out["results"][label] = {"pin_s_per_batch": round(best["pin"], 5),
                                     "cap_s_per_batch": round(best["cap"], 5),
                                     "cap_over_pin": round(best["cap"] / best["pin"], 3)}
        else:
            out["results"][label] = {v: {"s_per_batch": round(t, 5),
                                         f"over_{first}": round(t / best[first], 3)}
                                     for v, t in best.items()}
        print(label, out["results"][label], flush=True)
    write_yaml(out, args.output)


if __name__ == "__main__":
    main()
