"""pcn19, after the verdict (informational, decides nothing): the cost of cap + AdamW decay 1
against pin measured so that load on a shared machine cancels more. Meta-PCN at its default T on
the MLPs of timing.py (batch 128, 1 thread); pin and cap:1 batches alternate N times (the order
flipped every pair), each timed with the process's CPU clock; the statistic is the median over
pairs of the per-pair ratio cap:1 / pin (a load spike hits one pair, not a whole mode), with the
ratio of the medians beside it. Also the AdamW step alone (decay 0 vs 1) in microseconds.

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn19_cost_probe.py --pairs 200 \\
        -o benchmarks/train_pcn/pcn19_cost_probe.yaml

pcn20 named this probe as its cost check, with ``--depths`` (the MLP depths probed) and ``--bp``:
a plain-BP batch (no weight normalisation, decay 0) joins every pair, the three batches in an
order that cycles through all six permutations, and the per-triple ratios cap:1 / BP and pin / BP
are reported the same way (median over triples, interquartile range): the issue's bound is
seconds per epoch <= 1.3x BP's.

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn19_cost_probe.py --pairs 300 --depths 3,5,8 \\
        --bp -o benchmarks/train_pcn/pcn20_cost_probe.yaml

pcn21 added ``--candidate MODE[:DECAY]`` (default cap:1, the runs above): the batch timed against
pin, e.g. ``learn`` (pin at learnt per-layer gains, their gradient <G, W> per layer and one more
AdamW parameter).

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn19_cost_probe.py --pairs 300 --depths 3,5,16 \
        --bp --candidate learn -o benchmarks/train_pcn/pcn21_cost_probe.yaml

pcn22 added ``--candidate-gain RULE`` (default the default gain): the candidate's gain rule, e.g.
``--candidate pin --candidate-gain fan-init`` (pinned at torch's init scale; same arithmetic).

    OMP_NUM_THREADS=1 python benchmarks/train_pcn/pcn19_cost_probe.py --pairs 300 --depths 3,5,8 \
        --bp --candidate pin --candidate-gain fan-init -o benchmarks/train_pcn/pcn22_cost_probe.yaml
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import torch

from cortexkit.tools.pcn.defaults import DEFAULT_GAIN, default_steps
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import NetworkSpec, build_network
from cortexkit.tools.pcn.train import LearntGains, TrainConfig, _inference, normalize_weights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import write_yaml  # noqa: E402


def runner(spec, mode, decay, batch=128, method="meta-pcn", gain=DEFAULT_GAIN):
    torch.manual_seed(0)
    net = build_network(spec)
    x = torch.randn(batch, *spec.in_shape)
    y = torch.randint(0, spec.classes, (batch,))
    gains = LearntGains(net, gain) if mode == "learn" else None
    opt = torch.optim.AdamW(list(net.parameters()) + ([gains.log_gain] if gains else []),
                            lr=1e-4, weight_decay=decay)
    cfg = TrainConfig(method=method,
                      inference=InferenceConfig(default_steps(method, spec.depth), 1.0))
    params = list(net.parameters())
    if mode is not None:
        normalize_weights(net, gain)

    def weight_step(grads):
        for p, g in zip(params, grads):
            p.grad = g
        if gains is not None:
            gains.set_grad()
        opt.step()
        if mode is not None:                  # None: plain BP, no weight normalisation
            normalize_weights(net, gains.values() if gains else gain, mode=mode)

    def one():
        weight_step(_inference(net, x, y, cfg, 1.0 / batch, weight_step).grads)

    def opt_only():
        opt.step()

    one()
    return one, opt_only


def cpu(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--depths", default="5,8,12,16")
    p.add_argument("--bp", action="store_true", help="time a plain-BP batch in every pair too")
    p.add_argument("--candidate", default="cap:1",
                   help="MODE[:AdamW DECAY] timed against pin (pcn21: learn)")
    p.add_argument("--candidate-gain", default=DEFAULT_GAIN,
                   help="the candidate's weight-norm gain rule (pcn22: fan-init, mode pin)")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    cand_mode, _, cand_decay = args.candidate.partition(":")
    cand_decay = float(cand_decay or 0.0)
    label = args.candidate.replace(":", "").replace(".", "")
    if args.candidate_gain != DEFAULT_GAIN:
        label = f"{label}_{args.candidate_gain}".replace("-", "_")
    torch.set_num_threads(1)
    out = {"settings": "Meta-PCN defaults (T = L - 1), batch 128, 1 thread, CPU clock; pin vs "
                       f"{args.candidate} (MODE:AdamW decay) alternating, order flipped every pair",
           "candidate": args.candidate, "candidate_gain": args.candidate_gain,
           "pairs": args.pairs, "results": {}}
    if args.bp:
        out["settings"] += "; plain BP (no WN, decay 0) in every pair, orders cycling"
    orders = list(itertools.permutations(range(3)))
    for depth in (int(d) for d in args.depths.split(",")):
        spec = NetworkSpec("mlp", (1, 28, 28), 10, width=128, depth=depth)
        (pin, pin_opt), (cap, cap_opt) = runner(spec, "pin", 0.0), runner(spec, cand_mode, cand_decay,
                                                                    gain=args.candidate_gain)
        bp = runner(spec, None, 0.0, method="bp")[0] if args.bp else None
        ratios, tp, tc, op, oc, cb, pb = [], [], [], [], [], [], []
        for i in range(args.pairs):
            if bp is not None:
                t = [0.0, 0.0, 0.0]
                for k in orders[i % len(orders)]:
                    t[k] = cpu((pin, cap, bp)[k])
                q, c = t[0], t[1]
                cb.append(c / t[2])
                pb.append(q / t[2])
            elif i % 2:
                c, q = cpu(cap), cpu(pin)
            else:
                q, c = cpu(pin), cpu(cap)
            ratios.append(c / q)
            tp.append(q)
            tc.append(c)
            op.append(cpu(pin_opt))
            oc.append(cpu(cap_opt))
        r = np.array(ratios)
        out["results"][f"MLP L={depth} w128"] = {
            "median_pair_ratio": round(float(np.median(r)), 3),
            "pair_ratio_iqr": [round(float(np.percentile(r, 25)), 3),
                               round(float(np.percentile(r, 75)), 3)],
            "ratio_of_medians": round(float(np.median(tc) / np.median(tp)), 3),
            "pin_ms": round(1e3 * float(np.median(tp)), 3),
            "adamw_step_us_decay0": round(1e6 * float(np.median(op)), 1),
            "adamw_step_us_decay1": round(1e6 * float(np.median(oc)), 1)}
        for name, r in ((f"{label}_over_bp", cb), ("pin_over_bp", pb)) if bp is not None else ():
            out["results"][f"MLP L={depth} w128"][name] = {
                "median": round(float(np.median(r)), 3),
                "iqr": [round(float(np.percentile(r, 25)), 3),
                        round(float(np.percentile(r, 75)), 3)]}
        print(depth, out["results"][f"MLP L={depth} w128"], flush=True)
    write_yaml(out, args.output)


if __name__ == "__main__":
    main()
