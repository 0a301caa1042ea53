"""Issue 36: does LF pretraining want the HF fits' longer patience? MF-NPE on SIR (LF 1000, HF 50; the
training sets theta_map_bench.py --tasks sir --mf --n-lf 1000 --n-sim 50 draws), pretrained with
patience 20 and 60, each fine-tuned with patience 20 and 60 (only 60 with --finetune-60-only),
RF-C2ST against sbibm's 10 reference observations, one JSON line per cell.

    OMP_NUM_THREADS=1 python benchmarks/simulate_npe/patience_pretrain_bench.py 12
    OMP_NUM_THREADS=1 python benchmarks/simulate_npe/patience_pretrain_bench.py 13 --finetune-60-only
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from theta_map_bench import c2st, reference  # noqa: E402

from cortexkit.tools.npe import methods as M  # noqa: E402
from cortexkit.tools.npe.estimator import FlowConfig  # noqa: E402
from cortexkit.tools.npe.tasks import get_task  # noqa: E402
from cortexkit.tools.npe.training import TrainConfig  # noqa: E402


def main():
    seed = int(sys.argv[1])
    finetune = (60,) if "--finetune-60-only" in sys.argv else (20, 60)
    torch.set_num_threads(1)
    task = get_task("sir")
    ref = reference("sir")
    g = torch.Generator().manual_seed(2026)
    theta = task.prior.sample(50, g)
    x = task.simulator("hf")(theta, g)
    theta_lf = task.prior.sample(1000, g)
    x_lf = task.simulator("lf")(theta_lf, g)
    for pre_patience in (20, 60):
        pre, h = M.fit_npe(task.prior, theta_lf, x_lf, FlowConfig(), TrainConfig(lr=1e-4, patience=pre_patience), seed)
        for ft_patience in finetune:
            ft, hf = M.fine_tune(pre, theta, x, TrainConfig(patience=ft_patience), seed, refit_x_stats=True)
            c = c2st(lambda xo, k, m=ft: m.sample(k, xo), ref, 1000, ["rf"])["c2st_rf"]
            print(json.dumps({"seed": seed, "pretrain_patience": pre_patience, "pretrain_epochs": h.epochs,
                              "finetune_patience": ft_patience, "finetune_epochs": hf.epochs,
                              "c2st_rf": round(sum(c) / len(c), 4)}), flush=True)


if __name__ == "__main__":
    main()
