"""Figure 5: speed. RaCO-DP per step vs our own DP-SGD mode (same expected batch 4096, same data),
Opacus DP-SGD per step at the same batch as the outside reference, and a full Adult run of the
installed command (<= 1000 steps) timed end to end.

    python benchmarks/dp_fairness_train/fig5_speed.py --out benchmarks/dp_fairness_train/results/fig5_speed.yaml
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

BATCH, STEPS, REPEATS = 4096, 100, 5


def per_step_pair(d, threads):
    """Median seconds per step of RaCO-DP and of our DP-SGD mode, measured interleaved (RaCO, DP-SGD,
    RaCO, ...) so that load from other users of the machine hits both alike."""
    torch.set_num_threads(threads)
    raco_t, dpsgd_t = [], []
    for rep in range(REPEATS):
        for gamma, times in ((0.05, raco_t), (None, dpsgd_t)):
            r = common.raco_run(d, gamma=gamma, epsilon=1e9, sigma=10.0, laplace_b=0.03, batch=BATCH,
                                steps=STEPS, seed=rep)
            times.append(r["seconds"] / STEPS)
    return statistics.median(raco_t), statistics.median(dpsgd_t)


def opacus_per_step(d, threads):
    from opacus import PrivacyEngine

    torch.set_num_threads(threads)
    times = []
    for rep in range(REPEATS):
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
        times.append((time.perf_counter() - t0) / STEPS)
    return statistics.median(times)


def full_run(train_csv, threads, extra):
    exe = Path(sys.executable).parent / "cortexkit"
    cmd = [str(exe), "dp-fairness-train", "train", str(train_csv), "--label", ">50K", "--sensitive", "sex",
           "--threads", str(threads), "-q", "-o", "/dev/null", *extra]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "fig5_speed.yaml"))
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    d = common.encode("adult")
    out = {"figure": "5 speed", "load_average_at_start": __import__("os").getloadavg(), "commit": common.git_commit(), "batch": BATCH, "steps_timed": STEPS,
           "per_step": {}}
    for threads in (1, 2):
        raco_s, dpsgd_s = per_step_pair(d, threads)
        opacus_s = opacus_per_step(d, threads)
        out["per_step"][f"threads_{threads}"] = {
            "raco_dp_seconds": raco_s, "our_dpsgd_seconds": dpsgd_s, "opacus_dpsgd_seconds": opacus_s,
            "ratio_raco_over_our_dpsgd": raco_s / dpsgd_s, "ratio_our_dpsgd_over_opacus": dpsgd_s / opacus_s}
        print(out["per_step"], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        train_csv, _, _, _ = common.write_split("adult", Path(tmp))
        runs = {}
        for name, extra in (("eps1_default_444_steps", ["--epsilon", "1"]),
                            ("eps3_1000_steps", ["--epsilon", "3", "--sigma", "6", "--laplace-b", "0.05"])):
            runs[name] = {"seconds_threads_2": full_run(train_csv, 2, extra),
                          "seconds_threads_1": full_run(train_csv, 1, extra)}
            print(name, runs[name], flush=True)
        out["full_adult_run_cli"] = runs
    out["load_average_at_end"] = __import__("os").getloadavg()
    common.write_yaml(args.out, out)


if __name__ == "__main__":
    main()
