"""The numpy backend's array functions between the products (:class:`HostArrays`, issue 52): the sums, bias
additions, ReLUs and their gradients, column sums and dots that the layers (GIN's MLP, SAGE's two terms,
GAT's bias) once wrote as numpy expressions: single-threaded, they held a share of the epoch that did not
shrink with ``--threads``. Here they are numba kernels, serial (T = 1) and over T threads (the ``*_threads``
kernels, a ``prange`` over T chunks of rows), timed as the ``elementwise`` kernel.

Bits. The elementwise kernels compute each entry with the float32 operations of the numpy expression they
replace, in its order (``a + alpha * b``, then ``+ bias``, then ReLU as ``np.maximum(x, 0)``: +0 for -0,
NaN kept): the same bits as before, at every T (a row is one thread's). The column sums (:func:`colsum`) add
each column's rows in row order from zero in float32, which is what numpy's ``x.sum(0)`` does on a row-major
array (its pairwise summation runs along the contiguous axis only): numpy's bits, ~1.5x its speed, serially.
They and :meth:`HostArrays.vdot` (numpy's, BLAS's sdot on one thread) stay serial: numpy's bits need each
column summed in row order, and splitting the columns between threads (each thread reading part of every row)
measured 2-4x slower than one thread reading whole rows on the 2-core machine (40,486 x 256: 2.2-9.6 ms
against 1.1 ms); threads over fixed blocks of rows (partial sums added in block order) would scale, with bits
that differ from numpy's (a change of every loss with a bias).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from . import kernels, parallel
from .base import timed_on_host

# values below which a numba kernel runs serially: waking the pool costs ~10 µs on an idle core (and a
# scheduling slice, ms, on a busy one), ~20 µs of serial work; the results are the same
_PARALLEL_MIN = 1 << 14
_NO_ROWS = np.zeros((0, 0), np.float32)
_NO_BIAS = np.zeros(0, np.float32)


@numba.njit(cache=True, inline="always")
def _add_range(lo, hi, a, b, alpha, bias, relu, out):
    """Rows ``lo:hi`` of :func:`add_rows`: ``a + alpha * b`` (b: when it has rows), then ``+ bias`` (when it has
    entries), then ``max(., 0)`` as numpy's maximum (NaN kept, -0 to +0); each pass over a row in L1."""
    d = a.shape[1]
    zero = np.float32(0)
    for i in range(lo, hi):
        if b.shape[0] > 0:
            for k in range(d):
                out[i, k] = a[i, k] + alpha * b[i, k]
        else:
            for k in range(d):
                out[i, k] = a[i, k]
        if bias.size > 0:
            for k in range(d):
                out[i, k] = out[i, k] + bias[k]
        if relu:
            for k in range(d):
                v = out[i, k]
                out[i, k] = v if v > zero or v != v else zero


@numba.njit(cache=True, nogil=True)
def add_rows(a, b, alpha, bias, relu, out):
    """``out = relu?(a + alpha * b + bias)`` row by row, float32.

    a, out : (n, d) (out may be a or b itself); b : (n, d), or (0, 0): no b; alpha : float32;
    bias : (d,), or (0,): none; relu : bool.
    """
    _add_range(0, a.shape[0], a, b, alpha, bias, relu, out)
    return out


@numba.njit(cache=True, parallel=True, nogil=True)
def add_rows_threads(a, b, alpha, bias, relu, out, bounds):
    """:func:`add_rows` over the row chunks ``bounds``."""
    for c in numba.prange(bounds.size - 1):
        _add_range(bounds[c], bounds[c + 1], a, b, alpha, bias, relu, out)
    return out


@numba.njit(cache=True, nogil=True)
def colsum(x, out):
    """``out = x.sum(0)``: x (n, d) float32, out (d,) float32; each column's rows in order from zero (whole
    rows, vectorized across the columns)."""
    d = x.shape[1]
    acc = np.zeros(d, np.float32)
    for i in range(x.shape[0]):
        for k in range(d):
            acc[k] += x[i, k]
    out[:] = acc
    return out


@numba.njit(cache=True, parallel=True, nogil=True)
def copy_threads(src, out, r0, c0, bounds):
    """``out[r0:r0 + n, c0:c0 + d] = src`` (n, d) over the row chunks ``bounds`` (a parallel concatenate)."""
    d = src.shape[1]
    for c in numba.prange(bounds.size - 1):
        for i in range(bounds[c], bounds[c + 1]):
            for k in range(d):
                out[r0 + i, c0 + k] = src[i, k]
    return out


def _f32_2d(*xs: Any) -> bool:
    """Whether every x is a 2-D float32 numpy array (the kernels' operands; anything else: numpy's
    expression)."""
    return all(isinstance(x, np.ndarray) and x.ndim == 2 and x.dtype == np.float32 for x in xs)


def _row_major(x: np.ndarray) -> bool:
    """A 2-D array numpy sums down its columns row by row (its inner loop along contiguous columns)."""
    return x.shape[1] > 1 and x.strides[1] == x.itemsize and abs(x.strides[0]) >= x.shape[1] * x.itemsize


class HostArrays:
    """The array functions of :class:`.numpy.NumpyBackend` (see the module docstring): numba kernels, over
    ``self.threads`` threads where an array is big enough."""

    threads: int
    kernel_time: dict[str, float]

    def _wide(self, x: np.ndarray) -> bool:
        """Whether an elementwise kernel on ``x`` runs over the threads (big enough to pay the wake-up)."""
        return self.threads > 1 and x.size >= _PARALLEL_MIN

    def _rows(self, n: int) -> np.ndarray:
        """Even row chunks of the elementwise kernels (every row costs the same)."""
        return parallel.even_rows(n, self.threads)

    def asarray(self, x: Any) -> Any:
        """A host array (or CSR features) as this backend's: float32 dense arrays, CSR kept."""
        return x if sp.issparse(x) else np.asarray(x)

    def empty(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.empty(shape, np.float32)

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape, np.float32)

    def dense(self, h: Any) -> np.ndarray:
        """A dense float32 array of h (CSR first-layer inputs)."""
        return h.toarray() if sp.issparse(h) else h

    @timed_on_host("elementwise")
    def concat(self, arrays: list[np.ndarray], axis: int) -> np.ndarray:
        """numpy's concatenate; with threads, 2-D float32 arrays are copied over row chunks (the same
        values)."""
        if not (self.threads > 1 and axis in (0, 1) and _f32_2d(*arrays) and sum(a.size for a in arrays)
                >= _PARALLEL_MIN):
            return np.concatenate(arrays, axis=axis)
        if len({a.shape[1 - axis] for a in arrays}) != 1:  # shapes that do not join: numpy's error
            return np.concatenate(arrays, axis=axis)
        shape = [arrays[0].shape[0], arrays[0].shape[1]]
        shape[axis] = sum(a.shape[axis] for a in arrays)
        out = np.empty(tuple(shape), np.float32)
        at = 0
        for a in arrays:
            r0, c0 = (at, 0) if axis == 0 else (0, at)
            copy_threads(a, out, r0, c0, self._rows(a.shape[0]))
            at += a.shape[axis]
        return out

    @timed_on_host("elementwise")
    def add(self, a: np.ndarray, b: np.ndarray | None = None, *, alpha: Any = 1.0, bias: np.ndarray | None = None,
            relu: bool = False, out: np.ndarray | None = None) -> np.ndarray:
        """``relu?(a + alpha * b + bias)``: a, b (n, d), alpha a number, bias (d,) added to every row; b and
        bias optional. Into ``out`` (n, d) when given (a or b itself, or a view of neither), else a new array.
        The bits of numpy's ``a + alpha * b + bias`` (then ``np.maximum(., 0)``) at every T."""
        return self._add(a, b, alpha, bias, relu, out)

    @timed_on_host("elementwise")
    def relu(self, x: np.ndarray) -> np.ndarray:
        """``np.maximum(x, 0)`` (a new array), the same bits."""
        return self._add(x, None, 1.0, None, True, None)

    def _add(self, a: Any, b: Any, alpha: Any, bias: Any, relu: bool, out: Any) -> Any:
        """:meth:`add` (untimed: :meth:`relu` shares it)."""
        if not (_f32_2d(a, *(x for x in (b, out) if x is not None)) and (bias is None or (
                isinstance(bias, np.ndarray) and bias.dtype == np.float32 and bias.shape == (a.shape[1],)))
                and (b is None or b.shape == a.shape) and (out is None or out.shape == a.shape)):
            return _add_numpy(a, b, alpha, bias, relu, out)
        args = (a, _NO_ROWS if b is None else b, np.float32(alpha), _NO_BIAS if bias is None else bias, bool(relu),
                np.empty(a.shape, np.float32) if out is None else out)
        return add_rows_threads(*args, self._rows(a.shape[0])) if self._wide(a) else add_rows(*args)

    @timed_on_host("elementwise")
    def relu_grad(self, g: np.ndarray, a: np.ndarray) -> np.ndarray:
        """In place: ``g *= a > 0`` (g (n, d) the gradient at a ReLU's output, a (n, d) its output or input):
        the gradient at its input, numpy's bits (a product by 1 or 0)."""
        if not (_f32_2d(g, a) and g.shape == a.shape):
            g *= a > 0
            return g
        if self._wide(g):
            return parallel.relu_dropout_grad(g, a, 1.0, self._rows(g.shape[0]))
        return kernels.relu_dropout_grad(g, a, 1.0)

    @timed_on_host("elementwise")
    def colsum(self, x: np.ndarray) -> np.ndarray:
        """(d,) column sums of x (n, d): numpy's ``x.sum(0)`` bit for bit (each column's rows in order from zero),
        serially at every T (see the module docstring)."""
        if not (_f32_2d(x) and _row_major(x)):
            return x.sum(0)
        return colsum(x, np.empty(x.shape[1], np.float32))

    @timed_on_host("elementwise")
    def vdot(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(1,) float32: the sum of a * b over every entry: numpy's ``vdot`` (BLAS's sdot, one BLAS thread at
        every T: the same bits for every T)."""
        return np.array([np.vdot(a, b)], np.float32)


def _add_numpy(a: Any, b: Any, alpha: Any, bias: Any, relu: bool, out: Any) -> Any:
    """:meth:`HostArrays.add` as numpy's expression (operands the kernels do not take)."""
    x = a if b is None else a + alpha * b
    if bias is not None:
        x = x + bias
    if relu:
        x = np.maximum(x, 0)
    if out is None:
        return np.array(x, dtype=np.result_type(x), copy=x is a)
    out[...] = x
    return out
