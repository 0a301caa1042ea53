"""Reflection-copula sampling speed at d = 64 (digits) against the TLL vine, in one run.

Trains one reflection copula with the issue's network (MLP 512 x 5, 49 Euler steps) for a fixed
time on the digits pseudo-observations (bench.py's preprocessing), fits the benchmark's tuned TLL
vine (pyvinecopulib, mBIC, mult 7.33) on the same u, then times sampling n rows for

* ``loop``: the previous sampler (torch.no_grad, concatenating t to u at every step),
* ``fp32``: torch.inference_mode, t folded into the first layer's bias (the default now),
* ``bf16``: the same with the network in bfloat16 (AMX on this CPU), positions float32,

and the vine's ``simulate``; reports samples/s, ratios to the vine, and W2 / tau / max KS of each
against the held-out rows (fp32 vs bf16 from the same starting noise: max |u_fp32 - u_bf16|).

    OMP_NUM_THREADS=1 python benchmarks/estimate_copula/reflection_speed.py --train-seconds 150 \
        --out benchmarks/estimate_copula/results/reflection_speed.yaml
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import pseudo, sample_metrics  # noqa: E402


def loop_sampler(refl, n: int, generator: torch.Generator) -> np.ndarray:
    """The sampler before this change (kept here to measure against)."""
    from cortexkit.tools.copula.reflection import reflect

    grid = torch.linspace(refl.config.t_max, 0, refl.config.sample_steps + 1)
    with torch.no_grad():
        u = torch.rand((n, refl.dim), generator=generator)
        for i in range(refl.config.sample_steps):
            t, dt = float(grid[i]), float(grid[i + 1] - grid[i])
            u, _ = reflect(u + dt * refl.net(u, torch.full((n, 1), t)))
    return u.double().numpy()


def timed(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--train-seconds", type=float, default=150)
    p.add_argument("-n", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    from cortexkit.tools.copula.reflection import ReflectionConfig, fit_reflection

    u_train, u_test, _ = pseudo("digits", args.seed)
    n = args.n
    rep = {"dataset": "digits", "dim": int(u_train.shape[1]), "n": n, "command": " ".join(sys.argv),
           "torch": str(torch.__version__), "threads": torch.get_num_threads()}
    cfg = ReflectionConfig(hidden=512, layers=5, lr=1e-3, batch_size=256, steps=10**7,
                           time_limit=args.train_seconds)
    t0 = time.perf_counter()
    refl = fit_reflection(u_train, cfg, generator=torch.Generator().manual_seed(args.seed))
    rep["reflection"] = {"config": "MLP 512 x 5, 49 Euler steps, lr 1e-3, batch 256",
                         "train_seconds": time.perf_counter() - t0, "steps": refl.steps_done}

    import pyvinecopulib as pv

    controls = pv.FitControlsVinecop(family_set=[pv.BicopFamily.tll], selection_criterion="mbic",
                                     nonparametric_method="constant", nonparametric_mult=7.33, num_threads=1)
    t0 = time.perf_counter()
    vine = pv.Vinecop.from_data(u_train, controls=controls)
    rep["vine"] = {"settings": "TLL, mBIC, constant, mult 7.33", "fit_seconds": time.perf_counter() - t0}
    sec, u_v = timed(lambda: vine.sample(n, seeds=[args.seed]), args.repeats)
    print(f"vine fitted in {rep['vine']['fit_seconds']:.0f} s; reflection {rep['reflection']}", file=sys.stderr,
          flush=True)
    rep["vine"].update({"sample_seconds": sec, "samples_per_second": n / sec,
                        **sample_metrics(np.asarray(u_v), u_test, args.seed)})

    variants = {"loop": lambda g: loop_sampler(refl, n, g),
                "fp32": lambda g: refl.sample(n, g, precision="fp32"),
                "bf16": lambda g: refl.sample(n, g, precision="bf16")}
    samples = {}
    for name, fn in variants.items():
        sec, u_s = timed(lambda: fn(torch.Generator().manual_seed(100 + args.seed)), args.repeats)
        samples[name] = u_s
        print(f"{name}: {n / sec:.0f} samples/s (vine {n / rep['vine']['sample_seconds']:.0f})", file=sys.stderr,
              flush=True)
        rep[name] = {"sample_seconds": sec, "samples_per_second": n / sec,
                     "speedup_vs_vine": rep["vine"]["sample_seconds"] / sec,
                     **sample_metrics(np.clip(u_s, 1e-7, 1 - 1e-7), u_test, args.seed)}
    rep["fp32_vs_loop_max_abs_u"] = float(np.abs(samples["fp32"] - samples["loop"]).max())
    diff = np.abs(samples["bf16"] - samples["fp32"])
    rep["bf16_vs_fp32"] = {"max_abs_u": float(diff.max()), "mean_abs_u": float(diff.mean()),
                           "w2_change": rep["bf16"]["w2"] - rep["fp32"]["w2"],
                           "tau_change": rep["bf16"]["tau_frobenius"] - rep["fp32"]["tau_frobenius"],
                           "ks_change": rep["bf16"]["ks_max"] - rep["fp32"]["ks_max"]}
    # larger batches: does throughput grow with rows per matrix product?
    big = 4 * n
    for name in ("fp32", "bf16"):
        sec, _ = timed(lambda: refl.sample(big, torch.Generator().manual_seed(1), precision=name), 1)
        rep[name][f"samples_per_second_n{big}"] = big / sec
    text = yaml.safe_dump(rep, sort_keys=False)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
