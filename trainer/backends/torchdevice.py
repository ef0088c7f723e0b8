"""The device side of the torch backend (:mod:`.torch`): host arrays to the device and back through pinned
(page-locked) memory, device tensors derived once per host object, and kernel time measured with CUDA events
on a GPU (its kernels run asynchronously: a host clock would time their launch) and with the host's clock on
the CPU."""

from __future__ import annotations

import functools
import os
import warnings
import weakref
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import numpy as np
import scipy.sparse as sp
import torch

from .base import timed_on_host

_F = TypeVar("_F", bound=Callable[..., Any])


def threads_of_rank() -> int:
    """The rank's share of the cores (share_cores' OMP_NUM_THREADS), 1 when unset or unreadable."""
    try:
        return max(1, int(os.environ.get("OMP_NUM_THREADS", "1")))
    except ValueError:
        return 1


def timed(kernel: str) -> Callable[[_F], _F]:
    """Add a method's time to ``kernel``'s (:meth:`.torch.TorchBackend.take_kernel_time`): its object has
    ``_events`` (time with CUDA events, read later from ``_pending``), else the host's clock
    (:func:`.base.timed_on_host`) into ``kernel_time``."""
    def wrap(f: _F) -> _F:
        on_host = timed_on_host(kernel)(f)

        @functools.wraps(f)
        def timed(self, *args, **kwargs):
            if not self._events:
                return on_host(self, *args, **kwargs)
            start = torch.cuda.Event(enable_timing=True)
            start.record()
            try:
                return f(self, *args, **kwargs)
            finally:
                end = torch.cuda.Event(enable_timing=True)
                end.record()
                self._pending.append((kernel, start, end))
        return cast(_F, timed)
    return wrap


class DeviceCache:
    """Device tensors derived from host objects, computed once per object: id -> (the object, weakly; value);
    an entry leaves with its object (mini-batch views make new arrays every step)."""

    def __init__(self) -> None:
        self._d: dict[tuple[int, ...], tuple[tuple[weakref.ref, ...], Any]] = {}

    def get(self, objs: tuple[Any, ...], kind: str, make: Callable[[], Any]) -> Any:
        key = (*map(id, objs), hash(kind))
        hit = self._d.get(key)
        if hit is not None and all(r() is o for r, o in zip(hit[0], objs)):
            return hit[1]
        value = make()
        try:
            refs = tuple(weakref.ref(o) for o in objs)
        except TypeError:  # not weakly referable: not cached
            return value
        self._d[key] = (refs, value)
        for o in objs:
            weakref.finalize(o, self._d.pop, key, None)
        return value

    def __len__(self) -> int:
        return len(self._d)




def upload(a: np.ndarray, device: torch.device) -> torch.Tensor:
    """A host array on ``device`` (bool as uint8): on the CPU sharing its memory (a read-only array is copied:
    a tensor could write through it); on a GPU through pinned memory, without blocking the host (torch's host
    allocator does not reuse the pinned block before the copy ends)."""
    a = np.ascontiguousarray(a if a.dtype != np.bool_ else a.astype(np.uint8))
    if device.type == "cpu":
        return torch.from_numpy(a if a.flags.writeable else a.copy())
    staged = torch.empty(a.shape, dtype=torch.from_numpy(np.empty(0, a.dtype)).dtype, pin_memory=True)
    staged.numpy()[...] = a
    return staged.to(device, non_blocking=True)


def download(x: torch.Tensor) -> np.ndarray:
    """A host array of tensor x (float16 as float32): on the CPU sharing the tensor's memory; from a GPU a copy
    in pinned memory (what MPI sends from), after the device's stream has made it."""
    x = x.detach()
    if x.dtype == torch.float16:
        x = x.to(torch.float32)
    if x.device.type == "cpu":
        return x.numpy()
    out = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
    out.copy_(x, non_blocking=True)
    torch.cuda.current_stream(x.device).synchronize()
    return out.numpy()


def sparse_csr(m: sp.spmatrix | sp.sparray, device: torch.device) -> torch.Tensor:
    """A scipy CSR matrix as a torch sparse CSR tensor on ``device`` (float32 values)."""
    m = sp.csr_matrix(m)
    idx = np.int32 if m.indices.dtype == np.int32 and m.indptr.dtype == np.int32 else np.int64
    with warnings.catch_warnings():  # torch says once a process that sparse CSR is "in beta"
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
        # a scipy CSR matrix is valid: torch's own check would cost a pass over it each conversion
        return torch.sparse_csr_tensor(upload(np.asarray(m.indptr, idx), device),
                                       upload(np.asarray(m.indices, idx), device),
                                       upload(np.asarray(m.data, np.float32), device), size=m.shape,
                                       device=device, check_invariants=False)


def csr_edges(csr: sp.csr_matrix, rows: np.ndarray | None, device: torch.device
              ) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """(positions, rows (E,), columns (E,)) int64 on ``device`` of the stored entries of ``rows`` of ``csr``,
    row by row; positions (E,) into the matrix's entries, or ``slice(None)`` for every row (``rows`` None)."""
    if rows is None:
        erow = np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))
        return slice(None), upload(erow, device), upload(np.asarray(csr.indices, np.int64), device)
    r = np.asarray(rows, np.int64)
    lo, hi = csr.indptr[r].astype(np.int64), csr.indptr[r + 1].astype(np.int64)
    deg = hi - lo
    pos = np.repeat(lo - np.concatenate([[0], np.cumsum(deg)[:-1]]), deg) + np.arange(deg.sum())
    return (upload(pos, device), upload(np.repeat(r, deg), device),
            upload(np.asarray(csr.indices, np.int64)[pos], device))


def int_pair(a: int, b: int, device: torch.device) -> torch.Tensor:
    """(2,) int64 [a, b] on ``device``, written by two fills there (no copy from the host, no wait)."""
    out = torch.empty(2, dtype=torch.int64, device=device)
    out[0] = a
    out[1] = b
    return out


class LastUpload:
    """The device copy of the last host array of each kind, reused while the next array of that kind has the same
    values (the loss's rows and weights: new arrays every step, the same values in full batch)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._last: dict[str, tuple[np.ndarray, torch.Tensor]] = {}

    def get(self, kind: str, a: np.ndarray, dtype: type) -> torch.Tensor:
        """``a`` as ``dtype`` on the device (the last copy when its values are ``a``'s)."""
        prev = self._last.get(kind)
        if prev is not None and prev[0].shape == np.shape(a) and np.array_equal(prev[0], a):
            return prev[1]
        t = upload(np.asarray(a, dtype), self.device)
        self._last[kind] = (np.array(a, copy=True), t)
        return t


class DeviceRows:
    """A device matrix as the exchange reads it: ``rows[idx]`` copies only the selected rows to the host (pinned,
    one gather on the device), so a rank with nothing to send copies nothing; ``np.asarray`` copies it whole
    (an exchange that sends every own row, bcast)."""

    def __init__(self, x: torch.Tensor, index: DeviceCache | None = None) -> None:
        self.x = x.detach()
        self.shape = tuple(self.x.shape)
        self.ndim = self.x.ndim
        self.dtype = np.dtype(np.float32)
        self.flags = SimpleNamespace(writeable=False, c_contiguous=False)  # a sender that wants an array copies it
        # the plans' row arrays on the device, once per array: the backend's cache, which outlives this matrix
        self._index = index if index is not None else DeviceCache()

    def __getitem__(self, idx: Any) -> np.ndarray:
        if isinstance(idx, np.ndarray):
            rows = self._index.get((idx,), "rows", lambda: upload(np.asarray(idx, np.int64), self.x.device))
            return download(self.x[rows])
        return download(self.x[idx])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = download(self.x)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __len__(self) -> int:
        return self.shape[0]
