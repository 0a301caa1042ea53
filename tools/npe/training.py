"""Maximum-likelihood training of a conditional density estimator, as in sbi / MF-NPE.

Loss: mean of -log q(theta_i | x_i) over a minibatch. Data split once at random into 90 % train and
10 % validation; minibatches of min(batch_size, n_train) drawn without replacement, last partial
batch dropped; Adam; gradient norm clipped to ``clip``; stop when the validation loss has not improved
for ``patience`` consecutive epochs (or at ``max_epochs``); the best-validation weights are loaded back
at the end. The history says which limit ended the run (``stop_reason``: patience or step-cap).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch


# Floor of the step-counted patience: the paper's and sbi's 20 epochs.
PATIENCE_FLOOR = 20
PATIENCE_STEPS = 1800  # 40 epochs at 10^4 simulations, 60 (--patience) up to ~6,800 (RESULTS.md stop 44)


def patience_epochs(cfg: "TrainConfig", steps_per_epoch: int) -> int:
    """Epochs without improvement that end a fit: ``cfg.patience``, or with ``cfg.patience_steps``
    set, min(patience, max(20, ceil(patience_steps / steps per epoch))): large data sets (many steps
    per epoch) stop sooner, small ones keep ``patience`` (RESULTS.md stop 44)."""
    if cfg.patience_steps <= 0:
        return cfg.patience
    return min(cfg.patience, max(PATIENCE_FLOOR, math.ceil(cfg.patience_steps / max(1, steps_per_epoch))))


@dataclass
class TrainConfig:
    lr: float = 5e-4
    batch_size: int = 200
    validation_fraction: float = 0.1
    patience: int = 60  # the paper's and sbi's 20 stops SIR at 50 HF simulations before it learns (RESULTS.md)
    clip: float = 5.0
    max_epochs: int = 5000
    # the patience also counted in gradient steps: ``patience_epochs`` (0: epochs only, the paper's)
    patience_steps: int = PATIENCE_STEPS

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainHistory:
    """What one call of :func:`train` did (stored in the artifact's round history)."""

    epochs: int = 0
    best_epoch: int = -1
    best_val_loss: float = math.inf
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    n_train: int = 0
    n_val: int = 0
    max_epochs: int = 0
    stop_reason: str = ""  # patience | step-cap
    patience: int = 0  # the epochs without improvement that ended (or would end) it: patience_epochs
    # (train rows, validation rows) of the data given: another fit can be scored on the same split
    split: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False)

    def summary(self) -> dict:
        return {"epochs": self.epochs, "best_epoch": self.best_epoch, "best_val_loss": float(self.best_val_loss),
                "n_train": self.n_train, "n_val": self.n_val, "stop_reason": self.stop_reason,
                "patience": self.patience}

    def curve(self) -> dict:
        """The per-epoch losses, entry k for epoch k + 1 (as printed)."""
        return {"train_loss": list(self.train_loss), "val_loss": list(self.val_loss)}


@dataclass(frozen=True)
class EpochRecord:
    """What ``on_epoch`` hears after each epoch (``epoch`` and ``best_epoch`` 0-based)."""

    epoch: int
    train_loss: float
    val_loss: float
    best_val_loss: float
    best_epoch: int
    patience_left: int


def split_indices(n: int, validation_fraction: float, generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Random train/validation split as sbi does it: n_train = int((1 - f) n), the rest validates."""
    perm = torch.randperm(n, generator=generator)
    n_train = int((1 - validation_fraction) * n)
    if n_train < 1 or n - n_train < 1:
        raise ValueError(f"need at least 2 simulations to split into train and validation, got {n}")
    return perm[:n_train], perm[n_train:]


class Adam:
    """Adam (Kingma & Ba) over a fixed list of parameters, updated with foreach (multi-tensor) ops.

    The same arithmetic, in the same order per element, as ``torch.optim.Adam`` with its defaults
    (betas 0.9 / 0.999, eps 1e-8, no weight decay), so a seeded fit gives the same weights to the
    bit. Written out because the first ``torch.optim`` optimiser of a process imports torch._dynamo
    (about 1.2-1.4 s of CPU on the 2-core machine, more than a small fit's whole training), and one
    foreach call per step replaces a Python loop over the flow's ~100 tensors.
    """

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.beta1, self.beta2), self.eps = float(lr), betas, float(eps)
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.steps = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        params = [self.params[i] for i in live]
        grads = [self.params[i].grad for i in live]
        m = [self.exp_avg[i] for i in live]
        v = [self.exp_avg_sq[i] for i in live]
        self.steps += 1
        torch._foreach_lerp_(m, grads, 1 - self.beta1)
        torch._foreach_mul_(v, self.beta2)
        torch._foreach_addcmul_(v, grads, grads, 1 - self.beta2)
        bias1 = 1 - self.beta1 ** self.steps
        bias2_sqrt = (1 - self.beta2 ** self.steps) ** 0.5
        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, bias2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(params, m, denom, -(self.lr / bias1))


def _mode_matters(model) -> bool:
    """Whether some layer computes differently in train and eval mode (dropout, batch norm)."""
    kinds = (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._NormBase)
    return any(isinstance(m, kinds) for m in model.modules())


def train(model, theta: torch.Tensor, x: torch.Tensor, cfg: TrainConfig,
          generator: torch.Generator | None = None, on_epoch=None,
          split: tuple[torch.Tensor, torch.Tensor] | None = None) -> TrainHistory:
    """Fit ``model`` (anything with ``log_prob(theta, x)``) in place; returns the history.

    theta (n, d), x (n, x_dim). ``on_epoch(EpochRecord)`` is called after each epoch. ``split``:
    (train rows, validation rows) to use instead of a random split drawn from ``generator`` (a
    baseline scored on another fit's validation rows, ``TrainHistory.split``).
    """
    if split is None:
        split = split_indices(theta.shape[0], cfg.validation_fraction, generator)
    train_idx, val_idx = split
    theta_tr, x_tr = theta[train_idx], x[train_idx]
    theta_val, x_val = theta[val_idx], x[val_idx]
    n_train = theta_tr.shape[0]
    batch = min(cfg.batch_size, n_train)
    n_batches = n_train // batch  # drop_last
    patience = patience_epochs(cfg, n_batches)

    # the unnormalised density where a model has one (leakage renormalisation is for after training)
    log_prob = getattr(model, "flow_log_prob", model.log_prob)
    optimizer = Adam(model.parameters(), lr=cfg.lr)
    params = optimizer.params
    hist = TrainHistory(n_train=n_train, n_val=theta_val.shape[0], max_epochs=cfg.max_epochs,
                        split=(train_idx, val_idx), patience=patience)
    # the best weights so far, copied into buffers made once (the live tensors are updated in place)
    live = list(model.state_dict(keep_vars=True).values())
    with torch.no_grad():
        best_state = [t.detach().clone() for t in live]
    toggle = _mode_matters(model)
    model.train()
    since_best = 0
    epoch = 0
    while epoch < cfg.max_epochs:
        if toggle:
            model.train()
        order = torch.randperm(n_train, generator=generator)
        losses = []
        for b in range(n_batches):
            idx = order[b * batch:(b + 1) * batch]
            optimizer.zero_grad()
            loss = -log_prob(theta_tr[idx], x_tr[idx]).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, max_norm=cfg.clip, foreach=True)
            optimizer.step()
            losses.append(loss.detach())
        if toggle:
            model.eval()
        with torch.no_grad():
            val = -log_prob(theta_val, x_val).mean().item()
        total = 0.0
        for value in torch.stack(losses).tolist():  # one read-out per epoch, summed as before
            total += value * batch
        hist.train_loss.append(total / (n_batches * batch))
        hist.val_loss.append(val)
        if epoch == 0 or val < hist.best_val_loss:
            hist.best_val_loss, hist.best_epoch, since_best = val, epoch, 0
            with torch.no_grad():
                torch._foreach_copy_(best_state, [t.detach() for t in live])
        else:
            since_best += 1
        if on_epoch is not None:
            on_epoch(EpochRecord(epoch, hist.train_loss[-1], val, hist.best_val_loss, hist.best_epoch,
                                 patience - since_best))
        epoch += 1
        if since_best >= patience:
            hist.stop_reason = "patience"
            break
    else:
        hist.stop_reason = "step-cap"
    hist.epochs = epoch
    with torch.no_grad():
        torch._foreach_copy_([t.detach() for t in live], best_state)
    model.eval()
    return hist
