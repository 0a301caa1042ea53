"""The whole tool as functions on arrays: fit a model, load it back, predict and evaluate.

A model is (state tensors, metadata): ``model_tensors`` / ``model_metadata`` give what the
``pcn-model`` artifact stores, :func:`load_model` rebuilds the network from them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from cortexkit.tools.pcn import distributed
from cortexkit.tools.pcn.inference import InferenceConfig
from cortexkit.tools.pcn.network import Network, NetworkSpec, build_network
from cortexkit.tools.pcn.train import (Dataset, EpochRecord, Preprocess, TrainConfig,
                                       TrainResult, depth_warning, evaluate, logits_of, train)

NORMALISATIONS = {"none": ([0.0], [1.0]), "mnist": ([0.1307], [0.3081]),
                  "cifar10": ([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010])}


@dataclass
class Model:
    net: Network
    prep: Preprocess
    method: str
    inference: InferenceConfig
    history: list[dict]


def preprocess_for(images: np.ndarray, normalize: str) -> Preprocess:
    """Per-channel mean/std: computed from ``images`` (``dataset``), a named set, or none.
    ``images``: uint8 (N, C, H, W)."""
    channels = images.shape[1]
    if normalize == "dataset":
        x = images.astype(np.float64) / 255.0
        mean = x.mean(axis=(0, 2, 3))
        std = x.std(axis=(0, 2, 3))
        return Preprocess(mean.tolist(), np.where(std > 0, std, 1.0).tolist())
    if normalize not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation '{normalize}' (dataset, none, mnist, cifar10)")
    mean, std = NORMALISATIONS[normalize]
    if len(mean) == 1:
        mean, std = mean * channels, std * channels
    if len(mean) != channels:
        raise ValueError(f"--normalize {normalize} is for {len(mean)}-channel images, these have "
                         f"{channels}")
    return Preprocess(list(mean), list(std))


def default_config(spec: NetworkSpec, method: str = "meta-pcn", **changes) -> TrainConfig:
    """The TrainConfig train-pcn resolves for ``method`` on ``spec`` when no option is given
    (tools/pcn/defaults.py: T, eta_x and weight normalisation follow the method and the number
    of blocks); ``changes`` override TrainConfig fields (``inference`` included)."""
    from cortexkit.tools.pcn.defaults import (block_count, default_state_lr, default_steps,
                                              default_weight_norm)

    blocks = block_count(spec.arch, spec.depth)
    inference = InferenceConfig(default_steps(method, blocks), default_state_lr(method))
    fields = {"method": method, "weight_norm": default_weight_norm(method), "inference": inference}
    fields.update(changes)
    return TrainConfig(**fields)


def limit_indices(count: int, limit: int | None, labels: np.ndarray | None = None,
                  seed: int = 0) -> np.ndarray:
    """Indices (sorted, int64) of at most ``limit`` of ``count`` images, drawn with ``seed``:
    class-balanced when ``labels`` (N,) are given (classes taken in turn, a random image of each,
    so per-class counts differ by at most one until a class runs out), else uniformly.
    ``limit`` None or >= ``count`` keeps every image."""
    if limit is None or limit >= count:
        return np.arange(count, dtype=np.int64)
    rng = np.random.default_rng(seed)
    if labels is None:
        return np.sort(rng.permutation(count)[:limit]).astype(np.int64)
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in rng.permutation(np.unique(labels))]
    chosen: list[int] = []
    depth = 0
    while len(chosen) < limit:
        for pool in pools:
            if depth < len(pool) and len(chosen) < limit:
                chosen.append(int(pool[depth]))
        depth += 1
    return np.sort(np.asarray(chosen, dtype=np.int64))


def validation_split(labels: np.ndarray, share: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(fit, validation) indices, sorted: ``share`` of each class's images (rounded, at least one
    of a class with two or more) held out, drawn with ``seed``."""
    rng = np.random.default_rng(seed + 7919)  # not the draw of --limit
    held: list[np.ndarray] = []
    for c in np.unique(labels):
        pool = rng.permutation(np.flatnonzero(labels == c))
        k = min(len(pool) - 1, max(1, int(round(share * len(pool))))) if len(pool) >= 2 else 0
        held.append(pool[:k])
    validation = np.sort(np.concatenate(held)).astype(np.int64) if held else np.zeros(0, np.int64)
    fit = np.setdiff1d(np.arange(len(labels), dtype=np.int64), validation)
    return fit, validation


def hold_out(images: np.ndarray, labels: np.ndarray, share: float, seed: int, needed: bool,
             best: bool = False):
    """(fit images, fit labels, held) where ``held`` = (images, labels) of a seeded class-balanced
    ``share`` of the training images (:func:`validation_split`) when ``needed`` (a baseline check or
    keep-best) and the share leaves images on both sides, else None and the images unchanged;
    keep-best (``best``) without held-out images is a ValueError."""
    if needed and share > 0:
        fit, validation = validation_split(labels, share, seed)
        if len(validation) and len(fit):
            return images[fit], labels[fit], (images[validation], labels[validation])
    if best:
        raise ValueError("--keep best needs validation images: --validation-share > 0 and at "
                         "least two training images of a class")
    return images, labels, None


def run_figures(result, examples: int, held, best: bool) -> tuple[dict, dict | None]:
    """The end-of-training figures of a fit (examples, train/test top-1 of the epoch whose weights
    the model holds: the last, or with keep-best (``best``) the chosen one) and, with keep-best, what was kept
    (epoch, validation images, validation top-1); ``held`` the held-out (images, labels)."""
    figures: dict = {"examples": examples}
    if not result.history:
        return figures, None
    last = result.history[(result.chosen_epoch or len(result.history)) - 1]
    figures["train_top1"] = round(last.train_top1, 4)
    if last.test_top1 is not None:
        figures["test_top1"] = round(last.test_top1, 4)
    if not best:
        return figures, None
    figures["chosen_epoch"] = last.epoch
    return figures, {"keep": "best", "epoch": last.epoch, "validation_images": int(len(held[1])),
                     "val_top1": round(last.val_top1, 4)}


def baseline_config(cfg: TrainConfig, baseline: str) -> TrainConfig:
    """``cfg`` with the method replaced by backprop (``bp+wn``: with weight normalisation at the
    same gain rule; ``bp``: plain), everything else (epochs, batch, optimiser) the same."""
    return dataclasses.replace(cfg, method="bp", weight_norm=baseline == "bp+wn",
                               inference=InferenceConfig(0, 1.0))


def top1(model: Model, images: np.ndarray, labels: np.ndarray) -> float:
    """Forward-pass top-1 accuracy of ``model`` on labelled images."""
    return float((predict(model, images)[1] == labels).mean()) if len(labels) else float("nan")


def check_images(images: np.ndarray, labels: np.ndarray | None, spec: NetworkSpec,
                 name: str) -> None:
    """Images of the model's (C, H, W) and labels inside its class range, or a ValueError."""
    if tuple(images.shape[1:]) != tuple(spec.in_shape):
        raise ValueError(f"{name}: images are {list(images.shape[1:])} (C, H, W) but the model "
                         f"takes {list(spec.in_shape)}")
    if labels is not None and len(labels) and int(labels.max()) >= spec.classes:
        raise ValueError(f"{name}: label {int(labels.max())} is outside the model's "
                         f"{spec.classes} classes (0..{spec.classes - 1})")


def fit(train_images: np.ndarray, train_labels: np.ndarray, spec: NetworkSpec, cfg: TrainConfig,
        *, normalize: str = "dataset", test: tuple[np.ndarray, np.ndarray] | None = None,
        validation: tuple[np.ndarray, np.ndarray] | None = None, seed: int = 0, dtype=torch.float32, init: str = "default", device=None,
        warn: Callable[[str], None] | None = None, progress=None,
        on_epoch: Callable[[EpochRecord, "Model"], None] | None = None) -> tuple[Model, TrainResult]:
    """Train a fresh network of ``spec`` with ``cfg``. Images uint8 (N, C, H, W), labels (N,).
    ``validation`` (images, labels) is scored after every epoch; ``cfg.keep == "best"`` needs it and
    returns the weights of its best epoch (``result.chosen_epoch``)."""
    check_images(train_images, train_labels, spec, "training data")
    if test is not None:
        check_images(test[0], test[1], spec, "test data")
    if validation is not None:
        check_images(validation[0], validation[1], spec, "validation data")
    message = depth_warning(len(Network(spec).blocks), cfg.method, cfg.inference)
    if message and warn is not None and distributed.rank() == 0:
        warn(message)
    torch.manual_seed(seed)
    net = build_network(spec, dtype=dtype, init=init).to(device or "cpu")
    prep = preprocess_for(train_images, normalize)
    model = Model(net, prep, cfg.method, cfg.inference, [])

    def epoch_done(record: EpochRecord, _net) -> None:
        model.history.append(record.to_dict())
        if on_epoch is not None:
            on_epoch(record, model)

    data = Dataset(torch.from_numpy(train_images), torch.from_numpy(train_labels))
    test_set = None if test is None else Dataset(torch.from_numpy(test[0]),
                                                 torch.from_numpy(test[1]))
    val_set = None if validation is None else Dataset(torch.from_numpy(validation[0]),
                                                      torch.from_numpy(validation[1]))
    result = train(net, data, cfg, prep, test=test_set, validation=val_set, seed=seed,
                   on_epoch=epoch_done,
                   progress=progress, device=device)
    return model, result


# ---------------------------------------------------------------------------------------------
# the artifact's content

def model_tensors(model: Model) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().contiguous() for k, v in model.net.state_dict().items()}


def model_metadata(model: Model, trace=None) -> dict:
    meta = {"pcn.network": model.net.spec.to_dict(),
            "pcn.method": {"method": model.method, "inference": asdict(model.inference)},
            "pcn.preprocess": {"mean": model.prep.mean, "std": model.prep.std},
            # timings stay in --log: same inputs and seed give the same artifact bytes
            "pcn.history": [{k: v for k, v in r.items() if k != "seconds"} for r in model.history]}
    if trace is not None:
        meta["pcn.trace"] = trace
    return meta


def load_model(tensors: dict[str, torch.Tensor], meta_json: Callable[[str], object],
               device=None) -> Model:
    """Rebuild a model from an artifact's tensors and its JSON metadata getter."""
    spec_data, method = meta_json("pcn.network"), meta_json("pcn.method")
    prep_data = meta_json("pcn.preprocess")
    if not isinstance(spec_data, dict) or not isinstance(method, dict) or not prep_data:
        raise ValueError("the pcn-model artifact lacks pcn.network, pcn.method or pcn.preprocess")
    spec = NetworkSpec.from_dict(spec_data)
    dtype = next(iter(tensors.values())).dtype
    net = build_network(spec, dtype=dtype)
    missing = sorted(set(net.state_dict()) - set(tensors))
    if missing:
        raise ValueError(f"the pcn-model artifact lacks tensors {missing[:4]}")
    try:
        net.load_state_dict({k: tensors[k] for k in net.state_dict()})
    except RuntimeError as exc:
        raise ValueError(f"the pcn-model tensors do not fit its network: "
                         f"{str(exc).splitlines()[-1].strip()}") from None
    net.to(device or "cpu")
    inference = InferenceConfig(**method.get("inference", {}))
    return Model(net, Preprocess(prep_data["mean"], prep_data["std"]), method["method"],
                 inference, list(meta_json("pcn.history") or []))


def predict(model: Model, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logits float32 (N, classes), labels int64 (N,)) of one forward pass."""
    check_images(images, None, model.net.spec, "images")
    logits = logits_of(model.net, torch.from_numpy(images), model.prep)
    return logits.float().numpy(), logits.argmax(1).numpy().astype(np.int64)


def evaluate_model(model: Model, images: np.ndarray, labels: np.ndarray,
                   inference: InferenceConfig | None = None) -> dict:
    """Top-1/top-5, mean loss, per-layer error energies and their imbalance (a report dict)."""
    check_images(images, labels, model.net.spec, "evaluation data")
    data = Dataset(torch.from_numpy(images), torch.from_numpy(labels))
    report = evaluate(model.net, data, model.prep, model.method, inference or model.inference)
    report["class_examples"] = np.bincount(labels, minlength=model.net.spec.classes).tolist()
    report["method"] = model.method
    return report
