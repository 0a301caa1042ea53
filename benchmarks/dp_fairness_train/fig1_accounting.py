"""Figure 1: the accounting reproduces Google's dp-accounting exactly, and its Gaussian part agrees
with Opacus' PRV accountant.

Ours = `cortexkit dp-fairness-train account` (the installed command). Anchors in the same run:
dp_accounting's DpEvent/PLDAccountant API (an independent code path to the same PLD library) and
opacus.accountants.PRVAccountant (eps_error 1e-3) for the Gaussian-only part.

    python benchmarks/dp_fairness_train/fig1_accounting.py --out benchmarks/dp_fairness_train/results/fig1_accounting.yaml
"""
import argparse
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402

CASES = [
    # (name, sigma, laplace_b, q, T, delta)
    ("official demo, delta 1e-4", 4.0, 0.5, 4096 / 29676, 1000, 1e-4),
    ("official demo, delta 1e-5", 4.0, 0.5, 4096 / 29676, 1000, 1e-5),
    ("ours on Adult eps 1", 10.0, 0.03, 4096 / 33916, 444, 1e-5),
    ("opacus-like DP-SGD eps 1 (gaussian only)", 3.047, None, 1024 / 33916, 680, 1e-5),
    ("opacus-like DP-SGD eps 3 (gaussian only)", 1.323, None, 1024 / 33916, 680, 1e-5),
]


def cli_account(*args):
    exe = Path(sys.executable).parent / "cortexkit"
    out = subprocess.run([str(exe), "dp-fairness-train", "account", *map(str, args)], capture_output=True,
                         text=True, check=True)
    return yaml.safe_load(out.stdout)


def dpevent_epsilon(sigma, b, q, T, delta):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    events = [dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), T)]
    if b is not None:
        events.append(dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.LaplaceDpEvent(1.0 / b)), T))
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.ComposedDpEvent(events))
    return acc.get_epsilon(delta)


def direct_pld(sigma, b, q, T, delta):
    """The official RaCO-DP accountant formula (accounting/dpraco.py), written against dp_accounting."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = pld.from_gaussian_mechanism(sigma, sampling_prob=q, use_connect_dots=True).self_compose(T)
    if b is not None:
        total = total.compose(pld.from_laplace_mechanism(1 / b, sampling_prob=q, use_connect_dots=True).self_compose(T))
    return total.get_epsilon_for_delta(delta)


def opacus_prv(sigma, q, T, delta):
    from opacus.accountants import PRVAccountant

    acc = PRVAccountant()
    acc.history = [(sigma, q, T)]
    return acc.get_epsilon(delta, eps_error=1e-3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "fig1_accounting.yaml"))
    args = ap.parse_args()
    rows = []
    for name, sigma, b, q, T, delta in CASES:
        extra = [] if b is None else ["--laplace-b", b]
        ours = cli_account("--sigma", sigma, *extra, "--sampling-rate", repr(q), "--steps", T, "--delta", delta)
        row = {"case": name, "sigma": sigma, "laplace_b": b, "q": q, "T": T, "delta": delta,
               "ours_epsilon": ours["epsilon"], "ours_gaussian_only": ours["epsilon_gaussian_only"],
               "dp_accounting_direct": direct_pld(sigma, b, q, T, delta),
               "dp_accounting_dpevent_api": dpevent_epsilon(sigma, b, q, T, delta),
               "opacus_prv_gaussian_only": opacus_prv(sigma, q, T, delta)}
        row["ratio_ours_over_direct"] = row["ours_epsilon"] / row["dp_accounting_direct"]
        row["ratio_gaussian_ours_over_opacus"] = row["ours_gaussian_only"] / row["opacus_prv_gaussian_only"]
        rows.append(row)
        print(row, flush=True)
    steps = []
    for sigma, b, q, eps, delta in [(4.0, 0.5, 4096 / 29676, 1.0, 1e-4), (4.0, 0.5, 4096 / 29676, 1.0, 1e-5),
                                    (10.0, 0.03, 4096 / 33916, 1.0, 1e-5), (6.0, 0.05, 4096 / 33916, 3.0, 1e-5)]:
        ours = cli_account("--sigma", sigma, "--laplace-b", b, "--sampling-rate", repr(q), "--epsilon", eps,
                           "--delta", delta)
        T = ours["steps"]
        steps.append({"sigma": sigma, "laplace_b": b, "q": q, "epsilon": eps, "delta": delta, "ours_max_T": T,
                      "direct_eps_at_T": direct_pld(sigma, b, q, T, delta),
                      "direct_eps_at_T_plus_1": direct_pld(sigma, b, q, T + 1, delta)})
        print(steps[-1], flush=True)
    import dp_accounting
    import opacus
    common.write_yaml(args.out, {
        "figure": "1 accounting", "commit": common.git_commit(),
        "versions": {"dp_accounting": getattr(dp_accounting, "__version__", "0.6.0"), "opacus": opacus.__version__},
        "laplace_convention": "laplace_b = inverse scale (noise Laplace(0, 1/b))",
        "epsilon_for_given_T": rows, "largest_T_within_budget": steps})


if __name__ == "__main__":
    main()
