"""What a GCN's layer widths imply for communication.

Shared by the trainer (which multiplies in this order) and by everything that
predicts the trainer's bytes from a store (report, tests, benchmarks).

Layer k computes Â H W. When W narrows the rows (``dims[k+1] < dims[k]``),
H W is formed first so that the rows that travel are ``dims[k+1]`` wide
(MG-GCN's trick); otherwise Â H is formed first.
"""

from __future__ import annotations


def w_first(dims: list[int], k: int) -> bool:
    """True when layer k multiplies by its weight before the SpMM."""
    return dims[k + 1] < dims[k]


def spmm_widths(dims: list[int], w_first: list[bool]) -> tuple[list[int], list[int]]:
    """Row widths of the SpMMs of one training step: forward (one per layer),
    then backward (one per layer, except the first layer's when it multiplies
    by W after the SpMM: the features need no gradient)."""
    fwd = [dims[k + 1] if wf else dims[k] for k, wf in enumerate(w_first)]
    bwd = [dims[k + 1] if wf else dims[k] for k, wf in enumerate(w_first) if wf or k > 0]
    return fwd, bwd


def step_bytes(send_rows, recv_rows, dims: list[int], w_firsts: list[bool], directed: bool, itemsize: int = 4):
    """Bytes a rank sends in one training step (forward and backward) given
    the rows it sends and receives per SpMM. For a symmetric Â the backward
    is the same expand; for a directed Â it folds the received rows back."""
    fwd, bwd = spmm_widths(dims, w_firsts)
    return itemsize * (send_rows * sum(fwd) + (recv_rows if directed else send_rows) * sum(bwd))


def work_terms(dims: list[int]) -> tuple[int, int, int]:
    """What one row of a rank costs in one training step, by kind:
    (SpMM columns per nonzero, forward and backward; dense multiply-adds per
    row: X W forward, Gᵀ X and G Wᵀ backward, the latter not for the first
    layer; elementwise columns per row: dropout on layer inputs, activation
    and its gradient on outputs). The regressors of the epoch model
    (:mod:`shgcn.store.epoch`)."""
    fwd, bwd = spmm_widths(dims, [w_first(dims, k) for k in range(len(dims) - 1)])
    flops = sum(a * b * (2 if k == 0 else 3) for k, (a, b) in enumerate(zip(dims[:-1], dims[1:])))
    elem = sum(dims[:-1]) + 2 * sum(dims[1:])
    return sum(fwd) + sum(bwd), flops, elem
