"""Training: BP, PC, iPC and Meta-PCN on one network definition, with weight normalisation,
AdamW under a warmup-cosine schedule, data-parallel gradient averaging and per-epoch records.

Weight normalisation (Meta-PCN's regulariser, available to every method):
    W <- gain * W / ((sqrt(m) + sqrt(n)) * std(W)),  m = fan-out, n = fan-in (a convolution's
    fan-in includes the kernel area), std over every entry (population), biases untouched;
(sqrt(m)+sqrt(n)) std(W) is the random-matrix estimate of ||W||_2, so the step keeps every layer's
spectral norm near ``gain``. ``gain`` is a number (the same for every layer) or a per-layer rule
(:data:`GAIN_RULES`): ``fan`` = 1 + sqrt(m/n), the gain at which the layer keeps the root mean
square of a random input (std(W) sqrt(n) = 1), and ``fan-act`` = that times
1 / sqrt(E phi(z)^2), z ~ N(0, 1), for a layer whose output goes through the activation phi. Applied exactly at initialisation; after every weight step
either again exactly (mode ``pin``) or only from above (mode ``cap``: W <- W min(1, gain /
((sqrt(m) + sqrt(n)) std(W))), the spectral proxy clipped at the gain, so a layer may shrink but
never grow past it: the submitted abstract's "normalization and clipping"), or exactly at a gain
that is learnt (mode ``learn``: Salimans & Kingma's w = g v / ||v||, one trainable log-gain
s_l = log g_l per normalised layer, initialised at the resolved gain so step 0 is pin's, trained
by the weights' optimizer; its gradient dLoss/ds_l = <dLoss/dW_l, W_l> is the layer's own weight
gradient contracted with its weight, local to the layer, so Meta-PCN computes it from its local
weight update); optional entry-wise clipping to [-clip, clip] afterwards (off by default).

Schedule (PCX's): the learning rate starts at lr, rises linearly to 1.1 lr over the first
``warmup`` fraction of weight steps, then follows a cosine down to 0.1 lr.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from cortexkit.tools.pcn import distributed
from cortexkit.tools.pcn.defaults import (DEFAULT_GAIN, DEFAULT_WEIGHT_NORM_MODE,
                                          GAIN_RULE_PARAMS, GAIN_RULE_SCALE, GAIN_RULES,
                                          WEIGHT_NORM_MODES)
from cortexkit.tools.pcn.inference import (METHODS, InferenceConfig, InferenceResult,
                                           binomial_tail, bp_gradients, imbalance_and_reason,
                                           meta_inference, pc_inference)
from cortexkit.tools.pcn.network import Network, fan_out_in, weight_layers


# which epoch's weights train returns: the last one, or the one with the best validation top-1
KEEP = ("last", "best")


@dataclass
class TrainConfig:
    method: str = "meta-pcn"
    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    adam_eps: float = 1e-8
    warmup: float = 0.1
    weight_norm: bool = True
    weight_norm_gain: float | str = DEFAULT_GAIN
    weight_clip: float | None = None
    augment: bool = False
    inference: InferenceConfig = field(default_factory=InferenceConfig)
    keep: str = "last"   # "best": the weights of the epoch with the highest validation top-1
    # after every weight step: "pin" the spectral proxy at the gain, or "cap" it from above
    weight_norm_mode: str = DEFAULT_WEIGHT_NORM_MODE


    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method '{self.method}' (one of {', '.join(METHODS)})")
        if isinstance(self.weight_norm_gain, str) and self.weight_norm_gain not in GAIN_RULES:
            raise ValueError(f"unknown weight-norm gain rule '{self.weight_norm_gain}' (a number "
                             f"or one of {', '.join(GAIN_RULES)})")
        if self.weight_norm_mode not in WEIGHT_NORM_MODES:
            raise ValueError(f"unknown weight-norm mode '{self.weight_norm_mode}' (one of "
                             f"{', '.join(WEIGHT_NORM_MODES)})")
        if self.keep not in KEEP:
            raise ValueError(f"unknown --keep '{self.keep}' (one of {', '.join(KEEP)})")
        if self.batch_size < 1 or self.epochs < 0:
            raise ValueError("batch size must be >= 1 and epochs >= 0")


@dataclass
class Preprocess:
    """x = (pixels / 255 - mean[c]) / std[c]; mean and std per channel."""

    mean: list[float]
    std: list[float]

    def __call__(self, images: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
        """``images``: uint8 (batch, C, H, W) -> float (batch, C, H, W)."""
        x = images.to(dtype) / 255.0
        mean = torch.tensor(self.mean, dtype=dtype).view(1, -1, 1, 1)
        std = torch.tensor(self.std, dtype=dtype).view(1, -1, 1, 1)
        return (x - mean) / std


class TrainingDiverged(ValueError):
    """A non-finite loss, energy or weight: names the epoch and the layer."""

    def __init__(self, epoch: int, layer: int, what: str):
        super().__init__(f"non-finite {what} at epoch {epoch}, layer {layer}; lower --lr or "
                         "--state-lr (the --checkpoint file keeps the last good epoch)")
        self.epoch, self.layer = epoch, layer


# ---------------------------------------------------------------------------------------------
# weights

def spectral_proxy(weight: torch.Tensor) -> float:
    """(sqrt(m) + sqrt(n)) * std(W): the random-matrix estimate of ||W||_2."""
    m, n = fan_out_in(weight)
    return float((math.sqrt(m) + math.sqrt(n)) * weight.detach().std(unbiased=False))


def activation_gain(name: str) -> float:
    """1 / sqrt(E phi(z)^2) for z ~ N(0, 1) (Gauss-Hermite, 80 nodes): the factor that gives the
    activation ``name`` a unit root-mean-square output on a unit Gaussian input."""
    import numpy as np

    from cortexkit.tools.pcn.network import activation

    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    with torch.no_grad():
        values = activation(name)(torch.from_numpy(nodes)).numpy()
    second = float((weights * values ** 2).sum() / weights.sum())
    return 1.0 / math.sqrt(second)


def layer_gains(net: Network, gain: float | str, act_power: float | None = None,
                out_scale: float | None = None) -> list[float | None]:
    """The target (sqrt(m)+sqrt(n)) std(W) of every weight layer (order of
    :func:`weight_layers`): ``gain`` itself when a number, else the rule of that name: 1 + sqrt(m/n)
    times (1 / rms(phi))^p for a layer that feeds the activation phi and times s for the output
    layer, (p, s) the rule's (:data:`GAIN_RULE_PARAMS`: fan (0, 1), fan-act (1, 1),
    fan-sqrt-act (0.5, 1), fan-act-readout (1, 1/8), fan-sqrt-act-readout (0.5, 1/3),
    fan-free-readout (0, None): None for the output layer, which is then not normalised), all
    times the rule's factor :data:`GAIN_RULE_SCALE` (fan-init: 1 / sqrt(3), torch's init scale;
    1 for the others).
    ``act_power`` / ``out_scale`` (benchmarks only) override p and s."""
    layers = weight_layers(net)
    if not isinstance(gain, str):
        return [float(gain)] * len(layers)
    if gain not in GAIN_RULES:
        raise ValueError(f"unknown weight-norm gain rule '{gain}' (one of {', '.join(GAIN_RULES)})")
    power, scale = GAIN_RULE_PARAMS[gain]
    power = power if act_power is None else act_power
    out_scale = scale if out_scale is None else out_scale
    base = GAIN_RULE_SCALE.get(gain, 1.0)
    act = activation_gain(net.spec.activation) ** power if power else 1.0
    out_ids = {id(m) for m in weight_layers(net.blocks[-1])}  # the linear output block
    gains = []
    for layer in layers:
        m, n = fan_out_in(layer.weight)
        # every layer but the output one feeds an activation (the shortcut of a residual
        # block too: it is added before act2)
        if id(layer) in out_ids and out_scale is None:
            gains.append(None)
            continue
        gains.append(base * (1 + math.sqrt(m / n)) * (out_scale if id(layer) in out_ids else act))
    return gains


@torch.no_grad()
def normalize_weights(net: Network, gain: float | str | list = 1.0, clip: float | None = None,
                      mode: str = "pin") -> None:
    """W <- g * W / ((sqrt(m)+sqrt(n)) std(W)) for every weight layer (each convolution of a
    residual block, its shortcut too), g = ``gain`` or its per-layer rule (:func:`layer_gains`);
    biases untouched. ``mode`` ``cap``: W <- W min(1, g / ((sqrt(m)+sqrt(n)) std(W))), i.e. only
    a layer whose spectral proxy exceeds g is scaled (down to g); one below it is left as it is.
    ``learn`` normalises as ``pin``; ``gain`` may then be the list of per-layer gains (one per
    :func:`weight_layers` entry, None for a layer left free), the learnt ones."""
    if mode not in WEIGHT_NORM_MODES:
        raise ValueError(f"unknown weight-norm mode '{mode}' (one of {', '.join(WEIGHT_NORM_MODES)})")
    targets = gain if isinstance(gain, list) else layer_gains(net, gain)
    for layer, target in zip(weight_layers(net), targets):
        weight = layer.weight
        m, n = fan_out_in(weight)
        std = weight.std(unbiased=False)
        if target is not None and std > 0:  # None: a rule that leaves the output layer free
            factor = target / ((math.sqrt(m) + math.sqrt(n)) * std)
            # cap: a factor of at most 1 (x 1.0 leaves a layer below the gain bit for bit);
            # clamp, not a branch, so a GPU run does not wait on the comparison
            weight.mul_(factor.clamp(max=1.0) if mode == "cap" else factor)
        if clip is not None:
            weight.clamp_(-clip, clip)


class LearntGains:
    """Mode ``learn``'s trainable gains: ``log_gain`` (one entry per normalised weight layer,
    :func:`weight_layers` order, layers a rule leaves free skipped), initialised at the log of the
    resolved gains. W_l = g_l V_l, V_l of unit spectral proxy, so dLoss/d log g_l =
    <dLoss/dW_l, W_l>: :meth:`set_grad` forms it from the weights' ``.grad`` (the same for BP and
    for Meta-PCN's local update, whose weight gradients are BP's at eta_x = 1, T >= L - 1)."""

    def __init__(self, net: Network, gain: float | str):
        self.layers = weight_layers(net)
        self.targets = layer_gains(net, gain)
        self.learnt = [i for i, t in enumerate(self.targets) if t is not None]
        p = next(net.parameters())
        self.log_gain = torch.nn.Parameter(torch.tensor(
            [math.log(self.targets[i]) for i in self.learnt], dtype=p.dtype, device=p.device))

    @torch.no_grad()
    def set_grad(self) -> None:
        grad = torch.stack([(self.layers[i].weight.grad * self.layers[i].weight).sum()
                            if self.layers[i].weight.grad is not None
                            else self.log_gain.new_zeros(()) for i in self.learnt])
        self.log_gain.grad = grad.to(self.log_gain.dtype)

    def values(self) -> list[float | None]:
        """The per-layer gains now (None for a free layer), for :func:`normalize_weights`."""
        out: list = [None] * len(self.targets)
        for k, i in enumerate(self.learnt):
            out[i] = self.log_gain[k].detach().exp()
        return out


def warmup_cosine(total_steps: int, warmup: float = 0.1) -> Callable[[int], float]:
    """The learning-rate factor at weight step s (PCX: 1 -> 1.1 linearly, cosine to 0.1)."""
    warm = max(1, int(round(warmup * total_steps)))

    def factor(step: int) -> float:
        if step < warm:
            return 1.0 + 0.1 * step / warm
        rest = max(1, total_steps - warm)
        progress = min(1.0, (step - warm) / rest)
        return 0.1 + 0.5 * (1.1 - 0.1) * (1 + math.cos(math.pi * progress))

    return factor


def sweep_factor(steps: int, rate: float, momentum: float, below: int) -> float:
    """The fraction of its backprop error that the layer ``below`` layers under the top holds
    after ``steps`` top-down sweeps (SGD with momentum on d_l - g_l(d_{l+1})), from the scalar
    chain d_top = 1 with unit feedback: exact for Meta-PCN up to the Jacobians, which every
    layer applies the same way at the fixed point."""
    d, velocity = [0.0] * below, [0.0] * below
    for _ in range(steps):
        above = 1.0
        for k in range(below):
            velocity[k] = momentum * velocity[k] + (d[k] - above)
            d[k] -= rate * velocity[k]
            above = d[k]
    return d[-1] if below else 1.0


def depth_warning(depth: int, method: str, cfg: InferenceConfig) -> str | None:
    """A warning when T * eta_x is too small for the depth: information moves one layer per
    Jacobi step, so the bottom layer sees P(Binomial(T, eta_x) >= L - 1) of its BP error."""
    if method == "bp" or depth < 2:
        return None
    if method == "meta-pcn" and cfg.schedule == "sweep":
        if cfg.steps < 1:
            return "T = 0 inference steps: the hidden layers get no error"
        factor = sweep_factor(cfg.steps, cfg.state_lr, cfg.momentum, depth - 1)
        if factor >= 0.5:
            return None
        return (f"{cfg.steps} top-down sweeps at eta_x = {cfg.state_lr:g} are few for {depth} "
                f"layers (the first layer gets about {factor:.2g} of its backprop error): use "
                f"--state-lr 1, or raise --steps")
    reach = cfg.steps * cfg.state_lr / max(1e-12, 1 - cfg.momentum)
    if reach >= depth - 1:
        return None
    factor = binomial_tail(cfg.steps, min(1.0, cfg.state_lr), depth - 1)
    head = (f"T * eta_x = {cfg.steps} * {cfg.state_lr:g} is small for {depth} layers (information "
            f"moves one layer per step; the first layer gets about {factor:.2g} of its backprop "
            "error)")
    if method == "meta-pcn":
        return (f"{head}: raise --steps to >= {depth - 1} with --state-lr 1, or use "
                "--schedule sweep")
    # PC / iPC: no sweep schedule; a larger state rate can make the energy descent unstable
    need = math.ceil((depth - 1) * max(1e-12, 1 - cfg.momentum) / cfg.state_lr)
    return (f"{head}: raise --steps to about {need} or --state-lr (PC's inference may then "
            "oscillate), or train with --method meta-pcn")


# ---------------------------------------------------------------------------------------------
# data

def augment_batch(x: torch.Tensor, generator: torch.Generator, pad: int = 4) -> torch.Tensor:
    """Random horizontal flip and random crop (zero padding ``pad``) of a float batch
    (batch, C, H, W), drawn from ``generator`` (one draw per global batch)."""
    n, _, h, w = x.shape
    flip = torch.rand(n, generator=generator) < 0.5
    x = torch.where(flip.view(-1, 1, 1, 1), x.flip(3), x)
    padded = F.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    cropped = torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(n)])
    return cropped


@dataclass
class Dataset:
    """``images``: uint8 (N, C, H, W); ``labels``: int64 (N,)."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.images.shape[0])


# ---------------------------------------------------------------------------------------------
# one batch

def _inference(net: Network, x, y, cfg: TrainConfig, scale: float, weight_step=None,
               record: bool = False) -> InferenceResult:
    inf = cfg.inference
    if cfg.method == "bp":  # with its errors, so the log shows what evaluate reports
        return bp_gradients(net, x, y, inf.loss, scale=scale, errors=True)
    if cfg.method == "meta-pcn":
        return meta_inference(net, x, y, inf, scale=scale, record=record)
    return pc_inference(net, x, y, inf, scale=scale, record=record,
                        weight_step=weight_step if cfg.method == "ipc" else None)


def _first_bad_layer(net: Network, grads: list[torch.Tensor], energy: torch.Tensor) -> int | None:
    params = list(net.parameters())
    owner = {id(p): l for l, block in enumerate(net.blocks, 1) for p in block.parameters()}
    for p, g in zip(params, grads):
        if not torch.isfinite(g).all() or not torch.isfinite(p).all():
            return owner[id(p)]
    bad = (~torch.isfinite(energy)).nonzero()
    return int(bad[0]) + 1 if bad.numel() else None


@dataclass
class EpochRecord:
    epoch: int
    train_loss: float
    train_top1: float
    seconds: float
    lr: float
    layer_energy: list[float]
    imbalance: float | None
    test_top1: float | None = None
    test_top5: float | None = None
    imbalance_note: str | None = None     # why ``imbalance`` is undefined, when it is
    val_top1: float | None = None         # forward-pass top-1 on the validation split, when given

    def to_dict(self) -> dict:
        # no val_top1 key without a validation split: such records stay as they were
        return {k: v for k, v in self.__dict__.items() if k != "val_top1" or v is not None}


@dataclass
class TrainResult:
    history: list[EpochRecord]
    trace: list[list[float]] | None = None     # (T + 1, L) layer energies over inference steps
    chosen_epoch: int | None = None    # the epoch whose weights the network holds (keep best)

    @property
    def best_top1(self) -> float | None:
        scores = [r.test_top1 for r in self.history if r.test_top1 is not None]
        return max(scores) if scores else None


def train(net: Network, data: Dataset, cfg: TrainConfig, prep: Preprocess, *,
          test: Dataset | None = None, validation: Dataset | None = None, seed: int = 0,
          on_epoch: Callable[[EpochRecord, Network], None] | None = None,
          progress: Callable | None = None, device: torch.device | None = None) -> TrainResult:
    """Train ``net`` in place. Under torchrun every rank runs this with the same seed: each takes
    its share of every global batch and gradients are averaged before each weight step.
    ``on_epoch`` is called on rank 0 after every finite epoch; ``progress(iterable, total, desc)``
    wraps the batch loop (a tqdm bar). ``validation`` is scored after every epoch (``val_top1``);
    with ``cfg.keep == "best"`` (which needs it) the network ends holding the weights of the first
    epoch with the highest validation top-1 (``chosen_epoch``), else those of the last epoch."""
    if cfg.keep == "best" and (validation is None or len(validation) == 0):
        raise ValueError("keep best needs validation images (--validation-share > 0)")
    rank, world = distributed.rank(), distributed.world_size()
    dtype = next(net.parameters()).dtype
    generator = torch.Generator().manual_seed(seed)
    n = len(data)
    batches = math.ceil(n / cfg.batch_size)
    per_batch = cfg.inference.steps if cfg.method == "ipc" else 1
    total = max(1, cfg.epochs * batches * per_batch)
    gains = LearntGains(net, cfg.weight_norm_gain) if (
        cfg.weight_norm and cfg.weight_norm_mode == "learn") else None
    opt = torch.optim.AdamW(list(net.parameters()) + ([gains.log_gain] if gains else []),
                            lr=cfg.lr, weight_decay=cfg.weight_decay, eps=cfg.adam_eps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(total, cfg.warmup))
    if cfg.weight_norm:  # exactly at initialisation, in every mode
        normalize_weights(net, cfg.weight_norm_gain, cfg.weight_clip)
    distributed.broadcast_parameters(net)
    params = list(net.parameters())
    current = [0]

    def weight_step(grads: list[torch.Tensor]) -> None:
        grads = distributed.sum_gradients(grads)
        for p, g in zip(params, grads):
            p.grad = g.to(p.dtype)
        if gains is not None:  # from the weights the gradients were computed at
            gains.set_grad()
        try:
            opt.step()
        except RuntimeError as exc:  # e.g. a rate whose step overflows the parameter dtype
            raise TrainingDiverged(current[0], 1, f"weight step ({exc})") from None
        sched.step()
        opt.zero_grad(set_to_none=True)
        if cfg.weight_norm:
            normalize_weights(net, gains.values() if gains else cfg.weight_norm_gain,
                              cfg.weight_clip, cfg.weight_norm_mode)

    history: list[EpochRecord] = []
    best_score, best_state, chosen = -1.0, None, None
    for epoch in range(1, cfg.epochs + 1):
        current[0] = epoch
        start = time.perf_counter()
        order = torch.randperm(n, generator=generator)
        stats = torch.zeros(3 + net.depth, dtype=torch.float64)  # loss, correct, count, energies
        loop = range(batches)
        if progress is not None and rank == 0:
            loop = progress(loop, total=batches, desc=f"epoch {epoch}/{cfg.epochs}")
        for b in loop:
            index = order[b * cfg.batch_size:(b + 1) * cfg.batch_size]
            x = prep(data.images[index], dtype)
            if cfg.augment:
                x = augment_batch(x, generator)
            local = slice(rank, None, world)
            x, y = x[local].to(device or x.device), data.labels[index][local].to(device or x.device)
            scale = 1.0 / len(index)
            if len(y) == 0:
                continue
            res = _inference(net, x, y, cfg, scale, weight_step)
            bad = _first_bad_layer(net, res.grads, res.layer_energy)
            if bad is not None or not math.isfinite(float(res.loss)):
                raise TrainingDiverged(epoch, bad or net.depth, "loss or error energy")
            if cfg.method != "ipc":
                weight_step(res.grads)
            stats[0] += float(res.loss)
            stats[1] += float((res.logits.argmax(1) == y).sum())
            stats[2] += len(y)
            stats[3:] += res.layer_energy.double().cpu() * len(y)
        stats = distributed.sum_tensor(stats)
        seconds = time.perf_counter() - start
        bad = next((l for l, blk in enumerate(net.blocks, 1)
                    if not all(torch.isfinite(p).all() for p in blk.parameters())), None)
        if bad is not None:
            raise TrainingDiverged(epoch, bad, "weight")
        energy = (stats[3:] / stats[2].clamp(min=1)).tolist()
        ratio, note = imbalance_and_reason(torch.tensor(energy))
        record = EpochRecord(epoch, float(stats[0] / stats[2]), float(stats[1] / stats[2]),
                             seconds, float(sched.get_last_lr()[0]), energy, ratio,
                             imbalance_note=note)
        if test is not None and rank == 0:
            record.test_top1, record.test_top5 = accuracy(net, test, prep, device)
        if validation is not None and rank == 0:
            record.val_top1 = accuracy(net, validation, prep, device)[0]
        if cfg.keep == "best" and rank == 0 and record.val_top1 > best_score:  # first maximum
            best_score, chosen = record.val_top1, epoch
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        history.append(record)
        if on_epoch is not None and rank == 0:
            on_epoch(record, net)
    if cfg.keep == "best":  # rank 0 chose; every rank takes its weights
        if best_state is not None:
            net.load_state_dict(best_state)
        distributed.broadcast_parameters(net)
        chosen = chosen if rank == 0 else None
    elif history:
        chosen = history[-1].epoch
    trace = None
    if rank == 0 and cfg.method != "bp" and n:
        index = torch.arange(min(n, cfg.batch_size))
        x, y = prep(data.images[index], dtype), data.labels[index]
        x, y = x.to(device or x.device), y.to(device or x.device)
        snapshot = {k: v.clone() for k, v in net.state_dict().items()}
        res = _inference(net, x, y, cfg, 1.0 / len(index), weight_step=lambda g: None, record=True)
        net.load_state_dict(snapshot)
        trace = res.trace.tolist() if res.trace is not None else None
    return TrainResult(history, trace, chosen)


# ---------------------------------------------------------------------------------------------
# evaluation

@torch.no_grad()
def logits_of(net: Network, images: torch.Tensor, prep: Preprocess, device=None,
              batch: int = 1000) -> torch.Tensor:
    """One forward pass per batch: uint8 (N, C, H, W) -> logits (N, classes) on the CPU."""
    p = next(net.parameters())
    outs = [net(prep(images[i:i + batch], p.dtype).to(p.device)).cpu()
            for i in range(0, images.shape[0], batch)]
    classes = net.blocks[-1].layer.out_features
    return torch.cat(outs) if outs else torch.zeros(0, classes, dtype=p.dtype)


def accuracy(net: Network, data: Dataset, prep: Preprocess, device=None) -> tuple[float, float]:
    """(top-1, top-5) of a single forward pass (the test rule of every method here)."""
    logits = logits_of(net, data.images, prep)
    if len(data) == 0:
        return float("nan"), float("nan")
    top1 = float((logits.argmax(1) == data.labels).double().mean())
    k = min(5, logits.shape[1])
    top5 = float((logits.topk(k, 1).indices == data.labels[:, None]).any(1).double().mean())
    return top1, top5


def evaluate(net: Network, data: Dataset, prep: Preprocess, method: str, cfg: InferenceConfig,
             batch: int = 500) -> dict:
    """Top-1/top-5 and the output loss of one forward pass (what the model predicts), the
    per-layer error energies at the end of the model's own inference (backprop's errors for
    ``bp``) and the objective that inference ends at (``energy``), averaged over the data."""
    top1, top5 = accuracy(net, data, prep)
    p = next(net.parameters())
    sums = torch.zeros(net.depth, dtype=torch.float64)
    loss = total = 0.0
    for i in range(0, len(data), batch):
        x = prep(data.images[i:i + batch], p.dtype).to(p.device)
        y = data.labels[i:i + batch].to(p.device)
        if method == "bp":
            res = bp_gradients(net, x, y, cfg.loss, scale=1.0 / len(y), errors=True)
        elif method == "meta-pcn":
            res = meta_inference(net, x, y, cfg, scale=1.0 / len(y), final_energy=True)
        else:
            res = pc_inference(net, x, y, cfg, scale=1.0 / len(y))
        sums += res.layer_energy.double().cpu() * len(y)
        loss += float(res.loss)
        total += float(res.energy)
    n = max(1, len(data))
    energy = (sums / n).tolist()
    ratio, note = imbalance_and_reason(torch.tensor(energy))
    report = {"examples": len(data), "top1": top1, "top5": top5, "loss": loss / n,
              "energy": total / n, "layer_energy": energy, "imbalance_log10": ratio}
    if note is not None:
        report["imbalance_note"] = note
    return report
