"""Seconds per training batch of BP, Meta-PCN (jacobi, sweep), PC and iPC at equal T, measured
interleaved and taken as the minimum over repeats, so a loaded shared machine distorts it less
than the per-epoch wall clock of bench.py.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/timing.py --repeats 7 \
        -o benchmarks/train_pcn/timing.yaml
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import yaml

from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, build_network
from cortexkit.tools.pcn.train import TrainConfig, _inference, normalize_weights


def step_seconds(spec, method, steps, batch, repeats, schedule="jacobi"):
    torch.manual_seed(0)
    net = build_network(spec)
    x = torch.randn(batch, *spec.in_shape)
    y = torch.randint(0, spec.classes, (batch,))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    eta = 1.0 if method == "meta-pcn" else 0.1
    cfg = TrainConfig(method=method, inference=InferenceConfig(steps, eta, schedule=schedule))
    params = list(net.parameters())

    def weight_step(grads):
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
        normalize_weights(net)

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
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
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
    text = yaml.safe_dump(out, sort_keys=False)
    print(text) if args.output == "-" else Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
