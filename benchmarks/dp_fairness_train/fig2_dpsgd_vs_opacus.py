"""Figure 2: the degenerate mode (--constraint none) is DP-SGD and matches Opacus DP-SGD at equal
(sigma, q, T, C, lr) on Adult at epsilon 1 and 3 (delta 1e-5), 5 seeds, same split and features.

Opacus 1.6: PrivacyEngine.make_private(poisson_sampling=True), SGD, CrossEntropyLoss, nn.Linear
(zero init, as ours). Ours: cortexkit.tools.dpfair.raco.train with constraints=None.
sigma is calibrated once with Opacus' PRV accountant for 680 steps (20 epochs of B = 1024) and
used by both; each side also reports its own epsilon (ours: PLD).

    python benchmarks/dp_fairness_train/fig2_dpsgd_vs_opacus.py --out benchmarks/dp_fairness_train/results/fig2_dpsgd_vs_opacus.yaml
"""
import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

BATCH, EPOCHS, CLIP, LR, DELTA = 1024, 20, 1.0, 8.0, 1e-5


def opacus_run(d, sigma, seed):
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    x, y = d["x_train"], d["y_train"]
    model = torch.nn.Linear(x.shape[1], len(d["classes"]))
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH)
    engine = PrivacyEngine(accountant="prv", secure_mode=False)
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=sigma, max_grad_norm=CLIP, poisson_sampling=True,
                                             noise_generator=torch.Generator().manual_seed(seed))
    loss_fn = torch.nn.CrossEntropyLoss()
    steps = 0
    t0 = time.perf_counter()
    for _ in range(EPOCHS):
        for xb, yb in loader:
            opt.zero_grad()
            if len(xb):
                loss_fn(model(xb), yb).backward()
            opt.step()
            steps += 1
    seconds = time.perf_counter() - t0
    with torch.no_grad():
        pred = model(d["x_test"]).argmax(1).numpy()
    from cortexkit.tools.dpfair import metrics
    gaps = metrics.fairness_gaps(pred, d["y_test"].numpy(), d["g_test"], 2)
    return {"error": float((pred != d["y_test"].numpy()).mean()), "dp_gap": gaps["dp_gap"], "eo_gap": gaps["eo_gap"],
            "steps": steps, "seconds": seconds, "epsilon_prv": float(engine.get_epsilon(DELTA))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "fig2_dpsgd_vs_opacus.yaml"))
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    from opacus.accountants.utils import get_noise_multiplier

    d = common.encode("adult")
    n = len(d["y_train"])
    q = BATCH / n
    steps = EPOCHS * int(np.ceil(n / BATCH))
    result = {"figure": "2 DP-SGD vs Opacus", "commit": common.git_commit(), "data": "adult 75/25 seed 100",
              "batch": BATCH, "q": q, "steps": steps, "clip": CLIP, "lr": LR, "delta": DELTA, "by_epsilon": {}}
    for eps in (1.0, 3.0):
        sigma = get_noise_multiplier(target_epsilon=eps, target_delta=DELTA, sample_rate=q, steps=steps,
                                     accountant="prv", epsilon_tolerance=0.005)
        ours, theirs = [], []
        for seed in range(args.seeds):
            r = common.raco_run(d, gamma=None, epsilon=10 * eps, sigma=sigma, batch=BATCH, clip=CLIP, lr=LR,
                                steps=steps, seed=seed)
            ours.append({"error": r["last"]["error"], "dp_gap": r["last"]["dp_gap"], "eo_gap": r["last"]["eo_gap"],
                         "seconds": r["seconds"], "epsilon_pld": r["epsilon"]})
            theirs.append(opacus_run(d, sigma, seed))
            print(eps, seed, ours[-1], theirs[-1], flush=True)

        def summary(rows):
            acc = [1 - r["error"] for r in rows]
            return {"accuracy_mean": statistics.fmean(acc), "accuracy_sd": statistics.stdev(acc),
                    "dp_gap_mean": statistics.fmean(r["dp_gap"] for r in rows),
                    "eo_gap_mean": statistics.fmean(r["eo_gap"] for r in rows),
                    "seconds_median": statistics.median(r["seconds"] for r in rows), "runs": rows}

        o, t = summary(ours), summary(theirs)
        result["by_epsilon"][eps] = {
            "sigma": sigma, "ours": o, "opacus": t,
            "accuracy_difference": o["accuracy_mean"] - t["accuracy_mean"],
            "time_ratio_ours_over_opacus": o["seconds_median"] / t["seconds_median"],
            "epsilon_ours_pld": ours[0]["epsilon_pld"], "epsilon_opacus_prv": theirs[0]["epsilon_prv"]}
        common.write_yaml(args.out, result)


if __name__ == "__main__":
    main()
