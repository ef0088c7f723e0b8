"""The GCN of Kipf & Welling with explicit forward and backward passes over a
rank's own rows (the paper's equations 1-5), masked softmax cross-entropy,
counter-based dropout, and Adam. float32 throughout.

Layer k computes Z^k = Â H^{k-1} W^k and H^k = ReLU(Z^k) (no activation on
the last layer). When W^k narrows the rows (d_out < d_in) H W is formed
first, so the rows that travel in the SpMM are d_out wide (MG-GCN's trick).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from shgcn.store import costs


def _hash32(x: np.ndarray) -> np.ndarray:
    """In-place 32-bit integer mix (Wellons' lowbias32) of a uint32 array."""
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def _keep_scale(seed: int, epoch: int, layer: int, gids: np.ndarray, cols: np.ndarray, rate: float) -> np.ndarray:
    """0 or 1/(1-rate) for each (gid, col) pair (arrays broadcast together).

    The value is a hash of (seed, epoch, layer, gid, col) only, so every
    vertex gets the same mask whichever rank owns it, for any P, and the
    sparse and dense paths agree entry by entry.
    """
    key = _hash32(np.array([seed * 0x9E3779B1 + epoch * 0x85EBCA77 + layer * 0xC2B2AE3D], dtype=np.uint64)
                  .astype(np.uint32))[0]
    row = _hash32(gids.astype(np.uint32) ^ key)  # per-vertex stream
    cell = cols.astype(np.uint32) * np.uint32(0x9E3779B1) + row
    _hash32(cell)
    keep = cell >= np.uint32(min(int(rate * 2**32), 2**32 - 1))
    return keep * np.float32(1.0 / (1.0 - rate))


def dropout_mask(seed: int, epoch: int, layer: int, gids: np.ndarray, d: int, rate: float) -> np.ndarray:
    """(n, d) float32 inverted-dropout mask for rows with global ids ``gids``."""
    return _keep_scale(seed, epoch, layer, gids[:, None], np.arange(d, dtype=np.uint32)[None, :], rate)


def sparse_dropout(x: sp.csr_matrix, seed: int, epoch: int, layer: int, gids: np.ndarray, rate: float) -> sp.csr_matrix:
    """Dropout of a sparse matrix, hashing only its nonzeros (equal to
    ``x * dropout_mask(...)``)."""
    rows = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
    vals = x.data * _keep_scale(seed, epoch, layer, gids[rows], x.indices, rate)
    return sp.csr_matrix((vals.astype(np.float32), x.indices, x.indptr), shape=x.shape)


def as_input(x: np.ndarray, max_density: float = 0.1):
    """Features as CSR when they are sparse enough to gain from it."""
    x = np.asarray(x, dtype=np.float32)
    nnz = np.count_nonzero(x)
    return sp.csr_matrix(x) if nnz <= max_density * x.size else x


def glorot(rng: np.random.Generator, d_in: int, d_out: int) -> np.ndarray:
    limit = np.sqrt(6.0 / (d_in + d_out))
    return rng.uniform(-limit, limit, (d_in, d_out)).astype(np.float32)


class Propagator(Protocol):
    """What the model needs from the graph: Â X and Â^T G on own rows."""

    def forward(self, x: np.ndarray) -> np.ndarray: ...

    def transpose(self, g: np.ndarray) -> np.ndarray: ...


@dataclass
class Cache:
    inputs: list = field(default_factory=list)   # per layer: H (w_first) or Â H (a_first)
    masks: list = field(default_factory=list)    # per layer: dropout mask or None
    pre: list = field(default_factory=list)      # per layer: Z (for ReLU')


class GCN:
    """Weights ``ws[k]`` of shape (dims[k], dims[k+1]), identical on every rank."""

    def __init__(self, dims: list[int], seed: int):
        rng = np.random.default_rng([seed, 0x6C])
        self.dims = dims
        self.ws = [glorot(rng, a, b) for a, b in zip(dims[:-1], dims[1:])]

    def w_first(self, k: int) -> bool:
        """Multiply by W before the SpMM (see :mod:`shgcn.store.costs`)."""
        return costs.w_first(self.dims, k)

    def forward(self, x: np.ndarray, prop: Propagator, *, dropout: float = 0.0, seed: int = 0, epoch: int = 0,
                gids: np.ndarray | None = None) -> tuple[np.ndarray, Cache]:
        """Logits (n_own, classes) and what backward needs."""
        cache = Cache()
        h: Any = x  # dense, or CSR for sparse features (first layer only)
        if gids is None:
            gids = np.arange(x.shape[0], dtype=np.int64)
        for k, w in enumerate(self.ws):
            mask = None
            if dropout > 0 and sp.issparse(h):
                h = sparse_dropout(h, seed, epoch, k, gids, dropout)
            elif dropout > 0:
                mask = dropout_mask(seed, epoch, k, gids, h.shape[1], dropout)
                h = h * mask
            if self.w_first(k):
                cache.inputs.append(h)
                z = prop.forward(np.asarray(h @ w, dtype=np.float32))
            else:
                ah = prop.forward(h.toarray() if sp.issparse(h) else h)
                cache.inputs.append(ah)
                z = ah @ w
            cache.masks.append(mask)
            cache.pre.append(z)
            h = np.maximum(z, 0) if k < len(self.ws) - 1 else z
        return h, cache

    def backward(self, cache: Cache, g: np.ndarray, prop: Propagator) -> list[np.ndarray]:
        """Local weight gradients (before the allreduce) from G = dL/dlogits."""
        grads: list[np.ndarray] = [None] * len(self.ws)  # type: ignore[list-item]
        for k in range(len(self.ws) - 1, -1, -1):
            w = self.ws[k]
            need_dh = k > 0  # the features need no gradient
            if self.w_first(k):
                dm = prop.transpose(g)
                grads[k] = np.asarray(cache.inputs[k].T @ dm, dtype=np.float32)
                dh = dm @ w.T if need_dh else None
            else:
                grads[k] = cache.inputs[k].T @ g
                dh = prop.transpose(g @ w.T) if need_dh else None
            if dh is None:
                break
            if cache.masks[k] is not None:
                dh = dh * cache.masks[k]
            g = dh * (cache.pre[k - 1] > 0)
        return grads


def masked_cross_entropy(logits: np.ndarray, labels: np.ndarray, mask: np.ndarray, total: int,
                         weights: np.ndarray | None = None) -> tuple[float, np.ndarray, int]:
    """Sum of -log softmax over masked rows (times ``weights`` per row, e.g.
    GraphSAINT's loss normalization), gradient of that sum over ``total``
    (the global count), and the number of correct masked rows."""
    z = logits - logits.max(1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(1, keepdims=True)
    idx = np.flatnonzero(mask)
    y = labels[idx]
    w = np.ones(idx.size) if weights is None else np.asarray(weights, np.float64)[idx]
    loss = float((-np.log(np.maximum(p[idx, y], 1e-30)) * w).sum())
    g = np.zeros_like(logits)
    g[idx] = p[idx]
    g[idx, y] -= 1
    g[idx] *= w[:, None]
    g /= max(total, 1)
    correct = int((logits[idx].argmax(1) == y).sum())
    return loss, g.astype(np.float32), correct


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
