"""Anchor: PCX (pip `pcx`, JAX on CPU) PC-CE on the MNIST MLP with PCX's tuned hyper-parameters,
side by side with our PC (and BP, Meta-PCN) at the same settings on the same arrays, in one run.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/train_pcn/pcx_anchor.py --train-limit 5000 \
        --epochs 2 -o benchmarks/train_pcn/pcx_anchor.yaml

PCX hps (hps/MLP/MNIST/MLP_PC-CE_MNIST.yaml at commit c722834): 4 Linear layers, hidden 128,
GELU, T = 5, states SGD lr 0.01828 momentum 0.35, weights AdamW lr 2.996e-4 wd 3.314e-3 under
warmup-cosine (1 -> 1.1 over 10 %, cosine to 0.1), batch 128. Energy summed over the batch,
state gradients per sample, weight gradients scaled by 1/batch, as in PCX's examples.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench import DATA, subset, write_yaml  # noqa: E402

HP = dict(T=5, x_lr=0.01828189494026352, x_mom=0.35, w_lr=0.00029959151754717025,
          w_wd=0.003314230264294929, batch=128, hidden=128, layers=4)
MEAN, STD = 0.1307, 0.3081


def pcx_run(train, test, epochs, seed):
    import jax
    import jax.numpy as jnp
    import optax
    import pcx as px
    import pcx.functional as pxf
    import pcx.nn as pxnn
    import pcx.predictive_coding as pxc
    import pcx.utils as pxu

    class MLP(pxc.EnergyModule):
        def __init__(self, sizes):
            super().__init__()
            self.layers = [pxnn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
            self.vodes = [pxc.Vode() for _ in sizes[1:-1]] + [pxc.Vode(pxc.ce_energy)]
            self.vodes[-1].h.frozen = True

        def __call__(self, x, y):
            for layer, vode in zip(self.layers[:-1], self.vodes[:-1]):
                x = vode(jax.nn.gelu(layer(x)))
            x = self.vodes[-1](self.layers[-1](x))
            if y is not None:
                self.vodes[-1].set("h", y)
            return self.vodes[-1].get("u")

    px.RKG.seed(seed)
    model = MLP([784] + [HP["hidden"]] * (HP["layers"] - 1) + [10])

    @pxf.vmap(pxu.M(pxc.VodeParam | pxc.VodeParam.Cache).to((None, 0)), in_axes=(0, 0), out_axes=0)
    def forward(x, y, *, model):
        return model(x, y)

    @pxf.vmap(pxu.M(pxc.VodeParam | pxc.VodeParam.Cache).to((None, 0)), in_axes=(0,),
              out_axes=(None, 0), axis_name="batch")
    def energy(x, *, model):
        y_ = model(x, None)
        return jax.lax.psum(model.energy(), "batch"), y_

    @pxf.jit(static_argnums=0)
    def train_on_batch(T, x, y, *, model, optim_w, optim_h):
        model.train()
        with pxu.step(model, pxc.STATUS.INIT, clear_params=pxc.VodeParam.Cache):
            forward(x, y, model=model)
        optim_h.init(pxu.M_hasnot(pxc.VodeParam, frozen=True)(model))
        for _ in range(T):
            with pxu.step(model, clear_params=pxc.VodeParam.Cache):
                _, g = pxf.value_and_grad(pxu.M_hasnot(pxc.VodeParam, frozen=True).to([False, True]),
                                          has_aux=True)(energy)(x, model=model)
            optim_h.step(model, g["model"])
        optim_h.clear()
        with pxu.step(model, clear_params=pxc.VodeParam.Cache):
            _, g = pxf.value_and_grad(pxu.M(pxnn.LayerParam).to([False, True]),
                                      has_aux=True)(energy)(x, model=model)
        optim_w.step(model, g["model"], scale_by=1.0 / x.shape[0])

    @pxf.jit()
    def predict(x, *, model):
        model.train()  # (PCX 0.6.3: eval() breaks its vmap masks here; no dropout or BN in this MLP)
        with pxu.step(model, pxc.STATUS.INIT, clear_params=pxc.VodeParam.Cache):
            # (a dummy target: u does not depend on it, and PCX's vmap wants the array)
            return forward(x, jnp.zeros((x.shape[0], 10)), model=model).argmax(axis=-1)

    def prep(images):
        return jnp.asarray(((images.reshape(len(images), -1) / 255.0) - MEAN) / STD,
                           dtype=jnp.float32)

    n = len(train[1])
    batches = int(np.ceil(n / HP["batch"]))
    steps = batches * epochs
    schedule = optax.warmup_cosine_decay_schedule(HP["w_lr"], 1.1 * HP["w_lr"], int(0.1 * steps),
                                                  steps, 0.1 * HP["w_lr"])
    optim_h = pxu.Optim(lambda: optax.sgd(HP["x_lr"], momentum=HP["x_mom"]))
    optim_w = pxu.Optim(lambda: optax.adamw(schedule, weight_decay=HP["w_wd"]),
                        pxu.M(pxnn.LayerParam)(model))
    rng = np.random.default_rng(seed)
    tx, ty = prep(test[0]), np.asarray(test[1])
    history = []
    for epoch in range(epochs):
        start = time.perf_counter()
        order = rng.permutation(n)
        for b in range(batches):
            idx = order[b * HP["batch"]:(b + 1) * HP["batch"]]
            if len(idx) < HP["batch"]:  # jit shapes: PCX's loaders drop the last batch too
                continue
            x = prep(train[0][idx])
            y = jax.nn.one_hot(jnp.asarray(train[1][idx]), 10)
            train_on_batch(HP["T"], x, y, model=model, optim_w=optim_w, optim_h=optim_h)
        seconds = time.perf_counter() - start
        preds = []  # PCX keeps per-sample state of the training batch size: eval in those
        for i in range(0, len(ty), HP["batch"]):
            chunk = tx[i:i + HP["batch"]]
            full = jnp.concatenate([chunk, jnp.zeros((HP["batch"] - len(chunk), chunk.shape[1]))])
            preds.append(np.asarray(predict(full, model=model))[:len(chunk)])
        preds = np.concatenate(preds)
        history.append({"epoch": epoch + 1, "top1": float((preds == ty).mean()), "seconds": seconds})
    return history


def ours_run(train, test, epochs, seed, method):
    import torch

    from cortexkit.tools.pcn import api
    from cortexkit.tools.pcn.inference import InferenceConfig
    from cortexkit.tools.pcn.network import NetworkSpec
    from cortexkit.tools.pcn.train import TrainConfig

    torch.set_num_threads(1)
    spec = NetworkSpec("mlp", (1, 28, 28), 10, width=HP["hidden"], depth=HP["layers"])
    if method == "meta-pcn":
        inference = InferenceConfig(steps=HP["T"], state_lr=1.0)
    else:
        inference = InferenceConfig(steps=HP["T"], state_lr=HP["x_lr"], momentum=HP["x_mom"])
    cfg = TrainConfig(method=method, epochs=epochs, batch_size=HP["batch"], lr=HP["w_lr"],
                      weight_decay=HP["w_wd"], weight_norm=method == "meta-pcn",
                      inference=inference)
    _, result = api.fit(train[0], train[1], spec, cfg, normalize="mnist", test=test, seed=seed)
    return [{"epoch": r.epoch, "top1": r.test_top1, "seconds": r.seconds} for r in result.history]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--train-limit", type=int, default=5000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    from cortexkit.formats.images import read_images

    file = DATA / "mnist_png_train10k_test10k.safetensors"
    tr, te = read_images(file, "train"), read_images(file, "test")
    train = subset(tr.images, tr.labels, args.train_limit)
    test = (te.images, te.labels)
    out = {"data": file.name, "train_examples": int(len(train[1])), "test_examples": len(test[1]),
           "epochs": args.epochs, "seed": args.seed, "hp": HP, "runs": {}}
    for name, fn in (("PCX PC-CE", lambda: pcx_run(train, test, args.epochs, args.seed)),
                     ("ours PC", lambda: ours_run(train, test, args.epochs, args.seed, "pc")),
                     ("ours BP", lambda: ours_run(train, test, args.epochs, args.seed, "bp")),
                     ("ours Meta-PCN", lambda: ours_run(train, test, args.epochs, args.seed,
                                                        "meta-pcn"))):
        try:
            history = fn()
            out["runs"][name] = {"final_top1": round(100 * history[-1]["top1"], 2),
                                 "best_top1": round(100 * max(h["top1"] for h in history), 2),
                                 # after the first epoch: PCX's first one includes the JIT compile
                                 "s_per_epoch": round(float(np.mean([h["seconds"] for h in
                                                                     history[1:] or history])), 2),
                                 "first_epoch_s": round(history[0]["seconds"], 2)}
        except Exception as exc:  # the anchor may not run here: record why
            out["runs"][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        print(name, out["runs"][name], file=sys.stderr, flush=True)
    write_yaml(out, args.output)


if __name__ == "__main__":
    main()
