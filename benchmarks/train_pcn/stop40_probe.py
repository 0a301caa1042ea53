"""Stop 40 probe: why BP + WN trails plain BP on the patches MLP at depth. Trains BP and BP + WN
(the weights Meta-PCN's defaults produce) with the same loop as tools/pcn/train.py (AdamW 1e-3,
PCX warmup-cosine, batch 128, the same batch order) and records, per weight step, the training
loss and every layer's relative update ||W_after - W_before||_F / ||W_before||_F (after the WN
projection), per epoch the forward train/test top-1 and loss, and at initialisation every layer's
pre-activation RMS and its input-dependent part (RMS over the batch of h - mean_batch(h)).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/stop40_probe.py path \
        --data /tmp/pcnb/heldout/patches --depth 16 --seeds 0 -o stop40_probe_patches.yaml
    ... stop40_probe.py mnist --train-limit 5000 --epochs 3 --depth 16 ...

``--variants`` names what runs: BP, BP+WN (the tool's default `fan` gain), or a variant of the
weight-norm step given as WN:<gain>[:<lr factor>] (a number or a rule name; the factor scales
AdamW's rate, for the under-training test); BP:<lr factor>; BPeps:<eps> (plain BP with AdamW's
eps changed from 1e-8).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import yaml

from cortexkit.formats.images import read_images
from cortexkit.tools.pcn.api import preprocess_for
from cortexkit.tools.pcn.inference import bp_gradients
from cortexkit.tools.pcn.network import NetworkSpec, build_network, weight_layers
from cortexkit.tools.pcn.train import normalize_weights, warmup_cosine

DATA = Path(os.environ.get("CORTEXKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")) / "pcn"


def subset(images, labels, limit, seed=1234):
    if limit is None or limit >= len(labels):
        return images, labels
    order = np.random.default_rng(seed).permutation(len(labels))[:limit]
    return images[order], labels[order]


@torch.no_grad()
def forward_stats(net, x):
    """Per block: RMS of the pre-activation h and of its input-dependent part."""
    rows, a = [], x
    for block in net.blocks:
        h = block.layer(a.flatten(1) if isinstance(block.layer, torch.nn.Linear) else a)
        a = block(a)
        rows.append({"h_rms": float(h.pow(2).mean().sqrt()),
                     "h_input_rms": float((h - h.mean(0)).pow(2).mean().sqrt()),
                     "out_rms": float(a.pow(2).mean().sqrt())})
    return rows


@torch.no_grad()
def scores(net, prep, images, labels, batch=1000):
    loss = correct = 0.0
    for i in range(0, len(labels), batch):
        x = prep(torch.from_numpy(images[i:i + batch]))
        y = torch.from_numpy(labels[i:i + batch])
        logits = net(x)
        loss += float(F.cross_entropy(logits, y, reduction="sum"))
        correct += float((logits.argmax(1) == y).sum())
    return loss / len(labels), correct / len(labels)


def run(variant, spec, train, test, prep, epochs, seed, lr=1e-3, val=None):
    wn, gain, factor, eps = False, None, 1.0, 1e-8
    if variant == "BP+WN":
        wn, gain = True, "fan"
    elif variant.startswith("WN:"):
        parts = variant.split(":")
        wn, gain = True, parts[1] if parts[1] in ("fan", "fan-act") else float(parts[1])
        factor = float(parts[2]) if len(parts) > 2 else 1.0
    elif variant.startswith("BP:"):
        factor = float(variant.split(":")[1])
    elif variant.startswith("BPeps:"):
        eps = float(variant.split(":")[1])
    torch.manual_seed(seed)
    net = build_network(spec)
    images, labels = train
    n, bs = len(labels), 128
    batches = math.ceil(n / bs)
    opt = torch.optim.AdamW(net.parameters(), lr=lr * factor, weight_decay=0.0, eps=eps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(epochs * batches, 0.1))
    if wn:
        normalize_weights(net, gain)
    probe_x = prep(torch.from_numpy(images[:512]))
    init_stats = forward_stats(net, probe_x)
    layers = weight_layers(net)
    generator = torch.Generator().manual_seed(seed)
    params = list(net.parameters())
    steps, epochs_out = [], []
    for epoch in range(1, epochs + 1):
        order = torch.randperm(n, generator=generator)
        for b in range(batches):
            index = order[b * bs:(b + 1) * bs].numpy()
            x = prep(torch.from_numpy(images[index]))
            y = torch.from_numpy(labels[index])
            res = bp_gradients(net, x, y, "ce", scale=1.0 / len(index))
            before = [l.weight.detach().clone() for l in layers]
            for p, g in zip(params, res.grads):
                p.grad = g
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            if wn:
                normalize_weights(net, gain)
            steps.append({"loss": float(res.loss) / len(index),
                          "rel": [float((l.weight.detach() - w0).norm() / w0.norm())
                                  for l, w0 in zip(layers, before)]})
        tr_loss, tr_acc = scores(net, prep, images, labels)
        te_loss, te_acc = scores(net, prep, *test)
        if val is not None:
            va_loss, va_acc = scores(net, prep, *val)
            extra = {"val_loss": round(va_loss, 4), "val_top1": round(100 * va_acc, 2)}
        else:
            extra = {}
        epochs_out.append({**extra, "epoch": epoch, "train_loss": round(tr_loss, 4),
                           "train_top1": round(100 * tr_acc, 2), "test_loss": round(te_loss, 4),
                           "test_top1": round(100 * te_acc, 2),
                           "weight_fro": [round(float(l.weight.norm()), 3) for l in layers]})
    final_stats = forward_stats(net, probe_x)
    rel = np.array([s["rel"] for s in steps])
    per_epoch = np.array_split(rel, epochs)
    return {"variant": variant, "seed": seed, "weight_steps": len(steps),
            "init": [{k: round(v, 4) for k, v in r.items()} for r in init_stats],
            "final": [{k: round(v, 4) for k, v in r.items()} for r in final_stats],
            "rel_update_mean_by_epoch": [[round(float(v), 5) for v in e.mean(0)]
                                         for e in per_epoch],
            "rel_update_mean": [round(float(v), 5) for v in rel.mean(0)],
            "step_loss": [round(s["loss"], 4) for s in steps],
            "epochs": epochs_out}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("suite", choices=["mnist", "path"])
    p.add_argument("--data", default=None)
    p.add_argument("--depth", type=int, default=16)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seeds", default="0")
    p.add_argument("--train-limit", type=int, default=None)
    p.add_argument("--variants", default="BP,BP+WN")
    p.add_argument("--val-share", type=float, default=0.0,
                   help="hold out this share of the training images (random, seed 99) as an "
                        "in-distribution validation set, scored beside the test split")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    file = Path(args.data) if args.data else DATA / "mnist_png_train10k_test10k.safetensors"
    tr, te = read_images(file, "train"), read_images(file, "test")
    train = subset(tr.images, tr.labels.astype(np.int64), args.train_limit)
    test = (te.images, te.labels.astype(np.int64))
    val = None
    if args.val_share > 0:
        order = np.random.default_rng(99).permutation(len(train[1]))
        k = int(round(args.val_share * len(order)))
        val = (train[0][order[:k]], train[1][order[:k]])
        train = (train[0][np.sort(order[k:])], train[1][np.sort(order[k:])])
    prep = preprocess_for(train[0], "mnist" if args.suite == "mnist" else "dataset")
    classes = int(max(tr.labels.max(), te.labels.max())) + 1
    spec = NetworkSpec("mlp", tuple(tr.images.shape[1:]), classes, width=128, depth=args.depth)
    out = {"suite": args.suite, "data": file.name, "depth": args.depth, "epochs": args.epochs,
           "val_share": args.val_share,
           "train_examples": int(len(train[1])), "runs": []}
    for variant in args.variants.split(","):
        for seed in map(int, args.seeds.split(",")):
            row = run(variant, spec, train, test, prep, args.epochs, seed, val=val)
            out["runs"].append(row)
            last = row["epochs"][-1]
            rel = row["rel_update_mean"]
            print(f"{variant} seed {seed}: train loss {last['train_loss']} top1 "
                  f"{last['train_top1']} test {last['test_top1']} val {last.get('val_top1')}; "
                  f"rel update {rel[0]:.4f} (first) {np.mean(rel[1:-1]):.4f} (hidden)",
                  file=sys.stderr, flush=True)
            if args.output != "-":
                Path(args.output).write_text(yaml.safe_dump(out, sort_keys=False, width=250))
    if args.output == "-":
        print(yaml.safe_dump(out, sort_keys=False, width=250))


if __name__ == "__main__":
    main()
