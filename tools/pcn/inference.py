"""Energies and inference: predictive coding (PC) and Meta-PCN, with their local weight gradients.

Notation (l = 1..L, block f_l = ``net.blocks[l-1]``, z_0 = x clamped):

PC (Whittington & Bogacz 2017; PCX):
    F(z) = sum_{l<L} 1/2 ||z_l - f_l(z_{l-1})||^2 + loss(y, f_L(z_{L-1}))
    latents z_1..z_{L-1} start at the forward pass; T steps of SGD with momentum on z
    (rate eta_x); the weight gradient dF/dtheta_l at z^(T) is local: it needs block l's own
    error and its input z_{l-1}.

Meta-PCN (Ha et al., ICLR 2026):
    after the forward pass freeze c_l = f_l(c_{l-1}) and the slopes of every block (its
    autograd graph at the forward point); error variables d_l = z_l - c_l start at 0 for
    l < L, the top one is fixed: d_L = -dloss/du_L (= y - softmax(u_L) for cross-entropy).
    Inference minimises the meta-prediction-error energy
        J(d) = 1/2 sum_{l<L} ||d_l - g_l(d_{l+1})||^2,  g_l(v) = (df_{l+1}/dz_l at c_l)^T v,
    the target g_l(d_{l+1}) held fixed within a step, so grad_{d_l} J = d_l - g_l(d_{l+1}).
    ``jacobi``: every layer from the step-t values, all g_l in ONE batched vector-Jacobian
    product; ``sweep``: top-down, each layer uses the freshly updated layer above.
    Weight gradient: -(post-synaptic inferred error d_l) x (pre-synaptic forward activity c_{l-1})
    through block l's slopes, i.e. the VJP of f_l's parameters with d_l.
    d_l is stored itself (z = c + d would lose small errors to float32 cancellation).

Energies and errors are per sample (no batch scaling); weight gradients are sums over the batch
times ``scale`` (1 / global batch size), so data-parallel ranks can simply add them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from cortexkit.tools.pcn.network import Network

METHODS = ("bp", "pc", "ipc", "meta-pcn")
SCHEDULES = ("jacobi", "sweep")
LOSSES = ("ce", "se")


@dataclass
class InferenceConfig:
    """T inference steps of SGD with momentum on the states (latents or error variables)."""

    steps: int = 8                 # T
    state_lr: float = 0.1          # eta_x
    momentum: float = 0.0          # SGD momentum on the states
    schedule: str = "jacobi"       # Meta-PCN only: jacobi | sweep
    loss: str = "ce"               # ce | se (output energy)

    def __post_init__(self):
        if self.steps < 0:
            raise ValueError(f"inference steps must be >= 0, got {self.steps}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule '{self.schedule}' (jacobi or sweep)")
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss '{self.loss}' (ce or se)")


@dataclass
class InferenceResult:
    """What inference leaves: per-layer weight gradients and energy traces.

    ``grads``: one tensor per parameter of ``net.parameters()`` (same order), already times
    ``scale``; ``loss``: summed output loss of the batch at the forward pass (what the model
    predicts, whatever inference did afterwards); ``logits``: the forward pass's (batch, classes);
    ``layer_energy``: (L,) mean over the batch of 1/2 ||error_l||^2 at the end of inference (the
    top entry is the output error); ``energy``: the objective inference minimised at its end,
    summed over the batch (PC: F with the output loss at z^(T); Meta-PCN: J, when asked for;
    backprop: the output loss, F at the forward point);
    ``trace``: (steps + 1, L) the same per step (recorded when asked); ``objective``:
    (steps + 1,) the energy minimised (F for PC, J for Meta-PCN) per step (recorded when asked).
    """

    grads: list[torch.Tensor]
    loss: torch.Tensor
    logits: torch.Tensor
    layer_energy: torch.Tensor
    trace: torch.Tensor | None = None
    objective: torch.Tensor | None = None
    errors: list[torch.Tensor] = field(default_factory=list)
    energy: torch.Tensor | None = None


def one_hot(y: torch.Tensor, classes: int, dtype) -> torch.Tensor:
    return F.one_hot(y, classes).to(dtype)


def output_loss(logits: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """Summed output loss over the batch: cross-entropy or 1/2 ||onehot - u||^2."""
    if loss == "ce":
        return F.cross_entropy(logits, y, reduction="sum")
    return 0.5 * (one_hot(y, logits.shape[1], logits.dtype) - logits).pow(2).sum()


def top_error(logits: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """d_L = -dloss/du_L per sample (batch, classes): y - softmax(u) or y - u."""
    target = one_hot(y, logits.shape[1], logits.dtype)
    if loss == "ce":
        return target - torch.softmax(logits, dim=1)
    return target - logits


def binomial_tail(steps: int, rate: float, k: int) -> float:
    """P(Binomial(steps, rate) >= k): the factor Jacobi Meta-PCN (momentum 0) puts on BP's error
    k layers below the top after ``steps`` steps."""
    if k <= 0:
        return 1.0
    if k > steps:
        return 0.0
    return float(sum(math.comb(steps, j) * rate ** j * (1 - rate) ** (steps - j)
                     for j in range(k, steps + 1)))


def _sgd(state: torch.Tensor, velocity: torch.Tensor | None, grad: torch.Tensor,
         cfg: InferenceConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """One SGD-with-momentum step as torch.optim.SGD takes it (v = mu v + g; s -= eta v)."""
    velocity = grad if velocity is None else cfg.momentum * velocity + grad
    return state - cfg.state_lr * velocity, velocity


def _energies(errors: list[torch.Tensor]) -> torch.Tensor:
    """(L,) mean over the batch of 1/2 ||e_l||^2."""
    return torch.stack([0.5 * e.detach().flatten(1).pow(2).sum(1).mean() for e in errors])


# ---------------------------------------------------------------------------------------------
# Meta-PCN

@dataclass
class ForwardPoint:
    """The frozen forward point: block inputs c_0..c_{L-1} (detached leaves) and outputs
    c_1..c_L with each block's autograd graph (its slopes and pooling switches)."""

    inputs: list[torch.Tensor]
    outputs: list[torch.Tensor]


def forward_point(net: Network, x: torch.Tensor) -> ForwardPoint:
    """Run the forward pass once, keeping every block's graph for later VJPs. ``x``: (batch, ...)."""
    inputs, outputs, a = [], [], x
    for block in net.blocks:
        inp = a.detach().requires_grad_(True)
        out = block(inp)
        inputs.append(inp)
        outputs.append(out)
        a = out
    return ForwardPoint(inputs, outputs)


def _feedback(point: ForwardPoint, d: list[torch.Tensor], layers: list[int],
              params: list[list[torch.Tensor]] | None = None):
    """g_l(d_{l+1}) for the hidden layers ``layers`` (0-based l), in one batched VJP. With
    ``params`` (one list per block), also the same VJP's parameter part for each block l + 1 (its
    weight gradient at d_{l+1}, unscaled), returned as a second list."""
    outs = [point.outputs[k + 1] for k in layers]
    ins = [point.inputs[k + 1] for k in layers]
    extra = [p for k in layers for p in params[k + 1]] if params is not None else []
    grads = torch.autograd.grad(outs, ins + extra, grad_outputs=[d[k + 1] for k in layers],
                                retain_graph=True, allow_unused=True)
    feedback = list(grads[:len(ins)])
    if params is None:
        return feedback
    rest, per_block = list(grads[len(ins):]), []
    for k in layers:
        per_block.append(rest[:len(params[k + 1])])
        rest = rest[len(params[k + 1]):]
    return feedback, per_block


def meta_inference(net: Network, x: torch.Tensor, y: torch.Tensor, cfg: InferenceConfig, *,
                   scale: float = 1.0, record: bool = False,
                   final_energy: bool = False) -> InferenceResult:
    """Meta-PCN inference and its local weight gradients. ``x``: (batch, C, H, W), ``y``: (batch,).
    ``final_energy``: also return J at the end (one more batched VJP)."""
    point = forward_point(net, x)
    logits = point.outputs[-1]
    L = len(point.outputs)
    hidden = list(range(L - 1))
    d = [torch.zeros_like(o, requires_grad=False) for o in point.outputs[:-1]]
    d.append(top_error(logits.detach(), y, cfg.loss))
    velocity: list[torch.Tensor | None] = [None] * (L - 1)
    trace, objective = [], []

    def residuals() -> list[torch.Tensor]:
        g = _feedback(point, d, hidden) if hidden else []
        return [d[k] - g[k] for k in hidden]

    # g_l depends on d_{l+1} only, so it is recomputed only when d_{l+1} changed since (a zero
    # d_{l+1} gives g_l = 0: nothing has reached layer l yet). With eta_x = 1 and no momentum
    # the step is d_l <- g_l exactly, so every layer is computed once its target settles and T
    # Jacobi steps cost about one backward pass. Skipping is exact: the same values either way.
    # In that copy mode every d_l is set once, from a settled target, so the VJP that carries
    # d_{l+1} down also yields block l+1's weight gradient at its final error: taking both in
    # one call saves the separate backward pass over the whole net at the end. Each such
    # gradient keeps the version of d_{l+1} it was taken at and is recomputed if that moved.
    copy = cfg.state_lr == 1.0 and cfg.momentum == 0.0
    version = [0] * (L - 1) + [1]          # bumps whenever d_l changes
    seen = [0] * (L - 1)                   # version of d_{l+1} that cache[l] was computed from
    cache: list[torch.Tensor | None] = [None] * (L - 1)
    block_params = [list(block.parameters()) for block in net.blocks]
    block_grads: dict[int, tuple[int, list]] = {}   # block -> (version of its d, grads)

    def refresh(layers: list[int]) -> list[int]:
        stale = [k for k in layers if version[k + 1] > 0 and seen[k] != version[k + 1]]
        if stale:
            if copy:
                feedback, per_block = _feedback(point, d, stale, block_params)
                for k, g in zip(stale, per_block):
                    block_grads[k + 1] = (version[k + 1], g)
            else:
                feedback = _feedback(point, d, stale)
            for k, g in zip(stale, feedback):
                cache[k], seen[k] = g, version[k + 1]
        return stale

    def update(k: int, fresh: bool) -> None:
        if cache[k] is None or (copy and not fresh):
            return  # unchanged: nothing arrived, or d_k already equals its settled target
        if copy:
            d[k] = cache[k]
        else:
            d[k], velocity[k] = _sgd(d[k], velocity[k], d[k] - cache[k], cfg)
        version[k] += 1

    for _ in range(cfg.steps):
        if record:
            trace.append(_energies(d))
            objective.append(_objective(residuals(), x.shape[0], x.dtype))
        if cfg.schedule == "jacobi":
            fresh = set(refresh(hidden))
            for k in hidden:
                update(k, k in fresh)
        else:
            for k in reversed(hidden):
                update(k, bool(refresh([k])))
    if record:
        trace.append(_energies(d))
        objective.append(_objective(residuals(), x.shape[0], x.dtype))
    energy = None
    if final_energy:  # before the weight gradients free the forward graph
        energy = _objective(residuals(), 1, x.dtype).detach()
    # weight gradients: -(VJP of block l's parameters with d_l) * scale, the ones not already
    # taken at the current d_l in one call
    missing = [l for l in range(L) if l not in block_grads or block_grads[l][0] != version[l]]
    if missing:
        flat = [p for l in missing for p in block_params[l]]
        found = torch.autograd.grad([point.outputs[l] for l in missing], flat,
                                    grad_outputs=[d[l] for l in missing], allow_unused=True)
        for l in missing:
            block_grads[l] = (version[l], list(found[:len(block_params[l])]))
            found = found[len(block_params[l]):]
    grads = [torch.zeros_like(p) if g is None else -scale * g
             for l in range(L) for p, g in zip(block_params[l], block_grads[l][1])]
    loss = output_loss(logits.detach(), y, cfg.loss)
    return InferenceResult(grads, loss, logits.detach(), _energies(d),
                           torch.stack(trace) if record else None,
                           torch.stack(objective) if record else None, [e.detach() for e in d],
                           energy)


def _objective(res: list[torch.Tensor], batch: int, dtype) -> torch.Tensor:
    return sum((0.5 * r.pow(2).sum() for r in res), torch.zeros((), dtype=dtype)) / batch


# ---------------------------------------------------------------------------------------------
# PC and iPC

def pc_energy(net: Network, x: torch.Tensor, z: list[torch.Tensor], y: torch.Tensor,
              loss: str) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """F(z) summed over the batch, the errors [e_1..e_{L-1}, d_L], the output loss and logits.

    ``z``: the L - 1 hidden latents (block output shapes)."""
    below = [x] + z
    preds = [block(a) for block, a in zip(net.blocks, below)]
    errors = [zl - p for zl, p in zip(z, preds[:-1])]
    out_loss = output_loss(preds[-1], y, loss)
    energy = sum((0.5 * e.pow(2).sum() for e in errors), torch.zeros((), dtype=x.dtype)) + out_loss
    errors.append(top_error(preds[-1].detach(), y, loss))
    return energy, errors, out_loss, preds[-1]


def pc_inference(net: Network, x: torch.Tensor, y: torch.Tensor, cfg: InferenceConfig, *,
                 scale: float = 1.0, record: bool = False, weight_step=None) -> InferenceResult:
    """PC inference (T steps of SGD-momentum on the latents from the forward pass) and the local
    weight gradients at z^(T). iPC: with ``weight_step`` the weights move at every inference step;
    ``weight_step(grads)`` gets the weight gradients at z^(t) (times ``scale``) before the states
    move, and the result's ``grads`` are those of the last step (already applied).
    ``loss`` and ``logits`` are the forward pass's, taken before any weight moved."""
    with torch.no_grad():
        acts = net.activities(x)
        z = [a.detach().clone() for a in acts[:-1]]
        forward_logits = acts[-1].detach()
        forward_loss = output_loss(forward_logits, y, cfg.loss)
    velocity: list[torch.Tensor | None] = [None] * len(z)
    params = list(net.parameters())
    trace, objective, pg = [], [], []

    def fill(grads):
        return [torch.zeros_like(p) if g is None else scale * g for p, g in zip(params, grads)]

    for _ in range(cfg.steps):
        z = [zl.detach().requires_grad_(True) for zl in z]
        energy, errors, _, _ = pc_energy(net, x, z, y, cfg.loss)
        if record:
            trace.append(_energies(errors))
            objective.append(energy.detach() / x.shape[0])
        if weight_step is not None:
            grads = torch.autograd.grad(energy, z + params, allow_unused=True)
            zg, pg = grads[:len(z)], fill(grads[len(z):])
            weight_step(pg)
        else:
            zg = torch.autograd.grad(energy, z) if z else ()
        with torch.no_grad():
            for k in range(len(z)):
                z[k], velocity[k] = _sgd(z[k].detach(), velocity[k], zg[k], cfg)
    z = [zl.detach() for zl in z]
    with torch.set_grad_enabled(weight_step is None):
        energy, errors, out_loss, logits = pc_energy(net, x, z, y, cfg.loss)
    if record:
        trace.append(_energies(errors))
        objective.append(energy.detach() / x.shape[0])
    if weight_step is None:
        pg = fill(torch.autograd.grad(energy, params, allow_unused=True))
    return InferenceResult(pg, forward_loss, forward_logits, _energies(errors),
                           torch.stack(trace) if record else None,
                           torch.stack(objective) if record else None,
                           [e.detach() for e in errors], energy.detach())


# ---------------------------------------------------------------------------------------------
# backprop

def bp_gradients(net: Network, x: torch.Tensor, y: torch.Tensor, loss: str = "ce", *,
                 scale: float = 1.0, errors: bool = False) -> InferenceResult:
    """Backprop gradients of the summed loss times ``scale`` (plain autograd through the net).
    With ``errors``, ``layer_energy`` holds 1/2 ||delta_l||^2 of backprop's errors
    delta_l = -dloss/dz_l per sample (what Meta-PCN's d_l converge to)."""
    acts, a = [], x
    for block in net.blocks:
        a = block(a)
        if errors:
            a.retain_grad()
        acts.append(a)
    logits = acts[-1]
    out_loss = output_loss(logits, y, loss)
    params = list(net.parameters())
    net.zero_grad(set_to_none=True)
    (scale * out_loss).backward()
    grads = [torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for p in params]
    net.zero_grad(set_to_none=True)
    deltas = [-a.grad.detach() / scale for a in acts] if errors else []
    energy = _energies(deltas) if errors else torch.zeros(len(acts), dtype=x.dtype)
    return InferenceResult(grads, out_loss.detach(), logits.detach(), energy, errors=deltas,
                           energy=out_loss.detach())


def imbalance(layer_energy: torch.Tensor) -> float | None:
    """log10(max / min) over the hidden layers of the mean error energy, or None where it is
    undefined (:func:`imbalance_and_reason` says why)."""
    return imbalance_and_reason(layer_energy)[0]


def imbalance_and_reason(layer_energy: torch.Tensor) -> tuple[float | None, str | None]:
    """(log10(max / min) over the hidden layers of the mean error energy, None) where defined;
    (None, why) without two hidden layers or when a hidden layer's energy is exactly 0 (no error
    reached it: the ratio has no value, neither 0 nor infinity)."""
    hidden = layer_energy[:-1].double()
    if hidden.numel() < 2:
        return None, "fewer than two hidden layers"
    zero = [l + 1 for l, e in enumerate(hidden.tolist()) if e <= 0]
    if len(zero) == hidden.numel():
        return None, "every hidden layer's error energy is exactly 0 (no inference steps ran)"
    if zero:
        names = ", ".join(map(str, zero[:6])) + (", ..." if len(zero) > 6 else "")
        return None, (f"the error energy of layer{'s' if len(zero) > 1 else ''} {names} is "
                      "exactly 0 (no error reached it)")
    return math.log10(float(hidden.max()) / float(hidden.min())), None
