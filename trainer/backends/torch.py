"""The PyTorch backend (:class:`TorchBackend`, ``--backend torch --device cpu|cuda``): every step of training
as torch operations on one device. The products are torch's (sparse CSR times dense, ``torch.matmul``); the
dropout masks (counter-based Philox keyed by vertex id, in torch integer operations: :mod:`.torchkernels`) are
the numpy backend's bit for bit, for any P and row order; the losses and their gradients, GAT's attention
and Adam are torch expressions. A loss stays a 0-d tensor until :meth:`host_values` reads it, once a step.

On a GPU the mask kernels are compiled with ``torch.compile`` (one fused kernel each instead of the Philox
rounds' hundreds of elementwise ones; ``compile="off"`` or ``SHGCN_TORCH_COMPILE=off``: eagerly, the same
bits); the attention and the losses, a few dozen operations each, run eagerly (no compile to wait for). On the CPU the
masks, attention and losses are by default the numpy backend's numba kernels on the tensors' own memory
(``kernels="numba"``: several times faster there than torch's 64-bit integer operations); ``kernels="torch"``
runs there what a GPU runs.

The exchange moves host arrays: on a GPU through pinned host memory (:mod:`.torchdevice`); on the CPU a tensor
and its array share memory. Features stored as float16 stay float16 on the device (half its memory) until
their first use, which computes in float32. ``kernel_time`` (the run log's, the numpy backend's keys): CUDA
events around each call on a GPU, the host's clock on the CPU. Intra-op threads: ``threads`` (``--threads``),
else ``OMP_NUM_THREADS`` (set per rank by :func:`shgcn.trainer.cli.share_cores`; 1 when unset).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from . import torchdevice as dv
from . import torchkernels as tk
from .base import TORCH, AdamState, Attention, BackendError, Dropped, Noise
from .numpy import ACT_CODES, NumpyBackend
from .torcharrays import TorchArrays

_F32 = torch.float32


class TorchBackend(TorchArrays):
    """Float32 torch tensors on ``device`` ("cpu" or "cuda", or "cuda:N").

    Parameters
    ----------
    device : str, where the tensors live; "cuda" needs a GPU that torch sees
    threads : int, torch's intra-op threads (None: ``OMP_NUM_THREADS``)
    kernels : "auto", "torch" or "numba": the masks, attention and losses as torch operations (``torch``: on
        any device, what a GPU runs) or as the numpy backend's numba kernels on the tensors' memory (``numba``:
        the CPU only, where a tensor and its array share memory; several times faster there than torch's
        integer operations). auto: numba on the CPU, torch elsewhere
    compile : "auto", "on" or "off": whether the torch kernels are compiled with ``torch.compile`` (auto: on a
        GPU, or as ``SHGCN_TORCH_COMPILE`` says)
    """

    name = TORCH.name

    def __init__(self, device: str = "cpu", threads: int | None = None, compile: str = "auto",
                 kernels: str = "auto"):
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise BackendError("--device cuda: torch sees no CUDA GPU here (torch.cuda.is_available() is False; "
                               f"torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'})")
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.threads = threads or dv.threads_of_rank()
        torch.set_num_threads(self.threads)
        self.cuda = self.device.type == "cuda"
        self.compiled = tk.compile_mode(self.device, compile)
        if kernels not in ("auto", "torch", "numba"):
            raise BackendError(f"kernels={kernels!r}: choose auto, torch or numba")
        if kernels == "numba" and self.cuda:
            raise BackendError("kernels='numba' runs on the CPU only (the tensors' memory must be the host's)")
        # the numba kernels on host views of CPU tensors (no copy), threaded as the numpy backend's
        self._host = NumpyBackend(self.threads) if kernels == "numba" or (kernels == "auto" and not self.cuda) \
            else None
        self.kernels = "numba" if self._host is not None else "torch"
        self.kernel_time: dict[str, float] = {}
        self._events = self.cuda
        self._pending: list[tuple[str, Any, Any]] = []
        # the sparse operators converted once per scipy matrix (and every other host-derived tensor): an entry
        # leaves with its object
        self._csr = dv.DeviceCache()
        self._derived = dv.DeviceCache()
        self._same = dv.LastUpload(self.device)

    def _k(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A kernel of :mod:`.torchkernels`, compiled where this backend compiles."""
        return tk.compiled(fn, self.device) if self.compiled else fn

    def take_kernel_time(self) -> dict[str, float]:
        """Seconds per kernel (spmm, gemm, elementwise, attention, loss, optimizer) since the last call (on a GPU
        this waits for the kernels timed)."""
        if self._pending:
            self._pending[-1][2].synchronize()
            for kernel, start, end in self._pending:
                self.kernel_time[kernel] = self.kernel_time.get(kernel, 0.0) + start.elapsed_time(end) / 1e3
            self._pending = []
        out, self.kernel_time = self.kernel_time, {}
        return out

    # --------------------------------------------------------- conversions (and :class:`.torcharrays.TorchArrays`)
    def _ids(self, gids: np.ndarray) -> torch.Tensor:
        """Vertex ids (the masks' keys) on the device, once per array."""
        return self._derived.get((gids,), "ids", lambda: dv.upload(np.asarray(gids, np.int64), self.device))

    def _sparse(self, m: sp.spmatrix | sp.sparray) -> torch.Tensor:
        return dv.sparse_csr(m, self.device)

    def _operator(self, m: sp.spmatrix | sp.sparray) -> torch.Tensor:
        """``m`` converted once: the cache is keyed by the matrix object (the trainer's operators never
        change their values in place)."""
        return self._csr.get((m,), "csr", lambda: self._sparse(m))

    def _sparse_product(self, a: torch.Tensor, shape: tuple[int, int], nnz: int, x: Any) -> torch.Tensor:
        x = self._f32(x)
        if nnz == 0 or 0 in shape:  # nothing stored (an empty halo block): torch's kernels want no such case
            return torch.zeros((shape[0], x.shape[1]), dtype=_F32, device=self.device)
        return torch.matmul(a, x)

    # --------------------------------------------------------- products
    @dv.timed("spmm")
    def spmm(self, m: sp.csr_matrix, x: Any) -> torch.Tensor:
        """(n, k) sparse (scipy, converted once per matrix) times (k, d) dense: (n, d) float32."""
        return self._sparse_product(self._operator(m), m.shape, m.nnz, x)

    @dv.timed("gemm")
    def gemm(self, a: Any, b: Any) -> torch.Tensor:
        """Dense, scipy CSR or torch sparse CSR (the first layer's sparse features) times dense."""
        if sp.issparse(a):
            return self._sparse_product(self._sparse(a), a.shape, a.nnz, b)
        if isinstance(a, torch.Tensor) and a.layout == torch.sparse_csr:
            return self._sparse_product(a, (a.shape[0], a.shape[1]), a._nnz(), b)
        return torch.matmul(self._f32(a), self._f32(b))

    @dv.timed("gemm")
    def gemm_tn(self, a: Any, b: Any) -> torch.Tensor:
        """aᵀ b (weight gradients); a may be scipy CSR or torch sparse CSR (its transpose converted, not
        cached)."""
        if isinstance(a, torch.Tensor) and a.layout == torch.sparse_csr:
            at = a.t().to_sparse_csr()
            return self._sparse_product(at, (at.shape[0], at.shape[1]), at._nnz(), b)
        if sp.issparse(a):
            at = sp.csr_matrix(a.T)
            return self._sparse_product(self._sparse(at), at.shape, at.nnz, b)
        return torch.matmul(self._f32(a).T, self._f32(b))

    # --------------------------------------------------------- elementwise
    def _keys(self, noise: Noise, layer: int, stream: int) -> tuple[torch.Tensor, torch.Tensor]:
        k, c = noise.key(), noise.ctr(layer, stream)
        return dv.int_pair(int(k[0]), int(k[1]), self.device), dv.int_pair(int(c[0]), int(c[1]), self.device)

    @dv.timed("elementwise")
    def act_dropout(self, h: Any, act: str, noise: Noise | None, layer: int, gids: np.ndarray,
                    keep: bool = False) -> tuple[Any, Any]:
        """``dropout(act(h))`` and the keep mask (uint8) when ``keep``; the masks are the numpy backend's bits,
        drawn on the device. A CSR ``h`` keeps its pattern (a torch sparse CSR tensor on the device); a
        :class:`Dropped` input is returned as it is."""
        if isinstance(h, Dropped):
            return h.x, None
        rate = noise.rate if noise is not None else 0.0
        if self._host is not None and (sp.issparse(h) or noise is not None and rate > 0):
            if sp.issparse(h):  # the numba kernel keeps the CSR pattern (it stays scipy CSR)
                return self._host.act_dropout(h, act, noise, layer, gids)
            out, mask = self._host.act_dropout(self.to_host(h), act, noise, layer, gids, keep=keep)
            return self._t(out), (self._t(mask) if mask is not None else None)
        if sp.issparse(h) or (isinstance(h, torch.Tensor) and h.layout == torch.sparse_csr):
            return self._sparse_dropout(h, noise, layer, gids), None
        if noise is None or rate == 0:
            h = self._f32(h)
            if act == "elu":
                return torch.where(h > 0, h, torch.expm1(h)), None
            return (torch.relu(h) if act == "relu" else h), None
        h = self._t(h)
        key, ctr = self._keys(noise, layer, tk.NODE)
        words = self._k(tk.dense_words)(self._ids(gids), (h.shape[1] + 7) // 8, key, ctr)
        return self._k(tk.dropout_words)(h, words, noise.threshold(rate), noise.scale(rate), ACT_CODES[act], keep)

    def _sparse_dropout(self, h: Any, noise: Noise | None, layer: int, gids: np.ndarray) -> Any:
        """Dropout of a CSR input's stored values (:func:`.torchkernels.sparse_mask`): a torch sparse CSR tensor
        on the device (scipy CSR as it is without dropout)."""
        rate = noise.rate if noise is not None else 0.0
        if noise is None or rate == 0:
            return h
        t = h if isinstance(h, torch.Tensor) else self._operator(h)
        crow, col, val = t.crow_indices(), t.col_indices(), t.values()
        rows = torch.repeat_interleave(torch.arange(t.shape[0], device=self.device), crow.diff())
        key, ctr = self._keys(noise, layer, tk.NODE)
        mask = self._k(tk.sparse_mask)(rows, col, self._ids(gids), key, ctr, threshold=noise.threshold(rate),
                                       scale=noise.scale(rate))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
            return torch.sparse_csr_tensor(crow, col, val.to(_F32) * mask, size=t.shape, device=self.device,
                                           check_invariants=False)

    @dv.timed("elementwise")
    def act_dropout_grad(self, g: Any, hd: Any, act: str, noise: Noise | None, keep: Any) -> torch.Tensor:
        """The gradient through :meth:`act_dropout` (``hd`` its output): the numpy kernels' float32 steps."""
        # the float32 value of the scale: products with it round as the kernels' float32 ones do
        if self._host is not None and act in ("relu", "elu"):  # the numba kernels, in place on host views
            return self._t(self._host.act_dropout_grad(self.to_host(self._f32(g)), self.to_host(self._f32(hd)), act,
                                                       noise, self.to_host(keep) if keep is not None else None))
        sc = float(np.float32(noise.scale(noise.rate) if noise is not None else 1.0))
        g, hd = self._f32(g), self._f32(hd)
        if act == "relu":
            return torch.where(hd > 0, g * sc, 0.0)
        if act == "elu":
            v = hd / sc
            out = g * sc * torch.where(v > 0, 1.0, v + 1)
            return torch.where(self._t(keep) != 0, out, 0.0) if keep is not None else out
        if keep is not None:
            return g * self._t(keep) * sc
        return g * sc if sc != 1.0 else g

    # --------------------------------------------------------- attention
    def _edges(self, csr: sp.csr_matrix, rows: np.ndarray | None) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """:func:`.torchdevice.csr_edges` of ``rows`` (None: all), once per matrix and row array."""
        every = rows is None or (rows.size == csr.shape[0] and rows.size > 0 and rows[0] == 0
                                 and rows[-1] == rows.size - 1)
        return self._derived.get((csr,) if every else (csr, rows), "edges",
                                 lambda: dv.csr_edges(csr, None if every else rows, self.device))

    @dv.timed("attention")
    def gat_forward(self, rows: np.ndarray, att: Attention) -> None:
        """GAT's aggregation of ``rows`` into ``att.out`` (scores, softmax, attention dropout, the weighted sum),
        as torch operations on the device."""
        if len(rows) == 0:
            return
        if self._host is not None:  # the numba kernel writes through host views of the CPU tensors
            self._host.gat_forward(rows, self._host_att(att))
            return
        pos, erow, ecol = self._edges(att.csr, rows)
        n = att.s_dst.shape[0]
        alpha = tk.gat_scores(att.s_dst, att.s_src, erow, ecol, n, float(att.slope))
        noise = att.noise
        rate = noise.attn_rate if noise is not None else 0.0
        if noise is not None and rate > 0:
            key, ctr = self._keys(noise, att.layer, tk.ATTENTION)
            gi, gj = self._ids(att.rgid)[erow], self._ids(att.cgid)[ecol]
            words = self._k(tk.edge_words)(gi, gj, (alpha.shape[1] + 7) // 8, key, ctr)
            alpha_d = alpha * self._k(tk.mask_of_words)(words, alpha.shape[1], noise.threshold(rate),
                                                        noise.scale(rate))
        else:
            alpha_d = alpha
        att.alpha[pos] = alpha
        att.alpha_d[pos] = alpha_d
        out = tk.gat_aggregate(alpha_d, att.z, erow, ecol, n)
        if isinstance(pos, slice):
            att.out[:] = out
        else:
            r = self._derived.get((rows,), "rows", lambda: dv.upload(np.asarray(rows, np.int64), self.device))
            att.out[r] = out[r]

    @dv.timed("attention")
    def gat_backward(self, att: Attention, g: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(dz (m, H*d), ds_src (m, H), ds_dst (n, H)) of :meth:`gat_forward` over every row."""
        if self._host is not None:
            return tuple(map(self._t, self._host.gat_backward(self._host_att(att), self.to_host(g))))  # type: ignore
        _, erow, ecol = self._edges(att.csr, None)
        return tk.gat_backward(att.z, self._f32(g), (att.s_src, att.s_dst), (att.alpha, att.alpha_d),
                                        (erow, ecol), float(att.slope))

    def _host_att(self, att: Attention) -> Attention:  # host views of its CPU tensors: the numba kernels write through
        return replace(att, z=self.to_host(att.z), s_src=self.to_host(att.s_src), s_dst=self.to_host(att.s_dst),
                       alpha=self.to_host(att.alpha), alpha_d=self.to_host(att.alpha_d),
                       out=self.to_host(att.out) if att.out is not None else None)

    # --------------------------------------------------------- losses
    def _loss_inputs(self, labels: Any, idx: np.ndarray, w: np.ndarray, dtype: torch.dtype
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The labels (once per array), the rows and their weights (new arrays each step, the same values: the
        last copy is reused) on the device."""
        if isinstance(labels, torch.Tensor):
            return labels.to(self.device, dtype), self._same.get("idx", idx, np.int64), self._same.get("w", w, np.float64)
        lab = self._derived.get((labels,), "labels", lambda: dv.upload(np.ascontiguousarray(labels), self.device).to(dtype))
        return lab, self._same.get("idx", idx, np.int64), self._same.get("w", w, np.float64)

    @dv.timed("loss")
    def softmax_xent(self, logits: Any, labels: Any, idx: np.ndarray, w: np.ndarray, total: int
                     ) -> tuple[Any, torch.Tensor, Any]:
        """Masked softmax cross-entropy on the device: loss sum (0-d float64 tensor), gradient, correct rows
        (0-d int64 tensor); :meth:`host_values` reads the two."""
        if self._host is not None:
            loss, g, correct = self._host.softmax_xent(self.to_host(logits), labels, idx, w, total)
            return loss, self._t(g), correct
        lab, i, wt = self._loss_inputs(labels, idx, w, torch.int64)
        return tk.softmax_xent(self._f32(logits), lab, i, wt, 1.0 / total)

    @dv.timed("loss")
    def sigmoid_bce(self, logits: Any, labels: Any, idx: np.ndarray, w: np.ndarray, total: int
                    ) -> tuple[Any, torch.Tensor]:
        """A sigmoid per class and binary cross-entropy (float64) on the device: loss sum (0-d), gradient."""
        if self._host is not None:
            loss, g = self._host.sigmoid_bce(self.to_host(logits), labels, idx, w, total)
            return loss, self._t(g)
        lab, i, wt = self._loss_inputs(labels, idx, w, torch.float64)
        return tk.sigmoid_bce(self._f32(logits), lab, i, wt, 1.0 / max(total, 1))

    def host_values(self, values: list[Any]) -> np.ndarray:
        """(k,) float64: numbers and 0-d tensors (the losses' sums and counts) read to the host in one copy."""
        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        if not tensors:
            return np.asarray(values, np.float64)
        read = iter(torch.stack([t.reshape(()).to(torch.float64) for t in tensors]).cpu().tolist())
        return np.array([next(read) if isinstance(v, torch.Tensor) else float(v) for v in values], np.float64)

    # --------------------------------------------------------- optimizer
    @dv.timed("optimizer")
    def adam_step(self, state: AdamState, grads: list[Any]) -> None:
        """One Adam step on ``state.params``, in place: the numpy backend's float32 expressions, in the same
        order, as torch's multi-tensor (``_foreach``) operations: a handful of kernels for every parameter
        together on a GPU, not a dozen for each."""
        if not state.m:
            state.m = [torch.zeros_like(p) for p in state.params]
            state.v = [torch.zeros_like(p) for p in state.params]
        state.t += 1
        c1 = 1 - state.b1 ** state.t
        c2 = 1 - state.b2 ** state.t
        with torch.no_grad():
            g = [self._f32(x) for x in grads]
            m, v, p = state.m, state.v, state.params
            torch._foreach_mul_(m, state.b1)
            torch._foreach_add_(m, torch._foreach_mul(g, 1 - state.b1))  # m += (1 - b1) g
            torch._foreach_mul_(v, state.b2)
            gg = torch._foreach_mul(g, 1 - state.b2)
            torch._foreach_mul_(gg, g)
            torch._foreach_add_(v, gg)  # v += (1 - b2) g g
            den = torch._foreach_div(v, c2)
            torch._foreach_sqrt_(den)
            torch._foreach_add_(den, state.eps)
            step = torch._foreach_div(m, c1)
            torch._foreach_mul_(step, state.lr)
            torch._foreach_div_(step, den)
            torch._foreach_sub_(p, step)  # p -= lr (m / c1) / (sqrt(v / c2) + eps)

    # --------------------------------------------------------- host transfers
    def to_host(self, x: Any) -> np.ndarray:
        """A host array of x (float32 for float tensors): on the CPU sharing the tensor's memory, as the numpy
        backend's is x; on a GPU a copy in pinned memory (what MPI sends from)."""
        return dv.download(x) if isinstance(x, torch.Tensor) else np.asarray(x)

    def host_rows(self, x: Any) -> Any:
        """Own rows for the exchange: on the CPU the host array (shared memory); on a GPU a
        :class:`.torchdevice.DeviceRows`, which copies to the host only the rows an exchange selects."""
        return dv.DeviceRows(self._f32(x), self._derived) if self.cuda else self.to_host(x)

    def from_host(self, x: np.ndarray) -> torch.Tensor:
        """Received rows as a tensor on the device (on the CPU sharing the host array's memory; on a GPU copied
        through pinned memory without blocking the host)."""
        return self._t(x)
