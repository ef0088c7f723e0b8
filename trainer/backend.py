"""The local kernels every layer computes with, behind one small interface.

A layer never calls scipy, BLAS or numba itself: it calls the rank's
:class:`Backend` for sparse-dense products (``spmm``), dense products
(``gemm``), dropout fused with the activation, the activation gradients and
GAT's attention kernels. The exchange (:mod:`.exchange`) moves host arrays
only: a device backend hands it rows with ``to_host`` and takes received rows
back with ``from_host``, so a CuPy or torch backend is one new class here
(cuSPARSE SpMM, cuBLAS GEMM, elementwise kernels) without touching the
exchange, the plans or the layers.

:class:`CPU` is numpy / scipy / numba, float32 end to end, one thread per
rank (the BLAS threads are set before numpy loads: :func:`.cli.share_cores`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from . import kernels

ACTS = {"none": 0, "relu": 1, "elu": 2}
_EMPTY_KEEP = np.zeros((0, 0), np.uint8)


@dataclass(frozen=True)
class Noise:
    """What a training step's random masks are keyed by: ``rate`` (feature
    dropout) and ``attn_rate`` (GAT's attention dropout), the ``seed`` and the
    ``epoch`` key (the batch number in mini-batch mode). ``None`` in place of
    a Noise: evaluation, no dropout."""

    rate: float
    seed: int
    epoch: int
    attn_rate: float = 0.0

    def threshold(self, rate: float) -> int:
        """The 16-bit draw below which a unit is dropped (0: none)."""
        return min(int(round(rate * 65536)), 65535)

    def scale(self, rate: float) -> float:
        """1 / P(keep), exactly for the quantized rate."""
        t = self.threshold(rate)
        return 65536.0 / (65536 - t)

    def key(self) -> np.ndarray:
        s = int(self.seed) & (2**64 - 1)
        return np.array([s & 0xFFFFFFFF, s >> 32], np.uint64)

    def ctr(self, layer: int, stream: int) -> np.ndarray:
        return np.array([self.epoch & 0xFFFFFFFF, (layer & 0xFF) | (stream << 8)], np.uint64)


class Dropped(NamedTuple):
    """A first-layer input whose dropout is already applied (made ahead of
    its step, while the previous step's allreduce completes)."""

    x: Any


class CPU:
    """The numpy / scipy / numba backend."""

    name = "cpu"

    # --------------------------------------------------------- products
    @staticmethod
    def spmm(m: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
        """(n, k) sparse times (k, d) dense: (n, d) float32."""
        return np.asarray(m @ x, dtype=np.float32)

    @staticmethod
    def gemm(a: Any, b: np.ndarray) -> np.ndarray:
        """Dense (or CSR, first layer) times dense: float32."""
        return np.asarray(a @ b, dtype=np.float32)

    @staticmethod
    def gemm_tn(a: Any, b: np.ndarray) -> np.ndarray:
        """aᵀ b (weight gradients), float32."""
        return np.asarray(a.T @ b, dtype=np.float32)

    # --------------------------------------------------------- elementwise
    @staticmethod
    def act_dropout(h: Any, act: str, noise: Noise | None, layer: int, gids: np.ndarray,
                    keep: bool = False) -> tuple[Any, np.ndarray | None]:
        """``dropout(act(h))`` in one pass, and the keep mask (uint8) when
        ``keep`` (the ELU gradient needs it; ReLU's does not). A CSR ``h``
        (sparse features, no activation) keeps its pattern; a :class:`Dropped`
        input is returned as it is."""
        if isinstance(h, Dropped):
            return h.x, None
        rate = noise.rate if noise is not None else 0.0
        if sp.issparse(h):
            if noise is None or rate == 0:
                return h, None
            out = kernels.dropout_sparse(h.data, h.indices, h.indptr, gids, noise.key(), noise.ctr(layer, kernels.NODE),
                                         np.uint64(noise.threshold(rate)), noise.scale(rate), np.empty_like(h.data))
            return sp.csr_matrix((out, h.indices, h.indptr), shape=h.shape), None
        if rate == 0 and act == "none":
            return h, None
        h = np.ascontiguousarray(h, dtype=np.float32)
        if act == "elu":  # numpy's vectorized expm1; the kernel then only drops
            h = np.maximum(h, 0) + np.expm1(np.minimum(h, 0))
            act = "none"
        mask = np.empty(h.shape, np.uint8) if keep and rate > 0 else _EMPTY_KEEP
        key = noise.key() if noise is not None else np.zeros(2, np.uint64)
        ctr = noise.ctr(layer, kernels.NODE) if noise is not None else np.zeros(2, np.uint64)
        t = noise.threshold(rate) if noise is not None else 0
        out = kernels.dropout_dense(h, gids, key, ctr, np.uint64(t), noise.scale(rate) if noise else 1.0,
                                    ACTS[act], np.empty_like(h), mask)
        return out, (mask if mask.size else None)

    @staticmethod
    def act_dropout_grad(g: np.ndarray, hd: np.ndarray, act: str, noise: Noise | None,
                         keep: np.ndarray | None) -> np.ndarray:
        """The gradient through :meth:`act_dropout` (``hd`` its output), in place."""
        scale = noise.scale(noise.rate) if noise is not None else 1.0
        g = np.ascontiguousarray(g, dtype=np.float32)
        if act == "relu":
            return kernels.relu_dropout_grad(g, hd, scale)
        if act == "elu":
            return kernels.elu_dropout_grad(g, hd, keep if keep is not None else _EMPTY_KEEP, scale)
        if keep is not None:
            return g * keep * np.float32(scale)
        return g * np.float32(scale) if scale != 1.0 else g

    @staticmethod
    def softmax_xent(logits: np.ndarray, labels: np.ndarray, idx: np.ndarray, w: np.ndarray, total: int
                     ) -> tuple[float, np.ndarray, int]:
        """Masked softmax cross-entropy of rows ``idx`` (weights ``w``): the
        loss sum, its gradient over ``total`` (zero outside idx), correct rows."""
        g = np.zeros(logits.shape, np.float32)
        loss, correct = kernels.softmax_xent(np.ascontiguousarray(logits, np.float32), np.asarray(labels, np.int64),
                                             idx, w, 1.0 / total, g)
        return float(loss), g, int(correct)

    # --------------------------------------------------------- attention
    @staticmethod
    def gat_forward(rows, csr: sp.csr_matrix, z, s_src, s_dst, slope, rgid, cgid, noise: Noise | None, layer: int,
                    alpha, alpha_d, out) -> None:
        """GAT's aggregation of ``rows`` (see :func:`.kernels.gat_forward`)."""
        rate = noise.attn_rate if noise is not None else 0.0
        key = noise.key() if noise is not None else np.zeros(2, np.uint64)
        ctr = noise.ctr(layer, kernels.ATTENTION) if noise is not None else np.zeros(2, np.uint64)
        t = noise.threshold(rate) if noise is not None else 0
        scale = noise.scale(rate) if noise is not None else 1.0
        kernels.gat_forward(rows, csr.indptr, csr.indices, z, s_src, s_dst, np.float32(slope), rgid, cgid, key, ctr,
                            np.uint64(t), scale, alpha, alpha_d, out)

    @staticmethod
    def gat_backward(csr: sp.csr_matrix, z, g, s_src, s_dst, slope, alpha, alpha_d):
        """(dz (m, H*d), ds_src (m, H), ds_dst (n, H)) of :meth:`gat_forward`."""
        dz = np.zeros_like(z)
        ds_src = np.zeros_like(s_src)
        ds_dst = np.zeros_like(s_dst)
        kernels.gat_backward(csr.indptr, csr.indices, z, np.ascontiguousarray(g), s_src, s_dst, np.float32(slope),
                             alpha, alpha_d, dz, ds_src, ds_dst)
        return dz, ds_src, ds_dst

    # --------------------------------------------------------- host transfers
    @staticmethod
    def to_host(x: np.ndarray) -> np.ndarray:
        """Rows for the exchange (a device backend copies into pinned memory)."""
        return x

    @staticmethod
    def from_host(x: np.ndarray) -> np.ndarray:
        return x


BACKEND = CPU()
