"""What every architecture shares: the :class:`Model` interface, weight
initialization, the dropout mask's definition, masked softmax cross-entropy
and Adam. float32 throughout. The layers: gcn.py, sage.py, gin.py, gat.py
(registry: archs.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import scipy.sparse as sp

from shgcn.core import costs

from .backend import BACKEND, Noise

if TYPE_CHECKING:
    from .graph import Graph


def dropout_mask(seed: int, epoch: int, layer: int, gids: np.ndarray, d: int, rate: float) -> np.ndarray:
    """(n, d) float32 inverted-dropout mask (0 or the scale) of rows with
    original ids ``gids``: what the trainer multiplies layer ``layer``'s
    input by (a pure function of seed, epoch, layer, id and column)."""
    ones = np.ones((len(gids), d), np.float32)
    out, _ = BACKEND.act_dropout(ones, "none", Noise(rate, seed, epoch), layer, np.asarray(gids, np.int64))
    return out


def as_input(x: np.ndarray, max_density: float = 0.1):
    """Features as CSR when they are sparse enough to gain from it."""
    x = np.asarray(x, dtype=np.float32)
    nnz = np.count_nonzero(x)
    return sp.csr_matrix(x) if nnz <= max_density * x.size else x


def glorot(rng: np.random.Generator, d_in: int, d_out: int) -> np.ndarray:
    limit = np.sqrt(6.0 / (d_in + d_out))
    return rng.uniform(-limit, limit, (d_in, d_out)).astype(np.float32)


def dense(h: Any) -> np.ndarray:
    """A dense float32 array of h (CSR first-layer inputs)."""
    return h.toarray() if sp.issparse(h) else h


class Model(Protocol):
    """What the training loop needs of an architecture (gcn.py, sage.py, gin.py, gat.py).

    ``params``: every trained array (float32, identical on every rank), the
    order of the gradients ``backward`` returns, of the optimizer's state and
    of the checkpoint; ``decay``: indices of the params under weight decay
    (the first layer's weights, as Kipf & Welling); ``heads``: per layer."""

    arch: str
    dims: list[int]
    heads: list[int]
    params: list[np.ndarray]
    decay: list[int]

    def w_first(self, k: int) -> bool: ...

    def forward(self, x: Any, graph: Graph, noise: Noise | None) -> tuple[np.ndarray, Any]: ...

    def backward(self, cache: Any, g: np.ndarray, graph: Graph) -> list[np.ndarray]: ...


class SingleHead:
    """What gcn, sage and gin share: the widths ``dims``, one head per layer,
    the backend, and W applied before the SpMM where it narrows the rows."""

    def __init__(self, dims: list[int], backend=BACKEND):
        self.dims = dims
        self.heads = [1] * (len(dims) - 1)
        self.be = backend

    def w_first(self, k: int) -> bool:
        """Multiply by W before the SpMM (see :mod:`shgcn.core.costs`)."""
        return costs.w_first(self.dims, k)


def masked_cross_entropy(logits: np.ndarray, labels: np.ndarray, mask: np.ndarray, total: int,
                         weights: np.ndarray | None = None) -> tuple[float, np.ndarray, int]:
    """Sum of -log softmax over masked rows (times ``weights`` per row, e.g.
    GraphSAINT's loss normalization), gradient of that sum over ``total``
    (the global count), and the number of correct masked rows."""
    idx = np.flatnonzero(mask)
    w = np.ones(idx.size, np.float64) if weights is None else np.asarray(weights, np.float64)[idx]
    return BACKEND.softmax_xent(logits, labels, idx, w, max(total, 1))


def correct_count(logits: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> int:
    idx = np.flatnonzero(mask)
    return int((logits[idx].argmax(1) == labels[idx]).sum())


class Adam:
    """Adam on a list of float32 arrays, updated in place."""

    def __init__(self, params: list[np.ndarray], lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, b1, b2, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: list[np.ndarray]) -> None:
        self.t += 1
        c1 = 1 - self.b1 ** self.t
        c2 = 1 - self.b2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            p -= (self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)).astype(np.float32)

    def state(self) -> dict[str, np.ndarray]:
        out = {"t": np.array(self.t)}
        for i, (m, v) in enumerate(zip(self.m, self.v)):
            out[f"m{i}"], out[f"v{i}"] = m, v
        return out

    def load(self, state) -> None:
        self.t = int(state["t"])
        for i in range(len(self.m)):
            self.m[i][...] = state[f"m{i}"]
            self.v[i][...] = state[f"v{i}"]
