"""Issue 22 item 4: how long the classical fits take on 4,000 sushi rows, where the time goes,
and our Plackett-Luce fit beside choix's in the same run.

For each of product, mallows, gmallows (borda reference) and plackett-luce: the in-process fit
(`model.fit`, CPU seconds of this one thread, best of ``--repeats``), the top functions of a
cProfile run, and the installed CLI's wall time (`fit`, start-up included). choix 0.4
`ilsr_rankings` and `opt_rankings` fit the same 4,000 rankings; the train NLL of each PL fit is
scored with our exact PL likelihood, so the fits are compared on one yardstick.

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/classical_fit.py --out result.yaml
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import cortexkit, save, sushi_split, write_text_orders  # noqa: E402

from cortexkit.tools.permutations import classical as C  # noqa: E402
from cortexkit.tools.permutations import model as M  # noqa: E402
from cortexkit.tools.permutations import representations as R  # noqa: E402


def cpu_best(fn, repeats):
    best, out = float("inf"), None
    for _ in range(repeats):
        began = time.process_time()
        out = fn()
        best = min(best, time.process_time() - began)
    return best, out


def child_cpu():
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def top_functions(fn, count=5):
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(count)
    lines = [ln.strip() for ln in text.getvalue().splitlines() if ln.strip() and ln.strip()[0].isdigit()]
    return lines[:count]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    import choix

    train, _ = sushi_split(0)
    x = torch.as_tensor(train)
    borda = R.borda_reference(x)
    result = {"rows": len(train), "n": int(train.shape[1]), "threads": 1, "fits": {}}
    kinds = {"product": dict(representation="insertion"), "mallows": dict(reference=borda),
             "gmallows": dict(reference=borda), "plackett-luce": {}}
    with tempfile.TemporaryDirectory() as tmp:
        data = write_text_orders(Path(tmp) / "train.csv", train)
        began, cpu0 = time.perf_counter(), child_cpu()
        cortexkit("sample-permutations", "encode", data, "-o", Path(tmp) / "d.st")
        startup = (time.perf_counter() - began, child_cpu() - cpu0)
        for kind, kw in kinds.items():
            seconds, model = cpu_best(lambda: M.fit(x, kind, **kw), args.repeats)
            began, cpu0 = time.perf_counter(), child_cpu()
            ref = ["--reference", "borda"] if "reference" in kw else []
            cortexkit("sample-permutations", "fit", data, "--model", kind, *ref, "--threads", 1,
                      "-o", Path(tmp) / "m.st")
            result["fits"][kind] = {"fit_cpu_s": round(seconds, 4), "cli_wall_s": round(time.perf_counter() - began, 3),
                                    "cli_cpu_s": round(child_cpu() - cpu0, 3),
                                    "train_nll": round(model.info["train_nll"], 5),
                                    "profile_top_tottime": top_functions(lambda: M.fit(x, kind, **kw))}
            print(kind, result["fits"][kind]["fit_cpu_s"], flush=True)
    result["cli_encode_4000_rows_wall_s"] = round(startup[0], 3)  # start-up, torch import, read, write
    result["cli_encode_4000_rows_cpu_s"] = round(startup[1], 3)
    rankings = [tuple(r) for r in train.tolist()]
    pl = {}
    for name, fn in (("choix_ilsr_rankings", lambda: choix.ilsr_rankings(train.shape[1], rankings)),
                     ("choix_opt_rankings", lambda: choix.opt_rankings(train.shape[1], rankings))):
        seconds, theta = cpu_best(fn, args.repeats)
        nll = float(-C.PlackettLuce(torch.as_tensor(theta - theta.mean())).log_prob(x).mean())
        pl[name] = {"fit_cpu_s": round(seconds, 4), "train_nll": round(nll, 5)}
    ours = result["fits"]["plackett-luce"]
    pl["ours"] = {"fit_cpu_s": ours["fit_cpu_s"], "train_nll": ours["train_nll"]}
    for name in ("choix_ilsr_rankings", "choix_opt_rankings"):
        pl[f"time_ours_over_{name}"] = round(ours["fit_cpu_s"] / max(pl[name]["fit_cpu_s"], 1e-9), 3)
        pl[f"nll_ours_minus_{name}"] = round(ours["train_nll"] - pl[name]["train_nll"], 6)
    result["plackett_luce_vs_choix"] = pl
    result["issue_figures_under_load_s"] = {"mallows": 162, "gmallows": 257, "plackett-luce": 442, "product": 18}
    save(result, args.out, "sample_permutations_classical_fit.yaml")


if __name__ == "__main__":
    main()
