"""Freed memory back to the system at once (glibc's ``malloc``).

glibc serves a large allocation with its own ``mmap`` (returned to the
system when freed) only above a threshold that it raises, up to 32 MiB,
each time such a block is freed; below it, freed memory stays in the
process's heap and arenas (one per worker thread), where fragmentation keeps
it. A build frees arrays of a few MiB to a few hundred MiB all the time, so
its resident memory between stages was twice what it held (measured, R-MAT
scale 20: 888 MiB against 444 MiB with a fixed threshold). A fixed
threshold (``M_MMAP_THRESHOLD``, which also stops the raising) gives every
array of :data:`THRESHOLD` bytes or more back when it is freed. Only the
processes shgcn starts call it (``pipeline build``, the partitioner's child,
``shgcn-train``: an out-of-core rank's anonymous memory is then what it
holds, not what its allocator kept): a library call does not change its
caller's allocator.

Arrays below the threshold (a row block's piece of an edge chunk: tens of
KiB) still come from the heap and its arenas; :func:`trim` hands their free
pages back (``malloc_trim``, every arena): the build calls it where a stage
has let go of many of them, before the next peaks (the ingest's pieces,
before a partitioner's child starts).

A loop that makes the same temporaries every step wants the opposite: a
fresh ``mmap`` is zeroed page by page by the kernel each time it is touched
(a soc-slashdot0902 mini-batch step, P = 1: 25.8 ms with the 1 MiB threshold,
17.4 with the steps' pages reused; RESULTS, "Mini-batch training: where a
step's time goes").
:func:`reuse_freed_memory` hands back what is free, then keeps freed arrays
up to glibc's largest threshold in the heap for the next step's (``shgcn-train`` in
memory; out of core a rank's anonymous memory is the point, and it keeps the 1 MiB threshold).
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
M_MMAP_THRESHOLD = -3
THRESHOLD = 1 << 20
REUSE_THRESHOLD = 32 << 20  # the largest mmap threshold mallopt takes on 64-bit (HEAP_MAX_SIZE / 2)


def _mallopt():
    """glibc's ``mallopt``, or None where there is no glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


def return_freed_memory(threshold: int = THRESHOLD) -> bool:
    """Set glibc's mmap threshold to ``threshold`` bytes; False where there
    is no glibc (another libc, another system): nothing changes then."""
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, int(threshold)))


def reuse_freed_memory(threshold: int = REUSE_THRESHOLD) -> bool:
    """Give the free pages back (:func:`trim`), then serve arrays below ``threshold`` bytes from the heap and
    keep up to twice that free at its top (glibc's own dynamic limits, fixed): the steps of a loop reuse their
    temporaries' pages. What the process holds beyond its arrays is then bounded by the largest step's
    temporaries, not by what it freed before. False where there is no glibc (nothing changes)."""
    mallopt = _mallopt()
    if mallopt is None or not trim():
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, int(threshold))) and bool(mallopt(M_TRIM_THRESHOLD, 2 * int(threshold)))


def trim() -> bool:
    """Give the free pages of every malloc arena back to the system (glibc's
    ``malloc_trim(0)``); False where there is no glibc. Freed memory stays
    free either way: this lowers the process's resident memory, not what it holds."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        malloc_trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    malloc_trim.argtypes, malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    malloc_trim(0)
    return True
