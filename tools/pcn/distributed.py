"""Data parallelism through torch.distributed (launched by torchrun), and nothing else.

Every rank runs the same training with the same seed, takes ranks' shares of each global batch,
and adds its gradients (sums over its samples / global batch size) with one all-reduce before
each weight step, so the local learning rules stay local within a rank and the result matches
one process with the same global batch. Backend: gloo on CPU, nccl for CUDA tensors.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


def launched() -> bool:
    """True under torchrun (WORLD_SIZE > 1 in the environment)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def local_device(device: torch.device | None) -> torch.device | None:
    """This rank's device: under torchrun a CUDA device without an index becomes
    ``cuda:LOCAL_RANK``, so N ranks on one node use N GPUs instead of all sharing GPU 0
    (which NCCL refuses)."""
    if device is None or device.type != "cuda" or device.index is not None or not launched():
        return device
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))


def init(device: torch.device | None = None) -> None:
    """Join the process group torchrun describes (no-op for a single process). ``device``:
    this rank's device (see :func:`local_device`)."""
    if launched() and not dist.is_initialized():
        cuda = device is not None and device.type == "cuda"
        if cuda:
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if cuda else "gloo")


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def _backend_device() -> torch.device:
    """Where the group's collectives take tensors: the current GPU for NCCL, else the CPU."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def sum_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of ``tensor`` over ranks (a copy on the tensor's device; the tensor itself
    without a group). A CPU tensor (the epoch statistics) goes through the GPU under NCCL."""
    if not active():
        return tensor
    out = tensor.to(_backend_device(), copy=True)
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out.to(tensor.device)


def sum_gradients(grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """Per-parameter gradients summed over ranks, in one flat all-reduce."""
    if not active() or not grads:
        return grads
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    out, offset = [], 0
    for g in grads:
        out.append(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
    return out


@torch.no_grad()
def broadcast_parameters(module: torch.nn.Module) -> None:
    """Rank 0's parameters on every rank (they start equal by seeding; this makes it certain)."""
    if not active():
        return
    for p in module.parameters():
        dist.broadcast(p.data, src=0)


def barrier() -> None:
    if active():
        dist.barrier()


def shutdown() -> None:
    """Leave the process group together: a rank that tears down gloo while another is still writing
    its outputs can abort ("terminate called without an active exception", seen under load)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
