"""The whole graph's loss and accuracy from every rank's rows, and the
gradients summed over ranks, so that P processes train exactly what one
process trains on the whole graph.

Each rank's loss is its rows' share of the global mean (the sum over its
masked rows divided by the masked rows of all ranks), so the gradients of the
ranks' losses add up to the gradient of the global loss:
:func:`sync_gradients` sums them (one allreduce over a flat buffer).
(``DistributedDataParallel`` averages instead of summing: with it, multiply the
loss by the world size.)
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .block import TorchBlock


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def global_sum(values: torch.Tensor) -> torch.Tensor:
    """``values`` summed over the ranks (a copy; float64 keeps the counts exact)."""
    out = values.detach().to(torch.float64).clone()
    if _distributed():
        dist.all_reduce(out)
    return out


def masked_loss(logits: torch.Tensor, block: TorchBlock, mask: torch.Tensor) -> torch.Tensor:
    """This rank's share of the mean loss over every rank's ``mask`` rows: softmax cross-entropy (single
    label) or binary cross-entropy summed over the classes (multi-label). ``logits`` (n_own, C)."""
    total = float(global_sum(mask.sum().reshape(1))[0])
    if block.multilabel:
        per_row = F.binary_cross_entropy_with_logits(logits[mask], block.y[mask], reduction="none").sum(1)
        return per_row.sum() / max(total, 1.0)
    return F.cross_entropy(logits[mask], block.y[mask], reduction="sum") / max(total, 1.0)


def accuracy(logits: torch.Tensor, block: TorchBlock, mask: torch.Tensor) -> float:
    """The accuracy over every rank's ``mask`` rows (multi-label: every class right)."""
    with torch.no_grad():
        if block.multilabel:
            right = ((logits[mask] > 0) == (block.y[mask] > 0.5)).all(1).sum()
        else:
            right = (logits[mask].argmax(1) == block.y[mask]).sum()
        counts = global_sum(torch.stack([right, mask.sum()]))
    return float(counts[0] / counts[1]) if counts[1] > 0 else float("nan")


def sync_gradients(params: Iterable[torch.nn.Parameter]) -> None:
    """Sum every parameter's gradient over the ranks, in place (one allreduce over a flat buffer)."""
    params = [p for p in params if p.requires_grad]
    if not _distributed() or not params:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    start = 0
    for p, g in zip(params, grads):
        p.grad = flat[start:start + g.numel()].view_as(g).clone()
        start += g.numel()
