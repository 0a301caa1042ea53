"""cortexkit train-pcn: deep predictive coding networks that stay trainable with depth (Meta-PCN)."""

from __future__ import annotations

import click

from cortexkit.cli.base import output_option, require_matplotlib, tool_group, verb
from cortexkit.cli.options import Size, option_set
from cortexkit.tools.pcn import schema as _schema  # noqa: F401  (registers the schemas checked on read)

KIND_MODEL = "pcn-model"
MODEL_VERSION = 1

group = tool_group(
    "train-pcn",
    help="Meta-PCN (ICLR 2026): deep predictive coding networks with meta-prediction errors, "
         "and the baselines PC, iPC and backprop (+ weight normalisation).",
)

positive = click.FloatRange(min=0, min_open=True)
# Size guards (cli/options.Size): an MLP layer holds width^2 weights, their gradient and two Adam
# moments (float32); inference steps are bounded (the paper's T is 8-100s), as their cost
# depends on the model read later.
MAX_STEPS = 100_000


def _layer_bytes(params) -> float:
    width = params.get("width") or 1
    return 16.0 * width * width

model_options = option_set(
    click.option("--arch", type=click.Choice(["mlp", "vgg5", "vgg7", "vgg9", "vgg11", "vgg13",
                                            "resnet18"]),
                 default="mlp", show_default=True, help="Architecture."),
    click.option("--depth", type=Size(min=1, bytes=lambda d, p: _layer_bytes(p) * d,
                                      what="layers"), default=4, show_default=True,
                 help="MLP weight layers L."),
    click.option("--width", type=Size(min=1, bytes=lambda w, p: _layer_bytes({**p, "width": w})
                                      * (p.get("depth") or 1), what="units per layer"),
                 default=128, show_default=True,
                 help="MLP hidden width."),
    click.option("--width-scale", type=positive, default=1.0, show_default=True,
                 help="VGG channel multiplier."),
    click.option("--activation", type=click.Choice(["gelu", "relu", "tanh", "hardtanh",
                                                    "leaky-relu", "identity"]),
                 default="gelu", show_default=True, help="Hidden activation."),
    click.option("--init", type=click.Choice(["default", "kaiming"]), default="default",
                 show_default=True, help="Weight initialisation (torch default or Kaiming normal)."),
    click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32",
                 show_default=True, help="Parameter and state precision."),
)

method_options = option_set(
    click.option("--method", type=click.Choice(["meta-pcn", "pc", "ipc", "bp"]), default="meta-pcn",
                 show_default=True, help="Learning rule."),
    click.option("--weight-norm/--no-weight-norm", default=None,
                 help="Weight normalisation after every step [default: on for meta-pcn only]."),
    click.option("--weight-norm-gain", type=positive, default=1.0, show_default=True,
                 help="Target (sqrt(m)+sqrt(n)) std(W) of every layer "
                 "(2 for deep plain MLPs, see man)."),
    click.option("--weight-clip", type=positive, default=None,
                 help="Clamp weights to [-C, C] after normalisation (off by default)."),
    click.option("--steps", type=Size(min=0, max=MAX_STEPS, what="inference steps"), default=8,
                 show_default=True, help="Inference steps T."),
    click.option("--state-lr", type=positive, default=None,
                 help="State rate eta_x [default: 1 for meta-pcn, 0.1 for pc/ipc]."),
    click.option("--state-momentum", type=click.FloatRange(0, 1, max_open=True), default=0.0,
                 show_default=True, help="SGD momentum on the states."),
    click.option("--schedule", type=click.Choice(["jacobi", "sweep"]), default="jacobi",
                 show_default=True, help="Meta-PCN update order."),
    click.option("--loss", type=click.Choice(["ce", "se"]), default="ce", show_default=True,
                 help="Output energy: cross-entropy or squared error."),
)

optim_options = option_set(
    click.option("--epochs", type=Size(min=1, seconds=1e-4, what='epochs'), default=10, show_default=True),
    click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True),
    click.option("--lr", type=positive, default=1e-3, show_default=True, help="AdamW rate."),
    click.option("--weight-decay", type=click.FloatRange(min=0), default=0.0, show_default=True),
    click.option("--adam-eps", type=positive, default=1e-8, show_default=True),
    click.option("--warmup", type=click.FloatRange(0, 1), default=0.1, show_default=True,
                 help="Warmup fraction of the weight steps."),
    click.option("--augment/--no-augment", default=False, show_default=True,
                 help="Random flip and crop (pad 4)."),
    click.option("--normalize", type=click.Choice(["dataset", "none", "mnist", "cifar10"]),
                 default="dataset", show_default=True, help="Per-channel pixel normalisation."),
)

ADVANCED = ("width_scale", "init", "dtype", "weight_norm_gain", "weight_clip", "state_momentum",
            "schedule", "loss", "weight_decay", "adam_eps", "warmup", "normalize", "test_split")


# ---------------------------------------------------------------------------------------------
# helpers (numpy and torch imported inside)

def _images(source, split, need_labels=True):
    from cortexkit.formats.images import read_images

    return read_images(source, split, need_labels=need_labels)


def _configs(data, opts):
    import torch

    from cortexkit.tools.pcn.inference import InferenceConfig
    from cortexkit.tools.pcn.network import NetworkSpec
    from cortexkit.tools.pcn.train import TrainConfig

    classes = max(len(data.classes), int(data.labels.max()) + 1)
    spec = NetworkSpec(opts["arch"], tuple(data.images.shape[1:]), classes, opts["width"],
                       opts["depth"], opts["width_scale"], opts["activation"],
                       data.classes[:classes] if len(data.classes) >= classes else [])
    meta = opts["method"] == "meta-pcn"
    inference = InferenceConfig(opts["steps"], opts["state_lr"] or (1.0 if meta else 0.1),
                                opts["state_momentum"], opts["schedule"], opts["loss"])
    wn = meta if opts["weight_norm"] is None else opts["weight_norm"]
    cfg = TrainConfig(opts["method"], opts["epochs"], opts["batch_size"], opts["lr"],
                      opts["weight_decay"], opts["adam_eps"], opts["warmup"], wn,
                      opts["weight_norm_gain"], opts["weight_clip"], opts["augment"], inference)
    return spec, cfg, getattr(torch, opts["dtype"])


def _epoch_writer(run, log, checkpoint):
    from cortexkit.tools.pcn import api

    def on_epoch(record, model):
        top = "" if record.test_top1 is None else f", test top-1 {100 * record.test_top1:.2f} %"
        run.detail(f"epoch {record.epoch}: loss {record.train_loss:.4f}, train top-1 "
                   f"{100 * record.train_top1:.2f} %{top}, {record.seconds:.1f} s")
        if log:
            run.write_report(model.history, log)
        if checkpoint:  # written now: it must outlive a run that fails later
            run.write_artifact(api.model_tensors(model), KIND_MODEL, version=str(MODEL_VERSION),
                               metadata=api.model_metadata(model), target=checkpoint, now=True)
    return on_epoch


def _plot(run, path, history, trace):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    if trace:
        energy = np.asarray(trace)
        for layer in range(energy.shape[1]):
            ax1.semilogy(np.maximum(energy[:, layer], 1e-30), label=f"layer {layer + 1}")
        ax1.set(xlabel="inference step", ylabel="mean error energy", title="error energy")
        ax1.legend(fontsize=6)
    epochs = [r["epoch"] for r in history]
    ax2.plot(epochs, [100 * r["train_top1"] for r in history], label="train")
    if history and history[0].get("test_top1") is not None:
        ax2.plot(epochs, [100 * r["test_top1"] for r in history], label="test")
    ax2.set(xlabel="epoch", ylabel="top-1 %", title="accuracy")
    ax2.legend()
    fig.tight_layout()
    run.write_figure(fig, path, dpi=100)
    plt.close(fig)


def _model(run, source):
    from cortexkit.tools.pcn import api

    artifact = run.read_artifact(source, KIND_MODEL, max_version=MODEL_VERSION)
    return api.load_model(artifact.tensors, artifact.meta_json, run.device)


# ---------------------------------------------------------------------------------------------
# verbs

@verb(group, "train", output="artifact", torch_options=True, advanced=ADVANCED)
@click.argument("data", metavar="IMAGES")
@click.option("--split", default=None, help="Split inside IMAGES [default: train when present].")
@click.option("--test", "test_data", default=None, metavar="IMAGES",
              help="Labelled images scored after every epoch.")
@click.option("--test-split", default="test", show_default=True, help="Split inside --test.")
@model_options
@method_options
@optim_options
@output_option("--log", metavar="FILE.yaml", help="Per-epoch YAML log.")
@output_option("--checkpoint", metavar="FILE",
               help="Model of the last finished epoch (kept when a run diverges).")
@output_option("--plot", metavar="PNG",
               help="Error energy per layer over inference, accuracy per epoch (matplotlib).")
def train(run, data, split, test_data, test_split, log, checkpoint, plot, **opts):
    """Train a network with Meta-PCN, PC, iPC or backprop -> pcn-model."""
    from cortexkit.tools.pcn import api, distributed

    if plot:
        require_matplotlib()
    device = distributed.local_device(run.device)
    distributed.init(device)
    train_set = _images(data, split)
    test_set = _images(test_data, test_split) if test_data else None
    spec, cfg, dtype = _configs(train_set, opts)
    model, result = api.fit(
        train_set.images, train_set.labels, spec, cfg, normalize=opts["normalize"],
        test=(test_set.images, test_set.labels) if test_set else None, seed=run.seed or 0,
        dtype=dtype, init=opts["init"], device=device, warn=run.warn, progress=run.progress,
        on_epoch=_epoch_writer(run, log, checkpoint))
    if distributed.rank() == 0:
        run.write_artifact(api.model_tensors(model), KIND_MODEL, version=str(MODEL_VERSION),
                           metadata=api.model_metadata(model, result.trace))
        if plot:
            _plot(run, plot, model.history, result.trace)
    distributed.shutdown()


@verb(group, "evaluate", output="report", torch_options=True)
@click.argument("model", metavar="MODEL")
@click.argument("data", metavar="IMAGES")
@click.option("--split", default="test", show_default=True, help="Split inside IMAGES.")
@click.option("--steps", type=Size(min=0, max=MAX_STEPS, what="inference steps"), default=None,
              help="Inference steps for the energies [default: the model's].")
def evaluate(run, model, data, split, steps):
    """Top-1/top-5 and per-layer error energies of a model on labelled images -> YAML."""
    import dataclasses

    from cortexkit.tools.pcn import api

    net = _model(run, model)
    images = _images(data, split)
    inference = net.inference if steps is None else dataclasses.replace(net.inference, steps=steps)
    run.write_report(api.evaluate_model(net, images.images, images.labels, inference))


@verb(group, "predict", output="artifact", torch_options=True)
@click.argument("model", metavar="MODEL")
@click.argument("data", metavar="IMAGES")
@click.option("--split", default="test", show_default=True, help="Split inside IMAGES.")
def predict(run, model, data, split):
    """Logits and predicted labels of images -> table (CSV with -o FILE.csv)."""
    from cortexkit.formats.table import Table, to_csv, write_table
    from cortexkit.formats.stdio import write_bytes
    from cortexkit.tools.pcn import api

    net = _model(run, model)
    images = _images(data, split, need_labels=False)
    logits, labels = api.predict(net, images.images)
    names = net.net.spec.class_names or [str(c) for c in range(logits.shape[1])]
    columns = {"label": labels, **{f"logit_{n}": logits[:, i] for i, n in enumerate(names)}}
    table = Table(columns, {"label": names}, "predictions")
    if str(run.output).lower().endswith(".csv"):
        write_bytes(run.output, to_csv(table), binary=False)
    else:
        write_table(run.output, table, producer=run.producer, config=run.config)
