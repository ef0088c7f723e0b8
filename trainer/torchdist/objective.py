"""The whole graph's loss and accuracy from every rank's rows, and the
gradients summed over ranks, so that P processes train exactly what one
process trains on the whole graph.

Each rank's loss is its rows' share of the global mean (the sum over its
masked rows divided by the masked rows of all ranks), so the gradients of the
ranks' losses add up to the gradient of the global loss:
:func:`sync_gradients` sums them (one allreduce over a flat buffer).
(``DistributedDataParallel`` averages instead of summing: with it, multiply the
loss by the world size.)

Everything is computed on the logits' (or the parameters') device: the
block's labels and the mask are taken there (a copy only when they are on
another device). A GPU's sums cross gloo or MPI through host memory; a CPU's
cross a group that has no backend for the CPU (an NCCL-only group of the
user's own) through the current GPU.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .block import TorchBlock
from .launch import device_backend, stages_through_host


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _all_reduce(t: torch.Tensor) -> None:
    """Sum ``t`` over the ranks in place, on whatever device it is: through host memory where the group's
    backend does not take the device's tensors (a GPU over gloo), through the current GPU where it has no
    backend for the CPU (NCCL alone)."""
    if stages_through_host(t.device):
        host = t.cpu()
        dist.all_reduce(host)
        t.copy_(host)
    elif t.device.type == "cpu" and device_backend(t.device) is None and torch.cuda.is_available():
        on_gpu = t.to(torch.device("cuda", torch.cuda.current_device()))
        dist.all_reduce(on_gpu)
        t.copy_(on_gpu)
    else:
        dist.all_reduce(t)


def global_sum(values: torch.Tensor, ranks: bool = True) -> torch.Tensor:
    """``values`` summed over the ranks (a copy on ``values``' device; float64 keeps the counts exact);
    ``ranks=False``: the copy alone (a block that holds the whole graph, evaluated by one rank of a job)."""
    out = values.detach().to(torch.float64).clone()
    if ranks and _distributed():
        _all_reduce(out)
    return out


def _over_ranks(block: TorchBlock) -> bool:
    """Whether ``block``'s rows are one rank's share (its plan spans several ranks): its sums are over the
    ranks. A one-rank block (the whole graph, :func:`~.graph.whole_block`) is summed where it is, so one rank
    of a job can evaluate it alone. A block-like object without a plan: over the ranks."""
    plan = getattr(block, "plan", None)
    return plan is None or plan.size > 1


def _on(logits: torch.Tensor, block: TorchBlock, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The block's labels and ``mask`` on the logits' device."""
    return block.y.to(logits.device), mask.to(logits.device)


def masked_loss(logits: torch.Tensor, block: TorchBlock, mask: torch.Tensor) -> torch.Tensor:
    """This rank's share of the mean loss over every rank's ``mask`` rows: softmax cross-entropy (single
    label) or binary cross-entropy summed over the classes (multi-label). ``logits`` (n_own, C); the loss is
    on their device. A one-rank block (the whole graph) gives its own mean, whatever the job's size."""
    y, mask = _on(logits, block, mask)
    total = float(global_sum(mask.sum().reshape(1), _over_ranks(block))[0])
    if block.multilabel:
        per_row = F.binary_cross_entropy_with_logits(logits[mask], y[mask], reduction="none").sum(1)
        return per_row.sum() / max(total, 1.0)
    return F.cross_entropy(logits[mask], y[mask], reduction="sum") / max(total, 1.0)


def accuracy(logits: torch.Tensor, block: TorchBlock, mask: torch.Tensor) -> float:
    """The accuracy over every rank's ``mask`` rows (multi-label: every class right)."""
    y, mask = _on(logits, block, mask)
    with torch.no_grad():
        if block.multilabel:
            right = ((logits[mask] > 0) == (y[mask] > 0.5)).all(1).sum()
        else:
            right = (logits[mask].argmax(1) == y[mask]).sum()
        counts = global_sum(torch.stack([right, mask.sum()]), _over_ranks(block))
    return float(counts[0] / counts[1]) if counts[1] > 0 else float("nan")


def sync_gradients(params: Iterable[torch.nn.Parameter]) -> None:
    """Sum every parameter's gradient over the ranks, in place (one allreduce over a flat buffer)."""
    params = [p for p in params if p.requires_grad]
    if not _distributed() or not params:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    _all_reduce(flat)
    start = 0
    for p, g in zip(params, grads):
        p.grad = flat[start:start + g.numel()].view_as(g).clone()
        start += g.numel()
