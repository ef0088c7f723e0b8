"""The PyTorch backend (:class:`TorchBackend`, ``--backend torch --device cpu|cuda``): float32 tensors on one
device; the products are torch's (a sparse CSR tensor times a dense one, ``torch.matmul``), the elementwise
work, the gradients through it and Adam are torch expressions.

What runs as the numpy backend's numba kernels, on host arrays (:mod:`.kernels`):

- the dropout masks (counter-based Philox, keyed by vertex id): made on the host and multiplied in by torch,
  so they are *identical* to the numpy backend's, for any P and any row order;
- GAT's attention forward and backward, the losses (softmax cross-entropy, sigmoid BCE).

On the CPU a tensor and its host array share memory (``Tensor.numpy()``, ``torch.from_numpy``): nothing is
copied. On CUDA every such call copies its inputs to the host and its results back (correct, not fast: the
attention and the losses are the parts a CUDA run would want as torch kernels).

Intra-op threads: ``threads`` (``--threads``), else as many as the BLAS of the numpy backend has
(``OMP_NUM_THREADS``, set per rank by :func:`shgcn.trainer.cli.share_cores`; 1 when unset).
"""

from __future__ import annotations

import os
import warnings
import weakref
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from . import kernels
from .base import AdamState, Attention, BackendError, Dropped, Noise
from .numpy import NumpyBackend

_F32 = torch.float32


def _threads() -> int:
    """The rank's share of the cores (share_cores' OMP_NUM_THREADS), 1 when unset or unreadable."""
    try:
        return max(1, int(os.environ.get("OMP_NUM_THREADS", "1")))
    except ValueError:
        return 1


class TorchBackend:
    """Float32 torch tensors on ``device`` ("cpu" or "cuda").

    Parameters
    ----------
    device : str, where the tensors live; "cuda" needs a GPU that torch sees
    threads : int, torch's intra-op threads (None: ``OMP_NUM_THREADS``)
    """

    name = "torch"

    def __init__(self, device: str = "cpu", threads: int | None = None):
        if device == "cuda" and not torch.cuda.is_available():
            raise BackendError("--device cuda: torch sees no CUDA GPU here (torch.cuda.is_available() is False; "
                               f"torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'})")
        self.device = torch.device(device)
        self.threads = threads or _threads()
        torch.set_num_threads(self.threads)
        self._kernels = NumpyBackend(self.threads)  # the numba kernels on host arrays (attention, losses), threaded alike
        # the sparse operators converted once per scipy matrix: id -> (the matrix, weakly; its tensor); an
        # entry leaves with its matrix (mini-batch views make new matrices every step)
        self._csr: dict[int, tuple[weakref.ref, torch.Tensor]] = {}

    # --------------------------------------------------------- conversions
    def _t(self, x: Any) -> torch.Tensor:
        """A float32 tensor on the device (host arrays: shared memory on the CPU)."""
        if isinstance(x, torch.Tensor):
            return x if x.device == self.device else x.to(self.device)
        a = np.asarray(x)
        if a.dtype.kind == "f" and a.dtype != np.float32:
            a = a.astype(np.float32)
        elif not a.flags.writeable:  # a tensor sharing a read-only array (a store's) could be written through
            a = a.copy()
        return torch.as_tensor(a).to(self.device)

    def _sparse(self, m: sp.spmatrix | sp.sparray) -> torch.Tensor:
        """A scipy CSR matrix as a torch sparse CSR tensor on the device (float32), not cached."""
        m = sp.csr_matrix(m)
        idx = np.int32 if m.indices.dtype == np.int32 and m.indptr.dtype == np.int32 else np.int64
        with warnings.catch_warnings():  # torch says once a process that sparse CSR is "in beta"
            warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
            # a scipy CSR matrix is valid: torch's own check would cost a pass over it each conversion
            return torch.sparse_csr_tensor(torch.from_numpy(np.asarray(m.indptr, idx)),
                                           torch.from_numpy(np.asarray(m.indices, idx)),
                                           torch.from_numpy(np.asarray(m.data, np.float32)), size=m.shape,
                                           device=self.device, check_invariants=False)

    def _operator(self, m: sp.spmatrix | sp.sparray) -> torch.Tensor:
        """``m`` converted once: the cache is keyed by the matrix object (the trainer's operators never
        change their values in place)."""
        key = id(m)
        hit = self._csr.get(key)
        if hit is not None and hit[0]() is m:
            return hit[1]
        t = self._sparse(m)
        self._csr[key] = (weakref.ref(m), t)
        weakref.finalize(m, self._csr.pop, key, None)
        return t

    def _sparse_product(self, a: torch.Tensor, shape: tuple[int, int], nnz: int, x: Any) -> torch.Tensor:
        x = self._t(x)
        if nnz == 0 or 0 in shape:  # nothing stored (an empty halo block): torch's kernels want no such case
            return torch.zeros((shape[0], x.shape[1]), dtype=_F32, device=self.device)
        return torch.matmul(a, x)

    # --------------------------------------------------------- products
    def spmm(self, m: sp.csr_matrix, x: Any) -> torch.Tensor:
        """(n, k) sparse (scipy, converted once per matrix) times (k, d) dense: (n, d) float32."""
        return self._sparse_product(self._operator(m), m.shape, m.nnz, x)

    def gemm(self, a: Any, b: Any) -> torch.Tensor:
        """Dense (or scipy CSR: the first layer's sparse features, a new matrix every step) times dense."""
        if sp.issparse(a):
            return self._sparse_product(self._sparse(a), a.shape, a.nnz, b)
        return torch.matmul(self._t(a), self._t(b))

    def gemm_tn(self, a: Any, b: Any) -> torch.Tensor:
        """aᵀ b (weight gradients); a may be scipy CSR (its transpose converted, not cached)."""
        if sp.issparse(a):
            at = sp.csr_matrix(a.T)
            return self._sparse_product(self._sparse(at), at.shape, at.nnz, b)
        return torch.matmul(self._t(a).T, self._t(b))

    # --------------------------------------------------------- arrays
    def asarray(self, x: Any) -> Any:
        """A host array as a float32 tensor on the device; CSR features stay scipy CSR (gemm takes them)."""
        return x if sp.issparse(x) else self._t(x)

    def empty(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.empty(shape, dtype=_F32, device=self.device)

    def zeros(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.zeros(shape, dtype=_F32, device=self.device)

    def concat(self, arrays: list[Any], axis: int) -> torch.Tensor:
        return torch.cat([self._t(a) for a in arrays], dim=axis)

    def relu(self, x: Any) -> torch.Tensor:
        return torch.relu(self._t(x))

    def colsum(self, x: Any) -> torch.Tensor:
        return self._t(x).sum(0)

    def vdot(self, a: Any, b: Any) -> torch.Tensor:
        return torch.dot(self._t(a).reshape(-1), self._t(b).reshape(-1)).reshape(1)

    def dense(self, h: Any) -> Any:
        """A dense float32 tensor of h (CSR first-layer inputs)."""
        return self._t(h.toarray()) if sp.issparse(h) else h

    # --------------------------------------------------------- elementwise
    def _mask(self, shape: tuple[int, int], gids: np.ndarray, noise: Noise, layer: int, rate: float) -> torch.Tensor:
        """(n, d) float32 on the device, 0 or the scale: the numpy backend's mask (its kernel, on the host)."""
        ones = np.ones(shape, np.float32)
        kernels.dropout_dense(ones, np.asarray(gids, np.int64), noise.key(), noise.ctr(layer, kernels.NODE),
                              np.uint64(noise.threshold(rate)), noise.scale(rate), 0, ones, np.zeros((0, 0), np.uint8))
        return self.from_host(ones)

    def act_dropout(self, h: Any, act: str, noise: Noise | None, layer: int, gids: np.ndarray,
                    keep: bool = False) -> tuple[Any, Any]:
        """``dropout(act(h))`` and the keep mask (uint8) when ``keep``; the masks are the numpy backend's
        (made by its kernel on the host). A CSR ``h`` keeps its pattern (the numpy backend's kernel: it stays
        scipy CSR); a :class:`Dropped` input is returned as it is."""
        if isinstance(h, Dropped):
            return h.x, None
        rate = noise.rate if noise is not None else 0.0
        if sp.issparse(h):
            return self._kernels.act_dropout(h, act, noise, layer, gids)
        h = self._t(h)
        if act == "elu":
            h = torch.where(h > 0, h, torch.expm1(h))
        elif act == "relu":
            h = torch.relu(h)
        if noise is None or rate == 0:
            return h, None
        mask = self._mask((h.shape[0], h.shape[1]), gids, noise, layer, rate)
        return h * mask, ((mask != 0).to(torch.uint8) if keep else None)

    def act_dropout_grad(self, g: Any, hd: Any, act: str, noise: Noise | None, keep: Any) -> torch.Tensor:
        """The gradient through :meth:`act_dropout` (``hd`` its output): the numpy kernels' float32 steps."""
        # the float32 value of the scale: products with it round as the kernels' float32 ones do
        sc = float(np.float32(noise.scale(noise.rate) if noise is not None else 1.0))
        g, hd = self._t(g), self._t(hd)
        zero = torch.zeros((), dtype=_F32, device=self.device)
        if act == "relu":
            return torch.where(hd > 0, g * sc, zero)
        if act == "elu":
            v = hd / sc
            out = g * sc * torch.where(v > 0, torch.ones((), dtype=_F32, device=self.device), v + 1)
            return torch.where(self._t(keep) != 0, out, zero) if keep is not None else out
        if keep is not None:
            return g * self._t(keep) * sc
        return g * sc if sc != 1.0 else g

    # --------------------------------------------------------- attention
    def _host(self, x: Any) -> np.ndarray:
        """A host array of x: on the CPU a view of the tensor (the kernels write through it), on CUDA a copy."""
        return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

    def _write_back(self, dst: Any, host: np.ndarray) -> None:
        """After a kernel wrote ``host``: copy it into ``dst`` when ``dst`` is a device tensor (not a view)."""
        if isinstance(dst, torch.Tensor) and dst.device.type != "cpu":
            dst.copy_(torch.from_numpy(host))

    def gat_forward(self, rows: np.ndarray, att: Attention) -> None:
        """GAT's aggregation of ``rows`` into ``att.out``: the numba kernel on host views (CUDA: copies)."""
        host = replace(att, z=self._host(att.z), s_src=self._host(att.s_src), s_dst=self._host(att.s_dst),
                       alpha=self._host(att.alpha), alpha_d=self._host(att.alpha_d), out=self._host(att.out))
        self._kernels.gat_forward(rows, host)
        for name in ("alpha", "alpha_d", "out"):
            self._write_back(getattr(att, name), getattr(host, name))

    def gat_backward(self, att: Attention, g: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(dz (m, H*d), ds_src (m, H), ds_dst (n, H)) of :meth:`gat_forward` (the numba kernel, host views)."""
        host = replace(att, z=self._host(att.z), s_src=self._host(att.s_src), s_dst=self._host(att.s_dst),
                       alpha=self._host(att.alpha), alpha_d=self._host(att.alpha_d))
        dz, ds_src, ds_dst = self._kernels.gat_backward(host, self._host(g))
        return self.from_host(dz), self.from_host(ds_src), self.from_host(ds_dst)

    # --------------------------------------------------------- losses
    def softmax_xent(self, logits: Any, labels: Any, idx: np.ndarray, w: np.ndarray, total: int
                     ) -> tuple[float, torch.Tensor, int]:
        """Masked softmax cross-entropy (the numba kernel on the host): loss sum, gradient, correct rows."""
        loss, g, correct = self._kernels.softmax_xent(self._host(logits), labels, idx, w, total)
        return loss, self.from_host(g), correct

    def sigmoid_bce(self, logits: Any, labels: Any, idx: np.ndarray, w: np.ndarray, total: int
                    ) -> tuple[float, torch.Tensor]:
        """A sigmoid per class and binary cross-entropy (on the host, float64): loss sum and gradient."""
        loss, g = self._kernels.sigmoid_bce(self._host(logits), labels, idx, w, total)
        return loss, self.from_host(g)

    # --------------------------------------------------------- optimizer
    def adam_step(self, state: AdamState, grads: list[Any]) -> None:
        """One Adam step on ``state.params``, in place (the numpy backend's float32 expressions)."""
        if not state.m:
            state.m = [torch.zeros_like(p) for p in state.params]
            state.v = [torch.zeros_like(p) for p in state.params]
        state.t += 1
        c1 = 1 - state.b1 ** state.t
        c2 = 1 - state.b2 ** state.t
        with torch.no_grad():
            for p, g, m, v in zip(state.params, grads, state.m, state.v):
                g = self._t(g)
                m *= state.b1
                m += (1 - state.b1) * g
                v *= state.b2
                v += (1 - state.b2) * g * g
                p -= state.lr * (m / c1) / (torch.sqrt(v / c2) + state.eps)

    # --------------------------------------------------------- host transfers
    def to_host(self, x: Any) -> np.ndarray:
        """A float32 host array of x (on the CPU it shares the tensor's memory, as the numpy backend's is x)."""
        if isinstance(x, torch.Tensor):
            return x.detach().cpu().numpy()
        return np.asarray(x)

    def from_host(self, x: np.ndarray) -> torch.Tensor:
        """Received rows as a tensor on the device (on the CPU sharing the host array's memory)."""
        return self._t(x)
