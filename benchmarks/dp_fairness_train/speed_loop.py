"""Issue 23 speed: the per-step training loop of RaCO-DP and of our DP-SGD mode against Opacus DP-SGD at
the same T, q and sigma (Adult, logistic regression, expected batch 4096, sigma 10, C 3), interleaved so that
load from other users of the shared machine hits all sides alike; ours with the closed-form batched
per-example gradients (default) and with the vmap path it replaced. ``--model mlp`` times the ReLU MLP
(``--hidden 64``) the same way on both sides (same torch module, random init), Opacus through its hooks on
indexed batches only (its DataLoader column is the logistic one's collation cost again).

    OMP_NUM_THREADS=1 python benchmarks/dp_fairness_train/speed_loop.py --repeats 3 \
        --out benchmarks/dp_fairness_train/results/speed_loop.yaml
    OMP_NUM_THREADS=1 python benchmarks/dp_fairness_train/speed_loop.py --repeats 3 --model mlp \
        --out benchmarks/dp_fairness_train/results/speed_loop_mlp.yaml
"""
import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

BATCH, STEPS = 4096, 100
MODEL, HIDDEN = "logistic", [64]


def network(d, seed):
    from cortexkit.tools.dpfair import models

    torch.manual_seed(seed)
    net = models.build_model(MODEL, d["x_train"].shape[1], 2, HIDDEN if MODEL == "mlp" else [])
    return models.init_zero_(net) if MODEL == "logistic" else net


def ours(d, gamma, per_example, seed):
    from cortexkit.tools.dpfair import constraints as C, models, raco

    n = len(d["y_train"])
    rc = cells = None
    if gamma is not None:
        rc = C.demographic_parity([d["sensitive"]], d["train_cols"], d["classes"], gamma)
        cells = torch.tensor(rc.partition.cell_index(d["train_cols"]))
    cfg = raco.RacoConfig(steps=STEPS, sampling_rate=BATCH / n, sigma=10.0, clip_norm=3.0,
                          laplace_b=0.03 if rc is not None else float("inf"), lr=0.5, temperature=8.0,
                          per_example=per_example)
    net = network(d, seed)
    t0 = time.perf_counter()
    raco.train(net, d["x_train"], d["y_train"], cells, rc, cfg, torch.Generator().manual_seed(seed))
    return (time.perf_counter() - t0) / STEPS


def opacus(d, seed):
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    model = torch.nn.Linear(d["x_train"].shape[1], 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(d["x_train"], d["y_train"]),
                                         batch_size=BATCH)
    model, opt, loader = PrivacyEngine(accountant="prv").make_private(
        module=model, optimizer=opt, data_loader=loader, noise_multiplier=10.0, max_grad_norm=3.0,
        poisson_sampling=True)
    loss_fn = torch.nn.CrossEntropyLoss()
    steps, t0 = 0, time.perf_counter()
    while steps < STEPS:
        for xb, yb in loader:
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()
            steps += 1
            if steps == STEPS:
                break
    return (time.perf_counter() - t0) / STEPS


def opacus_direct(d, seed):
    """Opacus's per-step work alone (GradSampleModule hooks + DPOptimizer clip/noise) on Poisson batches
    indexed straight from the tensors, as ours are: no DataLoader collation in the timing."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    n = len(d["y_train"])
    model = GradSampleModule(network(d, seed))
    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.5), noise_multiplier=10.0, max_grad_norm=3.0,
                      expected_batch_size=BATCH)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)
    t0 = time.perf_counter()
    for _ in range(STEPS):
        idx = (torch.rand(n, generator=gen) < BATCH / n).nonzero().squeeze(1)
        opt.zero_grad()
        loss_fn(model(d["x_train"][idx]), d["y_train"][idx]).backward()
        opt.step()
    return (time.perf_counter() - t0) / STEPS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "speed_loop.yaml"))
    ap.add_argument("--model", choices=("logistic", "mlp"), default="logistic")
    ap.add_argument("--hidden", default="64", help="MLP hidden sizes, comma list")
    args = ap.parse_args()
    global MODEL, HIDDEN
    MODEL, HIDDEN = args.model, [int(h) for h in args.hidden.split(",")]
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    d = common.encode("adult")
    times = {k: [] for k in ("opacus", "opacus_direct", "dpsgd_closed", "raco_closed", "dpsgd_vmap", "raco_vmap")}
    if MODEL == "mlp":
        del times["opacus"]
    for rep in range(args.repeats):
        if "opacus" in times:
            times["opacus"].append(opacus(d, rep))
        times["opacus_direct"].append(opacus_direct(d, rep))
        times["dpsgd_closed"].append(ours(d, None, "closed-form", rep))
        times["raco_closed"].append(ours(d, 0.05, "closed-form", rep))
        times["dpsgd_vmap"].append(ours(d, None, "vmap", rep))
        times["raco_vmap"].append(ours(d, 0.05, "vmap", rep))
        print({k: v[-1] for k, v in times.items()}, flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    model = "logistic" if MODEL == "logistic" else f"MLP hidden {HIDDEN}"
    out = {"what": "seconds per step (median of repeats; opacus = its DPDataLoader loop, opacus_direct = hooks + "
                   f"DPOptimizer on indexed batches), Adult {model}, B 4096, sigma 10, C 3, T 100, 1 thread",
           "load_average_at_start": list(os.getloadavg()), "commit": common.git_commit(), "repeats": args.repeats,
           "seconds_per_step": med,
           "ratio_our_dpsgd_over_opacus_direct": med["dpsgd_closed"] / med["opacus_direct"],
           "ratio_raco_over_opacus_direct": med["raco_closed"] / med["opacus_direct"],
           "ratio_vmap_dpsgd_over_opacus_direct": med["dpsgd_vmap"] / med["opacus_direct"],
           "ratio_vmap_raco_over_opacus_direct": med["raco_vmap"] / med["opacus_direct"]}
    if "opacus" in med:
        out.update({"ratio_our_dpsgd_over_opacus": med["dpsgd_closed"] / med["opacus"],
                    "ratio_raco_over_opacus": med["raco_closed"] / med["opacus"],
                    "ratio_vmap_dpsgd_over_opacus": med["dpsgd_vmap"] / med["opacus"],
                    "ratio_vmap_raco_over_opacus": med["raco_vmap"] / med["opacus"]})
    common.write_yaml(args.out, out)
    print(out)


if __name__ == "__main__":
    main()
