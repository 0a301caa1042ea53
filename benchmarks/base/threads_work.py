"""Work size at which a second torch thread pays: an MLP training step at threads 1 and 2.

    python benchmarks/base/threads_work.py [--busy 4] [--seconds 2] > out.yaml

Each size (batch, width, depth) runs the same number of Adam steps at 1 and at 2 threads in one
process, interleaved (1, 2, 1, 2, ...) so both see the same machine; ``--busy N`` starts N
spinning processes beside it (the "shared node" case) and stops them at the end. Prints YAML:
per size the flops per step, seconds per step at each thread count, and the ratio t2/t1.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time

import yaml


def spin(stop):
    while not stop.is_set():
        pass


def step_time(torch, batch, width, depth, threads, seconds):
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    layers = []
    for i in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.SiLU()]
    net = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(batch, width, generator=gen)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or steps < 3:
        opt.zero_grad()
        net(x).square().mean().backward()
        opt.step()
        steps += 1
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    import torch

    stop = mp.Event()
    spinners = [mp.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    sizes = [(256, 32, 2), (256, 64, 2), (256, 128, 2), (512, 256, 3), (1024, 512, 3),
             (2048, 1024, 3)]
    rows = []
    try:
        for batch, width, depth in sizes:
            flops = 6 * batch * width * width * depth  # forward + backward, multiply-adds x2
            t = {1: [], 2: []}
            for _ in range(args.rounds):
                for threads in (1, 2):
                    t[threads].append(step_time(torch, batch, width, depth, threads, args.seconds))
            t1, t2 = min(t[1]), min(t[2])
            rows.append({"batch": batch, "width": width, "depth": depth, "flops_per_step": flops,
                         "s_per_step_1": round(t1, 6), "s_per_step_2": round(t2, 6),
                         "ratio_2_over_1": round(t2 / t1, 3)})
            print(rows[-1], file=sys.stderr)
    finally:
        stop.set()
        for p in spinners:
            p.join(timeout=5)
    yaml.safe_dump({"busy_processes": args.busy, "cpus": os.cpu_count(),
                    "loadavg_at_end": list(os.getloadavg()), "sizes": rows},
                   sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
