"""What a model's architecture and layer widths imply for communication.

Shared by the trainer (which multiplies in this order) and by everything that
predicts the trainer's bytes from a store (report, tests, benchmarks).

Every layer aggregates rows of its input over the pattern of Â (one SpMM
forward). GCN, GraphSAGE and GIN are linear in the aggregated rows, so when
W narrows them (``dims[k+1] < dims[k]``) H W is formed first and the rows
that travel are ``dims[k+1]`` wide (MG-GCN's trick); otherwise the
aggregation comes first. Their backward is the same product with the
transposed operator: an *expand* of the gradient rows when Â's pattern is
symmetric, a *fold* (partial sums of received rows sent back to their
owners: what the expand received, reversed) when it is directed. The first
layer's backward needs no SpMM when it aggregates before its weight (the
features need no gradient).

GAT always multiplies first (the attention needs Z = H W: ``heads x
dims[k+1]`` wide), and its backward always folds: the gradient of a received
row of Z (through the aggregation and through its attention score) is a sum
over the receiver's rows, so it goes back to the owner, every layer, the
first included.
"""

from __future__ import annotations

import numpy as np

ARCHS = ("gcn", "sage", "gin", "gat")
WIRE_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}  # bytes per value on the wire

Call = tuple[int, bool]  # (row width, fold): one exchange of one SpMM


def w_first(dims: list[int], k: int) -> bool:
    """True when layer k of a GCN, GraphSAGE or GIN multiplies by its weight before the SpMM."""
    return dims[k + 1] < dims[k]


def layer_heads(arch: str, layers: int, heads: int = 1, out_heads: int = 1) -> list[int]:
    """Attention heads per layer: ``heads`` on hidden layers, ``out_heads`` on
    the last (GAT); 1 everywhere for the other architectures."""
    if arch != "gat":
        return [1] * layers
    return [heads] * (layers - 1) + [out_heads]


def in_widths(arch: str, dims: list[int], heads: list[int] | None = None) -> list[int]:
    """Input row width of every layer: ``dims[k]``, times the previous
    layer's heads for a GAT (hidden heads are concatenated)."""
    hs = heads or [1] * (len(dims) - 1)
    return [dims[0]] + [d * (hs[k] if arch == "gat" else 1) for k, d in enumerate(dims[1:-1])]


def exchanges(arch: str, dims: list[int], directed: bool, heads: list[int] | None = None
              ) -> tuple[list[Call], list[Call]]:
    """The exchanges of one training step: forward (one per layer, all
    expands), then backward, each as (row width, fold)."""
    if arch == "gat":
        hs = heads or [1] * (len(dims) - 1)
        widths = [h * d for h, d in zip(hs, dims[1:])]
        return [(w, False) for w in widths], [(w, True) for w in widths]
    wf = [w_first(dims, k) for k in range(len(dims) - 1)]
    fwd, bwd = spmm_widths(dims, wf)
    return [(w, False) for w in fwd], [(w, directed) for w in bwd]


def spmm_widths(dims: list[int], w_first: list[bool]) -> tuple[list[int], list[int]]:
    """Row widths of the SpMMs of one GCN (GraphSAGE, GIN) training step:
    forward (one per layer), then backward (one per layer, except the first
    layer's when it multiplies by W after the SpMM: the features need no
    gradient)."""
    fwd = [dims[k + 1] if wf else dims[k] for k, wf in enumerate(w_first)]
    bwd = [dims[k + 1] if wf else dims[k] for k, wf in enumerate(w_first) if wf or k > 0]
    return fwd, bwd


def split_calls(calls: list[Call]) -> tuple[int, int, int, int]:
    """(summed width of the expands, their count, summed width of the folds, their count)."""
    ex = [w for w, fold in calls if not fold]
    fo = [w for w, fold in calls if fold]
    return sum(ex), len(ex), sum(fo), len(fo)


def step_bytes(send_rows, recv_rows, dims: list[int], w_firsts: list[bool], directed: bool, itemsize: int = 4,
               arch: str = "gcn", heads: list[int] | None = None):
    """Bytes a rank sends in one training step (forward and backward) given
    the rows it sends and receives per SpMM: an expand sends ``send_rows``
    rows, a fold sends back the ``recv_rows`` it received. ``w_firsts`` is
    what the trainer logged (it must agree with :func:`w_first`)."""
    fwd, bwd = exchanges(arch, dims, directed, heads)
    ex_w, _, fo_w, _ = split_calls(fwd + bwd)
    return itemsize * (send_rows * ex_w + recv_rows * fo_w)


def call_bytes(send_rows, recv_rows, arch: str, dims: list[int], directed: bool, heads: list[int] | None = None,
               itemsize: int = 4):
    """(calls, P) bytes each rank sends in each exchange of one training step
    (forward layers, then backward), in the trainer's order: an expand sends
    ``send_rows`` rows of its width, a fold sends back the ``recv_rows``."""
    fwd, bwd = exchanges(arch, dims, directed, heads)
    send, recv = np.asarray(send_rows, np.int64), np.asarray(recv_rows, np.int64)
    return np.stack([itemsize * w * (recv if fold else send) for w, fold in fwd + list(reversed(bwd))])


def work_terms(dims: list[int]) -> tuple[int, int, int]:
    """What one row of a rank costs in one GCN training step, by kind:
    (SpMM columns per nonzero, forward and backward; dense multiply-adds per
    row: X W forward, Gᵀ X and G Wᵀ backward, the latter not for the first
    layer; elementwise columns per row: dropout on layer inputs, activation
    and its gradient on outputs). The regressors of the epoch model
    (:mod:`shgcn.core.epoch`)."""
    fwd, bwd = spmm_widths(dims, [w_first(dims, k) for k in range(len(dims) - 1)])
    flops = sum(a * b * (2 if k == 0 else 3) for k, (a, b) in enumerate(zip(dims[:-1], dims[1:])))
    elem = sum(dims[:-1]) + 2 * sum(dims[1:])
    return sum(fwd) + sum(bwd), flops, elem
