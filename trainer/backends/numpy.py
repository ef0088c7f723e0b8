"""The numpy / scipy / numba backend (:class:`NumpyBackend`): float32 end
to end; the fused kernels are numba's (:mod:`.kernels`), and so is the layers' elementwise work between the
products (:mod:`.arrays`).

Threads (``--threads T``): the BLAS threads are set before numpy loads
(:func:`shgcn.trainer.cli.share_cores`); with T > 1 the SpMM and the
per-row elementwise kernels run over T numba threads (:mod:`.parallel`),
with results equal to the serial ones bit for bit. The dense products run
in fixed blocks whose bounds depend on the shapes only, at every T (T = 1
runs them in a loop), each one call of numpy's sgemm from a numba kernel
(:mod:`.blas`): T only decides which thread runs which block, so the bits do
not depend on T, whichever BLAS kernel the machine picks. With T = 1 the
SpMM is scipy's and every kernel serial."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import blas, kernels
from .arrays import _PARALLEL_MIN, HostArrays
from .base import NUMPY, AdamState, Attention, Dropped, Noise, timed_on_host

ACT_CODES = {"none": 0, "relu": 1, "elu": 2}
_EMPTY_KEEP = np.zeros((0, 0), np.uint8)
_SPLIT_MIN = 1 << 20  # multiply-adds below which a dense product is one BLAS call at every T (a hand-off ~50 µs)
# The dense products' fixed blocks (:meth:`NumpyBackend.gemm`, :meth:`NumpyBackend.gemm_tn`). The bits of a block
# of a product depend on the block's shape: OpenBLAS picks its kernels by shape, and with OPENBLAS_CORETYPE=Haswell
# (numpy 2.4, OpenBLAS 0.3.31) a row of ``a[lo:hi] @ b`` differs from the same row of ``a @ b`` (a third of them,
# by ~1e-5) by its place in the block. So the blocks are cut by the shapes alone, never by T, and every T runs
# the same blocks: T = 1 in a loop, T > 1 in T contiguous groups of blocks, one per thread.
# Sizes, measured with one BLAS thread (min of 15 interleaved runs, 2-core AVX-512 machine, SkylakeX and Haswell
# kernels), against the whole call:
# - gemm (a @ b): 512 rows of a per block; at 40,000 rows 79 blocks (5 a thread at T = 16, 1% imbalance; 1024
#   rows: 40 blocks, 3 on some threads, 2 on others). The blocks cost 0-5% over the whole call at T = 1
#   (40,000 x {32 @ 32 x 256, 256 @ 256 x 16, 128 @ 128 x 128, 602 @ 602 x 128}); 256 rows 2-10%.
_GEMM_ROWS = 512
# - gemm_tn (aᵀ b, the weight gradients: a (n, m), b (n, d), the result (m, d) small) by the inner dimension n:
#   1024 rows of a and b per block, each block's (m, d) product its own, summed into the result in block order
#   (the same sums for every T). The result's rows (m: 16-602) are too few to cut: blocks of 16 result rows ran
#   1.4-2.3x the whole call at T = 1 (each call packs all of b again), of 64 rows up to 1.35x and 4 blocks at
#   m = 256; 1024-row blocks of n cost 1-5% (2048: 1-3%, but 20 blocks at n = 40,000 for 16 threads).
_TN_ROWS = 1024
_TN_MAX_BLOCKS = 64  # at most this many (m, d) partial products: beyond 64 x 1024 rows, blocks of multiples of 1024


def _blockable(a: Any, b: Any, inner: int) -> bool:
    """A float32 dense product big enough to run in blocks (``a``'s dimension ``inner`` matching b's rows):
    a matter of the operands' types and shapes only, never of T."""
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.ndim == 2 and b.ndim == 2
            and a.dtype == np.float32 and b.dtype == np.float32 and a.shape[inner] == b.shape[0]
            and a.shape[0] * a.shape[1] * b.shape[1] >= _SPLIT_MIN)


def _blas_operands(a: np.ndarray, b: np.ndarray, first: Callable) -> tuple[int, int, int, int] | None:
    """(flag, leading dimension) of ``first(a)`` and of b for :mod:`.blas`'s kernels; None when its sgemm is not
    in reach or a layout is not BLAS's (then the blocks run on Python threads)."""
    oa, ob = (first(a), blas.operand(b)) if blas.AVAILABLE else (None, None)
    return None if oa is None or ob is None else (*oa, *ob)


def _tn_block(a: np.ndarray, b: np.ndarray, blocks: list[tuple[int, int]], out: np.ndarray, parts: np.ndarray,
              i: int) -> None:
    """Block i of aᵀ b through numpy: into ``out`` (block 0) or ``parts[i - 1]``."""
    np.matmul(a[slice(*blocks[i])].T, b[slice(*blocks[i])], out=parts[i - 1] if i else out)


def dense_blocks(rows: int, size: int) -> list[tuple[int, int]]:
    """The blocks ``(lo, hi)`` of ``size`` rows (the last one shorter) covering rows 0..rows: the dense
    products' fixed blocks, a function of the shape alone."""
    return [(lo, min(lo + size, rows)) for lo in range(0, rows, size)]


def tn_rows(n: int) -> int:
    """Rows of a (and b) per block of ``aᵀ b`` for a of n rows: ``_TN_ROWS``, or the least multiple of it that
    makes at most ``_TN_MAX_BLOCKS`` blocks (the partial products' memory)."""
    return _TN_ROWS * max(1, -(-n // (_TN_ROWS * _TN_MAX_BLOCKS)))


class NumpyBackend(HostArrays):
    """The CPU backend: numpy, scipy.sparse and numba kernels (the array functions: :class:`.arrays.HostArrays`)."""

    name = NUMPY.name

    def __init__(self, threads: int = 1):
        self.threads = max(1, int(threads))
        self.kernel_time: dict[str, float] = {}  # s per kernel since the last take_kernel_time()
        # the SpMM's row chunks of every operator, computed once: id -> (the matrix, weakly; its indptr; bounds);
        # an entry leaves with its matrix (mini-batch views make new matrices every step)
        self._bounds: dict[tuple[int, str], tuple[weakref.ref, np.ndarray, Any]] = {}
        self.threading_layer: str | None = None  # numba's, once its parallel kernels ran (the run log's header)
        if self.threads > 1:
            from . import parallel  # compiles (or loads from numba's cache) the parallel kernels only when used
            from .threads import layer

            self._par = parallel
            one = sp.csr_matrix(np.ones((1, 1), np.float32))  # loads the kernel and the threading layer now, not in epoch 0
            parallel.spmm(one.indptr, one.indices, one.data, np.ones((1, 1), np.float32), self._row_bounds(one),
                          np.empty((1, 1), np.float32))
            self.threading_layer = layer()

    def take_kernel_time(self) -> dict[str, float]:
        """Seconds per kernel (spmm, gemm, elementwise, attention, loss, optimizer) since the last call."""
        out, self.kernel_time = self.kernel_time, {}
        return out

    def _row_bounds(self, m: sp.csr_matrix) -> np.ndarray:
        """``m``'s row chunks (:func:`.parallel.row_bounds`), cached by the matrix object."""
        return self._derived(m, "bounds", lambda: self._par.row_bounds(m.indptr, self.threads))

    def _derived(self, m: sp.csr_matrix, kind: str, make: Callable[[], Any]) -> Any:
        """``make()``, computed once per matrix object and ``kind`` (an entry leaves with its matrix)."""
        key = (id(m), kind)
        hit = self._bounds.get(key)
        if hit is not None and hit[1] is m.indptr and hit[0]() is m:
            return hit[2]
        value = make()
        self._bounds[key] = (weakref.ref(m), m.indptr, value)
        weakref.finalize(m, self._bounds.pop, key, None)
        return value

    # --------------------------------------------------------- products
    @timed_on_host("spmm")
    def spmm(self, m: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
        """(n, k) sparse times (k, d) dense: (n, d) float32. With threads, the parallel kernel (the same sums
        in the same order as scipy's, so the same bits) on float32 CSR operands; scipy's otherwise."""
        if self.threads > 1 and sp.issparse(m) and m.format == "csr" and m.dtype == np.float32 \
                and isinstance(x, np.ndarray) and x.ndim == 2 and x.dtype == np.float32 \
                and m.nnz * x.shape[1] >= _PARALLEL_MIN:
            out = np.empty((m.shape[0], x.shape[1]), np.float32)
            return self._par.spmm(m.indptr, m.indices, m.data, np.ascontiguousarray(x), self._row_bounds(m), out)
        return np.asarray(m @ x, dtype=np.float32)

    @timed_on_host("gemm")
    def gemm(self, a: Any, b: np.ndarray) -> np.ndarray:
        """Dense (or CSR, first layer) times dense: float32. Dense float32 operands: in fixed blocks of
        ``_GEMM_ROWS`` rows of a, each one BLAS call, at every T: over numba's threads (:mod:`.blas`), else
        :meth:`_run_blocks`. CSR: scipy's product, or with threads the parallel SpMM (the same bits)."""
        if self.threads > 1 and sp.issparse(a):
            return self.spmm(a, b)
        if _blockable(a, b, 1):
            out = np.empty((a.shape[0], b.shape[1]), np.float32)
            ops = _blas_operands(a, b, blas.operand)
            if ops is not None:  # the blocks over numba's threads, no Python thread (:mod:`.blas`)
                return (blas.gemm_threads if self.threads > 1 else blas.gemm)(a, *ops[:2], b, *ops[2:], out, _GEMM_ROWS)
            blocks = dense_blocks(a.shape[0], _GEMM_ROWS)
            self._run_blocks(len(blocks), lambda i: np.matmul(a[slice(*blocks[i])], b, out=out[slice(*blocks[i])]))
            return out
        return np.asarray(a @ b, dtype=np.float32)

    @timed_on_host("gemm")
    def gemm_tn(self, a: Any, b: np.ndarray) -> np.ndarray:
        """aᵀ b (weight gradients), float32. Dense float32 operands: in fixed blocks of :func:`tn_rows` rows of
        a and b (the inner dimension), each block's product one BLAS call (:mod:`.blas`, else
        :meth:`_run_blocks`), the products summed into the result in block order, at every T."""
        if _blockable(a, b, 0):
            size = tn_rows(a.shape[0])
            blocks = dense_blocks(a.shape[0], size)
            out = np.empty((a.shape[1], b.shape[1]), np.float32)
            parts = np.empty((len(blocks) - 1, *out.shape), np.float32)  # blocks 1.. (block 0 goes into out)
            ops = _blas_operands(a, b, blas.tn_operand)
            if ops is not None:
                run = blas.gemm_tn_threads if self.threads > 1 else blas.gemm_tn
                run(a, *ops[:2], b, *ops[2:], out, parts, size)
            else:
                self._run_blocks(len(blocks), functools.partial(_tn_block, a, b, blocks, out, parts))
            for part in parts:  # in block order, on this thread: the same sums for every T
                np.add(out, part, out=out)
            return out
        return np.asarray(a.T @ b, dtype=np.float32)

    def _run_blocks(self, count: int, block: Callable[[int], Any]) -> None:
        """Run ``block(i)`` for i = 0..count - 1: at T = 1 (or for one block) in order on this thread, else in
        T contiguous groups of blocks, one per thread of the backend's pool (numpy's matmul releases the GIL).
        BLAS itself runs one thread (:func:`shgcn.trainer.cli.share_cores`; OpenBLAS on several threads splits
        a skinny product's inner dimension, so its sums would depend on its thread count). A block is the same
        BLAS call whichever thread runs it, so the bits do not depend on T (tested)."""
        if self.threads == 1 or count <= 1:
            for i in range(count):
                block(i)
            return
        groups = min(self.threads, count)
        edges = [g * count // groups for g in range(groups + 1)]

        def group(g: int) -> None:
            for i in range(edges[g], edges[g + 1]):
                block(i)

        if not hasattr(self, "_pool"):  # only without numpy's sgemm in reach (:data:`.blas.AVAILABLE`)
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="blas")
        list(self._pool.map(group, range(groups)))

    # --------------------------------------------------------- elementwise
    @timed_on_host("elementwise")
    def act_dropout(self, h: Any, act: str, noise: Noise | None, layer: int, gids: np.ndarray,
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
        args = (h, gids, key, ctr, np.uint64(t), noise.scale(rate) if noise else 1.0, ACT_CODES[act], np.empty_like(h),
                mask)
        out = self._par.dropout_dense(*args, self._rows(h.shape[0])) if self._wide(h) else kernels.dropout_dense(*args)
        return out, (mask if mask.size else None)

    @timed_on_host("elementwise")
    def act_dropout_grad(self, g: np.ndarray, hd: np.ndarray, act: str, noise: Noise | None,
                         keep: np.ndarray | None) -> np.ndarray:
        """The gradient through :meth:`act_dropout` (``hd`` its output), in place."""
        scale = noise.scale(noise.rate) if noise is not None else 1.0
        g = np.ascontiguousarray(g, dtype=np.float32)
        if act == "relu":
            if self._wide(g):
                return self._par.relu_dropout_grad(g, hd, scale, self._rows(g.shape[0]))
            return kernels.relu_dropout_grad(g, hd, scale)
        if act == "elu":
            keep_ = keep if keep is not None else _EMPTY_KEEP
            if self._wide(g):
                return self._par.elu_dropout_grad(g, hd, keep_, scale, self._rows(g.shape[0]))
            return kernels.elu_dropout_grad(g, hd, keep_, scale)
        if keep is not None:
            return g * keep * np.float32(scale)
        return g * np.float32(scale) if scale != 1.0 else g

    # --------------------------------------------------------- attention
    @timed_on_host("attention")
    def gat_forward(self, rows: np.ndarray, att: Attention) -> None:
        """GAT's aggregation of ``rows`` into ``att.out`` (see :func:`.kernels.gat_forward`); with threads, over
        chunks of ``rows`` of about equal edges (the same results)."""
        noise = att.noise
        rate = noise.attn_rate if noise is not None else 0.0
        key = noise.key() if noise is not None else np.zeros(2, np.uint64)
        ctr = noise.ctr(att.layer, kernels.ATTENTION) if noise is not None else np.zeros(2, np.uint64)
        t = noise.threshold(rate) if noise is not None else 0
        scale = noise.scale(rate) if noise is not None else 1.0
        args = (rows, att.csr.indptr, att.csr.indices, att.z, att.s_src, att.s_dst, np.float32(att.slope), att.rgid,
                att.cgid, key, ctr, np.uint64(t), scale, att.alpha, att.alpha_d, att.out)
        if self._threaded(att):
            deg = np.diff(att.csr.indptr)[rows]
            self._par.gat_forward(*args, self._par.row_bounds(np.concatenate([[0], np.cumsum(deg)]), self.threads))
        else:
            kernels.gat_forward(*args)

    @timed_on_host("attention")
    def gat_backward(self, att: Attention, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dz (m, H*d), ds_src (m, H), ds_dst (n, H)) of :meth:`gat_forward`; with threads, rows then columns
        (:func:`.parallel.gat_backward`, the same results)."""
        dz = np.zeros_like(att.z)
        ds_src = np.zeros_like(att.s_src)
        ds_dst = np.zeros_like(att.s_dst)
        m = att.csr
        args = (m.indptr, m.indices, att.z, np.ascontiguousarray(g), att.s_src, att.s_dst, np.float32(att.slope),
                att.alpha, att.alpha_d, dz, ds_src, ds_dst)
        if self._threaded(att):
            col_ptr, col_edge, col_row = self._derived(m, "columns",
                                                       lambda: self._par.columns(m.indptr, m.indices, att.z.shape[0]))
            self._par.gat_backward(*args, self._row_bounds(m), col_ptr, col_edge, col_row,
                                   self._par.row_bounds(col_ptr, self.threads))
        else:
            kernels.gat_backward(*args)
        return dz, ds_src, ds_dst

    def _threaded(self, att: Attention) -> bool:
        """Whether GAT's attention runs over the threads (big enough to pay the wake-up)."""
        return self.threads > 1 and att.csr.nnz * att.z.shape[1] >= _PARALLEL_MIN

    # --------------------------------------------------------- losses
    @timed_on_host("loss")
    def softmax_xent(self, logits: np.ndarray, labels: np.ndarray, idx: np.ndarray, w: np.ndarray, total: int
                     ) -> tuple[float, np.ndarray, int]:
        """Masked softmax cross-entropy of rows ``idx`` (weights ``w``): the
        loss sum, its gradient over ``total`` (zero outside idx), correct rows."""
        g = np.zeros(logits.shape, np.float32)
        loss, correct = kernels.softmax_xent(np.ascontiguousarray(logits, np.float32), np.asarray(labels, np.int64),
                                             idx, w, 1.0 / total, g)
        return float(loss), g, int(correct)

    @timed_on_host("loss")
    def sigmoid_bce(self, logits: np.ndarray, labels: np.ndarray, idx: np.ndarray, w: np.ndarray, total: int
                    ) -> tuple[float, np.ndarray]:
        """A sigmoid per class and binary cross-entropy summed over the classes, of rows ``idx`` (weights ``w``):
        the loss sum and its gradient over ``total`` (zero outside idx)."""
        z = logits[idx].astype(np.float64)
        y = np.asarray(labels[idx], np.float64)
        # log(1 + e^-|z|) + max(z, 0) - z y: the stable form of -[y log s(z) + (1-y) log(1-s(z))]
        per_row = (np.logaddexp(0.0, -np.abs(z)) + np.maximum(z, 0) - z * y).sum(1)
        g = np.zeros_like(logits)
        g[idx] = ((1.0 / (1.0 + np.exp(-z)) - y) * w[:, None] / max(total, 1)).astype(np.float32)
        return float((per_row * w).sum()), g

    def host_values(self, values: list[Any]) -> np.ndarray:
        """(k,) float64 of the losses' sums and counts (host numbers here)."""
        return np.asarray(values, np.float64)

    # --------------------------------------------------------- optimizer
    @timed_on_host("optimizer")
    def adam_step(self, state: AdamState, grads: list[np.ndarray]) -> None:
        """One Adam step on ``state.params``, in place."""
        if not state.m:
            state.m = [np.zeros_like(p) for p in state.params]
            state.v = [np.zeros_like(p) for p in state.params]
        state.t += 1
        c1 = 1 - state.b1 ** state.t
        c2 = 1 - state.b2 ** state.t
        for p, g, m, v in zip(state.params, grads, state.m, state.v):
            m *= state.b1
            m += (1 - state.b1) * g
            v *= state.b2
            v += (1 - state.b2) * g * g
            p -= (state.lr * (m / c1) / (np.sqrt(v / c2) + state.eps)).astype(np.float32)

    # --------------------------------------------------------- host transfers
    def to_host(self, x: np.ndarray) -> np.ndarray:
        """Rows for the exchange (a device backend copies into pinned memory)."""
        return x

    def host_rows(self, x: np.ndarray) -> np.ndarray:
        """Own rows for the exchange (a device backend copies only the rows the exchange selects)."""
        return x

    def from_host(self, x: np.ndarray) -> np.ndarray:
        """Received rows back into this backend's arrays (a device backend copies them to the device)."""
        return x
