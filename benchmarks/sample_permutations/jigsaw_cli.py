"""Figure 6 through the installed CLI: jigsaw on noisy MNIST with `cortexkit sample-permutations`.

The same images, noise, 7000/1000/2000 train/validation/test split and validation/test puzzles as
jigsaw.py (which trains through the Python API with a patch CNN learned end to end). Here the
model only sees what a user can hand the CLI:

* DATA (train.st, a permutations artifact): row i is the grid cell of each shuffled piece (an
  ordering read as position = piece, item = cell), so lehmer digit j is about piece j;
* --context (ctrain.st): the pieces' flattened noisy pixels, context (N, g*g, p*p) float32.

The CLI trains on a fixed file, so the fresh puzzles per epoch of jigsaw.py become --copies
shuffles of every training image drawn once (copies x epochs = the passes over the images).
Then, as subprocesses:

    cortexkit sample-permutations fit train.st --model ar --representation lehmer \
        --condition features --context ctrain.st --head pointer --context-encoder ENC ...
    cortexkit sample-permutations sample model.st --strategy greedy|beam --context ctest.st
    cortexkit sample-permutations score model.st test.st --context ctest.st

and the decoded orderings are compared with the true cells (fraction of puzzles fully solved and
of pieces in place). Beside it, in the same run, the Gumbel-Sinkhorn baseline of jigsaw.py (patch
CNN + the same transformer size + Sinkhorn head, Hungarian decoding), trained on the same fixed
puzzles for the same epochs with the same AdamW, batch and cosine-decayed learning rate. With
--context-encoder mlp the hidden width is chosen so that our parameter count matches the
baseline's (equal size); the linear encoder is reported with its own (smaller) count.

    OMP_NUM_THREADS=1 python benchmarks/sample_permutations/jigsaw_cli.py --grids 3 --epochs 10 --copies 10
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

sys.path.insert(0, os.path.dirname(__file__))
from common import save  # noqa: E402
from jigsaw import Sinkhorn, lr_schedule, noisy_splits, puzzles, scores, sinkhorn  # noqa: E402

from cortexkit.formats.artifact import write_artifact  # noqa: E402
from cortexkit.tools.permutations import neural as N  # noqa: E402

CORTEXKIT = str(Path(sys.executable).parent / "cortexkit")
TOOL = [CORTEXKIT, "sample-permutations"]


def cortexkit(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [*TOOL, *map(str, args), "--threads", "1", "-q"]
    print("$", " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, env=env, capture_output=True)
    if proc.returncode:
        sys.exit(proc.stderr.decode())
    return proc


def write_puzzles(folder: Path, name: str, x: torch.Tensor, y: torch.Tensor) -> tuple[Path, Path]:
    """permutations artifact (cell of each piece) and context file (flattened piece pixels)."""
    data, ctx = folder / f"{name}.st", folder / f"c{name}.st"
    write_artifact(data, {"orderings": y.numpy().astype(np.int16)}, "permutations",
                   metadata={"permutations.n": str(y.shape[1])})
    save_file({"context": x.flatten(2).numpy().astype(np.float32)}, str(ctx))
    return data, ctx


def matched_hidden(n: int, d_in: int, target: int) -> int:
    """Hidden width of the mlp context encoder giving ``target`` parameters in all."""
    config = dict(n=n, representation="lehmer", mode="ar", context_dim=d_in, context_len=n,
                  context_aligned=True, head="pointer", context_encoder="mlp")
    size = lambda h: sum(p.numel() for p in N.PermutationTransformer(N.NetConfig(**config, context_hidden=h)).parameters())  # noqa: E731
    per_unit = size(2) - size(1)
    return max(1, round((target - size(1)) / per_unit) + 1)


def gumbel_sinkhorn(x, y, n, p, epochs, lr, schedule, evals):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    gs = Sinkhorn(n, p)
    opt = torch.optim.AdamW(gs.parameters(), lr=lr, weight_decay=1e-2)
    sched = lr_schedule(opt, schedule, epochs * math.ceil(len(x) / 128))
    start = time.perf_counter()
    for epoch in range(epochs):
        gs.train()
        order = torch.randperm(len(x), generator=gen)
        for s in range(0, len(x), 128):
            idx = order[s:s + 128]
            logits = gs(x[idx])
            u = torch.rand(logits.shape, generator=gen).clamp(1e-9, 1 - 1e-9)
            soft = sinkhorn(logits - torch.log(-torch.log(u)))
            loss = -soft.gather(2, y[idx][:, :, None]).sum((1, 2)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print("sinkhorn", epoch, float(loss.detach()), flush=True)
    seconds = time.perf_counter() - start
    from scipy.optimize import linear_sum_assignment

    gs.eval()
    out = {"parameters": sum(q.numel() for q in gs.parameters()), "train_seconds": round(seconds, 1)}
    for split, (ex, ey) in evals.items():
        with torch.no_grad():
            logits = torch.cat([gs(ex[s:s + 500]) for s in range(0, len(ex), 500)])
        pred = torch.stack([torch.as_tensor(linear_sum_assignment(-m.numpy())[1]) for m in logits])
        out[split] = scores(pred, ey)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--grids", default="2,3")
    parser.add_argument("--epochs", type=int, default=10, help="epochs of the CLI fit (and of the baseline)")
    parser.add_argument("--copies", type=int, default=10, help="shuffles of every training image")
    parser.add_argument("--encoders", default="linear,mlp")
    parser.add_argument("--beams", default="5")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--val-images", type=int, default=1000)
    parser.add_argument("--no-sinkhorn", action="store_true")
    parser.add_argument("--workdir", default=None, help="keep the artifacts here (default: a temporary folder)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    train_img, val_img, test_img = noisy_splits(args.noise, args.val_images)
    n_train = len(train_img)
    beams = [int(v) for v in args.beams.split(",") if v]
    tmp = tempfile.TemporaryDirectory() if args.workdir is None else None
    work = Path(args.workdir or tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    result = {"via": "cortexkit sample-permutations (subprocesses)", "images_train": n_train,
              "images_val": args.val_images, "images_test": 2000, "noise_std": args.noise,
              "epochs": args.epochs, "copies": args.copies, "lr": args.lr, "batch_size": 128, "by_grid": {}}
    for g in [int(v) for v in args.grids.split(",")]:
        n, p = g * g, 28 // g
        folder = work / f"{g}x{g}"
        folder.mkdir(exist_ok=True)
        data_gen = torch.Generator().manual_seed(1)
        parts = [puzzles(train_img, g, data_gen) for _ in range(args.copies)]
        train_x, train_y = torch.cat([a for a, _ in parts]), torch.cat([b for _, b in parts])
        test_x, test_y = puzzles(test_img, g, torch.Generator().manual_seed(99))
        val_x, val_y = puzzles(val_img, g, torch.Generator().manual_seed(98))
        train_st, ctrain = write_puzzles(folder, "train", train_x, train_y)
        files = {"test": write_puzzles(folder, "test", test_x, test_y),
                 "val": write_puzzles(folder, "val", val_x, val_y)}
        truth = {"test": test_y.numpy(), "val": val_y.numpy()}
        entry = {}
        baseline = None
        if not args.no_sinkhorn:
            baseline = gumbel_sinkhorn(train_x, train_y, n, p, args.epochs, args.lr, "cosine",
                                       {"test": (test_x, test_y), "val": (val_x, val_y)})
            entry["gumbel_sinkhorn"] = baseline
            print(g, baseline, flush=True)
        for encoder in args.encoders.split(","):
            model = folder / f"pointer_{encoder}.st"
            extra = []
            if encoder == "mlp":
                target = baseline["parameters"] if baseline else 238281
                extra = ["--context-hidden", matched_hidden(n, p * p, target)]
            start = time.perf_counter()
            cortexkit("fit", train_st, "--model", "ar", "--representation", "lehmer", "--condition", "features",
                      "--context", ctrain, "--head", "pointer", "--context-encoder", encoder, *extra,
                      "--epochs", args.epochs, "--batch-size", 128, "--lr", args.lr, "--weight-decay", 0.01,
                      "--val-fraction", 0, "--d-model", 64, "--layers", 2, "--heads", 4, "--ff", 128,
                      "--dropout", 0.1, "--seed", 0, "-o", model)
            res = {"parameters": None, "train_seconds": round(time.perf_counter() - start, 1),
                   "context_hidden": extra[1] if extra else None}
            info = load_file(str(model))
            res["parameters"] = int(sum(v.size for k, v in info.items() if k.startswith("net.")))
            for split, (data, ctx) in files.items():
                res[split] = {}
                for width in [1, *beams]:
                    strategy = ["--strategy", "greedy"] if width == 1 else ["--strategy", "beam", "--beam-width", width]
                    out = folder / f"{encoder}_{split}_{width}.st"
                    start = time.perf_counter()
                    cortexkit("sample", model, *strategy, "--context", ctx, "-o", out)
                    key = "greedy" if width == 1 else f"beam{width}"
                    res[split][key] = scores(torch.as_tensor(load_file(str(out))["orderings"].astype(np.int64)),
                                             torch.as_tensor(truth[split]))
                    res[split][key]["seconds"] = round(time.perf_counter() - start, 1)
                import yaml

                report = yaml.safe_load(cortexkit("score", model, data, "--context", ctx).stdout)
                res[split]["nll"] = round(report["mean_nll"], 4)
            entry[f"cli_ar_lehmer_pointer_{encoder}"] = res
            print(g, encoder, res, flush=True)
        result["by_grid"][f"{g}x{g}"] = entry
    save(result, args.out, "sample_permutations_jigsaw_cli.yaml")


if __name__ == "__main__":
    main()
