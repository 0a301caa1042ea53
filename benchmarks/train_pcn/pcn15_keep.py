"""pcn15: `--keep best` (the weights of the epoch with the best validation top-1) against `last`.

Per (MLP depth L, seed): the training images are split as train-pcn splits them
(``api.validation_split``, --validation-share 0.1, per class, drawn with the seed). On the 90 %
fit split, Meta-PCN (train-pcn's defaults) and plain BP are trained once each with keep best and
the validation split: the test top-1 of the last epoch is what `last` returns (the weights are
the same bit for bit, keep only chooses which epoch's weights are returned), the test top-1 of
the chosen epoch is what `best` returns (checked: the returned model scores it). ``BP-full`` is
plain BP on all the training images, keep last: a user's first try (`train-pcn train --method
bp`, which holds nothing out). Same data handling as bench.py (mnist: --train-limit subset seed
1234, MNIST normalisation; path: the IMAGES' train / test splits, dataset normalisation).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/pcn15_keep.py path \
        --data /tmp/pcnb/heldout/patches --depths 5 --epochs 5 --seeds 40,...,51 \
        -o benchmarks/train_pcn/pcn15_patches_L5.yaml
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
from bench import DATA, subset  # noqa: E402

from cortexkit.formats.images import read_images  # noqa: E402
from cortexkit.tools.pcn import api  # noqa: E402
from cortexkit.tools.pcn.network import NetworkSpec  # noqa: E402

METHODS = {"Meta-PCN": ("meta-pcn", "fit"), "BP": ("bp", "fit"), "BP-full": ("bp", "full")}


def run_one(name, spec, train, test, epochs, seed, share, normalize):
    method, where = METHODS[name]
    cfg = api.default_config(spec, method, epochs=epochs,
                             keep="best" if where == "fit" else "last")
    images, labels = train
    validation = None
    if where == "fit":
        fit_index, val_index = api.validation_split(labels, share, seed)
        validation = (images[val_index], labels[val_index])
        images, labels = images[fit_index], labels[fit_index]
    start = time.perf_counter()
    model, result = api.fit(images, labels, spec, cfg, normalize=normalize, test=test,
                            validation=validation, seed=seed)
    wall = time.perf_counter() - start
    hist = result.history
    row = {"method": name, "seed": seed, "train_images": int(len(labels)),
           "test_top1": [round(100 * h.test_top1, 2) for h in hist],
           "last_top1": round(100 * hist[-1].test_top1, 2), "wall_s": round(wall, 1)}
    if validation is not None:
        chosen = result.chosen_epoch
        returned = api.top1(model, *test)
        assert abs(returned - hist[chosen - 1].test_top1) < 1e-9, (returned, chosen)
        row.update({"val_top1": [round(100 * h.val_top1, 2) for h in hist],
                    "chosen_epoch": chosen, "best_top1": round(100 * returned, 2),
                    "validation_images": int(len(validation[1]))})
    return row


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("suite", choices=["mnist", "path"])
    p.add_argument("--data", default=None)
    p.add_argument("--depths", default="5,16")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seeds", default="0")
    p.add_argument("--methods", default="Meta-PCN,BP,BP-full")
    p.add_argument("--train-limit", type=int, default=None)
    p.add_argument("--share", type=float, default=0.1)
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    file = Path(args.data) if args.data else DATA / "mnist_png_train10k_test10k.safetensors"
    tr, te = read_images(file, "train"), read_images(file, "test")
    train = subset(tr.images, tr.labels, args.train_limit)
    test = (te.images, te.labels)
    shape, classes = tuple(tr.images.shape[1:]), int(max(tr.labels.max(), te.labels.max())) + 1
    normalize = "mnist" if args.suite == "mnist" else "dataset"
    out = {"suite": args.suite, "data": file.name, "epochs": args.epochs,
           "seeds": [int(s) for s in args.seeds.split(",")], "share": args.share,
           "train_examples": int(len(train[1])), "test_examples": int(len(test[1])), "runs": []}
    for depth in map(int, args.depths.split(",")):
        spec = NetworkSpec("mlp", shape, classes, width=128, depth=depth)
        for seed in out["seeds"]:
            for name in args.methods.split(","):
                row = {"config": f"MLP L={depth}", "L": depth,
                       **run_one(name, spec, train, test, args.epochs, seed, args.share, normalize)}
                out["runs"].append(row)
                print(yaml.safe_dump([row], sort_keys=False, width=200).strip(), file=sys.stderr,
                      flush=True)
                Path(args.output).write_text(yaml.safe_dump(out, sort_keys=False, width=200))


if __name__ == "__main__":
    main()
