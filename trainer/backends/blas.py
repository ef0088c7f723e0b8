"""The dense products' fixed blocks on numba's threads: numpy's own BLAS ``sgemm``, called from a numba kernel
once per block (issue 52).

The backend cuts a dense product into blocks whose bounds depend on the shapes alone
(:func:`.numpy.dense_blocks`): each block is one single-threaded BLAS call, so the bits do not depend on T.
Handing those blocks to Python threads (a ``ThreadPoolExecutor``) costs, per block, a GIL hand-off when the
thread comes back from BLAS and Python bytecode to slice and dispatch, and, per product, a wake-up of every
thread through Python's locks: on a 16-core machine the products got slower with every thread added
(issue 52's table). Here one numba kernel (``prange`` over the blocks, the GIL released) calls the very
``cblas_sgemm`` numpy's ``matmul`` calls, with the arguments ``matmul`` gives it for that block: the bits of
every block are numpy's (tested), and one parallel region replaces T Python threads.

The symbol is looked up in the BLAS library numpy loaded (``/proc/self/maps``): numpy's wheels bundle OpenBLAS
with 64-bit integers (``scipy_cblas_sgemm64_``, numpy >= 2; ``cblas_sgemm64_`` before). Where none is found
(another platform, a numpy built against a 32-bit-integer BLAS) :data:`AVAILABLE` is False and the backend
keeps its Python threads (the same blocks, so the same bits for every T there too).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba import types

SYMBOLS = ("scipy_cblas_sgemm64_", "cblas_sgemm64_")  # numpy's bundled OpenBLAS, ILP64 (numpy >= 2, then 1.2x)
_NAME = "shgcn_cblas_sgemm64"  # the name the kernels link against (registered with LLVM: cache-safe, no address)
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
_I64, _F32, _PTR = types.int64, types.float32, types.voidptr
_sgemm: Any = types.ExternalFunction(_NAME, types.void(types.int32, types.int32, types.int32, _I64, _I64, _I64, _F32,
                                                  _PTR, _I64, _PTR, _I64, _F32, _PTR, _I64))


def _blas_libraries() -> list[str]:
    """Paths of the shared libraries with 'blas' in their name that this process has loaded (numpy's first)."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    paths = {line.split()[-1] for line in lines if ".so" in line and "blas" in line.rsplit("/", 1)[-1].lower()}
    here = str(Path(np.__file__).parent)  # numpy's own wheel keeps its BLAS beside it (<site-packages>/numpy.libs)
    return sorted(paths, key=lambda p: (not p.startswith(here), p))


def _register() -> bool:
    """Find numpy's ILP64 ``cblas_sgemm`` and register it as :data:`_NAME` for the kernels; whether found."""
    import llvmlite.binding as llvm

    for path in _blas_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in SYMBOLS:
            fn = getattr(lib, sym, None)
            if fn is not None:
                llvm.add_symbol(_NAME, ctypes.cast(fn, ctypes.c_void_p).value)
                return True
    return False


AVAILABLE = _register()


def operand(x: np.ndarray) -> tuple[int, int] | None:
    """(transpose flag, leading dimension) of a 2D float32 array as a row-major BLAS operand: NoTrans for unit
    column stride (C order, row blocks of it), Trans for unit row stride (a transposed C array: ``W.T``); None
    for any other layout (the caller uses numpy's product)."""
    if x.dtype != np.float32 or x.ndim != 2 or not x.flags.aligned:
        return None
    s0, s1 = x.strides
    if s1 == 4 and s0 % 4 == 0 and s0 >= 4 * max(1, x.shape[1]):
        return NO_TRANS, s0 // 4
    if s0 == 4 and s1 % 4 == 0 and s1 >= 4 * max(1, x.shape[0]):
        return TRANS, s1 // 4
    return None


@numba.njit(cache=True, inline="always")
def _at(x, offset):
    """The address ``offset`` bytes into x's data (uint64 arithmetic: numba turns uint64 + int64 into float64)."""
    return x.ctypes.data + np.uint64(offset)


@numba.njit(cache=True, inline="always")
def _block(lo, hi, a, ta, lda, b, tb, ldb, out):
    """out[lo:hi] = a[lo:hi] @ b: one sgemm, as numpy's matmul calls it for that block."""
    k, n = b.shape
    _sgemm(ROW_MAJOR, ta, tb, hi - lo, n, k, np.float32(1), _at(a, lo * a.strides[0]), lda, _at(b, 0), ldb,
           np.float32(0), _at(out, lo * out.strides[0]), out.strides[0] // 4)


@numba.njit(cache=True, inline="always")
def _block_tn(i, lo, hi, a, ta, lda, b, tb, ldb, out, parts):
    """Block i of aᵀ b: a[lo:hi]ᵀ b[lo:hi] into ``out`` (block 0) or ``parts[i - 1]``; ``ta`` is the flag of
    a[lo:hi]ᵀ (:func:`tn_operand`)."""
    m, n = out.shape
    c = _at(out, 0) if i == 0 else _at(parts, (i - 1) * parts.strides[0])
    _sgemm(ROW_MAJOR, ta, tb, m, n, hi - lo, np.float32(1), _at(a, lo * a.strides[0]), lda, _at(b, lo * b.strides[0]),
           ldb, np.float32(0), c, n)


def tn_operand(a: np.ndarray) -> tuple[int, int] | None:
    """(flag, leading dimension) of ``a``ᵀ as a row-major operand (``a`` C order: Trans over its rows)."""
    op = operand(a)
    return None if op is None else (TRANS if op[0] == NO_TRANS else NO_TRANS, op[1])


@numba.njit(cache=True, nogil=True)
def gemm(a, ta, lda, b, tb, ldb, out, size):
    """``out = a @ b`` in blocks of ``size`` rows of a, one after the other (T = 1)."""
    n = a.shape[0]
    for i in range((n + size - 1) // size):
        _block(i * size, min(i * size + size, n), a, ta, lda, b, tb, ldb, out)
    return out


@numba.njit(cache=True, nogil=True, parallel=True)
def gemm_threads(a, ta, lda, b, tb, ldb, out, size):
    """:func:`gemm` with the blocks over numba's threads (the same calls: the same bits)."""
    n = a.shape[0]
    for i in numba.prange((n + size - 1) // size):
        _block(i * size, min(i * size + size, n), a, ta, lda, b, tb, ldb, out)
    return out


@numba.njit(cache=True, nogil=True)
def gemm_tn(a, ta, lda, b, tb, ldb, out, parts, size):
    """The blocks of ``aᵀ b`` over ``size`` rows of a and b, one after the other (T = 1): block 0 into out,
    block i into parts[i - 1] (the caller sums them in block order)."""
    n = a.shape[0]
    for i in range((n + size - 1) // size):
        _block_tn(i, i * size, min(i * size + size, n), a, ta, lda, b, tb, ldb, out, parts)
    return out


@numba.njit(cache=True, nogil=True, parallel=True)
def gemm_tn_threads(a, ta, lda, b, tb, ldb, out, parts, size):
    """:func:`gemm_tn` with the blocks over numba's threads."""
    n = a.shape[0]
    for i in numba.prange((n + size - 1) // size):
        _block_tn(i, i * size, min(i * size + size, n), a, ta, lda, b, tb, ldb, out, parts)
    return out
