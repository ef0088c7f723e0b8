"""Writing one array of a store: uncompressed, one chunk, little-endian (so
that a reader can memory-map the chunk file), with its checksum; and the
pieces the workers write in parallel (a rank's block, a graph block, node
rows). A build interrupted in this process (:data:`ABORT`) stops before its
next write."""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import threading
from pathlib import Path

import numpy as np
import zarr

from . import _layout
from ._schema import RankBlock, StoreError, block_arrays

# set on Ctrl-C: writer tasks still running in this process stop before their next write
ABORT = threading.Event()


def _check_abort() -> None:
    if ABORT.is_set():
        raise StoreError("the build was interrupted")


_DIMS = {"indptr": ("row_ptr",), "indices": ("nnz",), "data": ("nnz",), "send_ptr": ("rank_ptr",),
         "send_rows": ("send",), "recv_ptr": ("rank_ptr",), "recv_ids": ("recv",), "features": ("row", "feature"),
         "labels": ("row",), "train_mask": ("row",), "val_mask": ("row",), "test_mask": ("row",),
         "node_index": ("row",)}


def array_dims(name: str, ndim: int) -> tuple[str, ...]:
    """The dimension names of a block's array ``name`` (by its last path part)."""
    dims = _DIMS.get(name.rsplit("/", 1)[-1], tuple(f"dim_{i}" for i in range(ndim)))
    if len(dims) == 1 and ndim == 2:  # multi-label targets: one column per class
        dims = (*dims, "class")
    return dims


def write_array(root: str | Path, name: str, arr: np.ndarray, dims: tuple[str, ...] | None = None) -> str:
    """Write ``arr`` uncompressed, as one chunk, little-endian, so that a
    reader can memory-map the chunk file; returns its checksum."""
    _check_abort()
    arr = np.ascontiguousarray(arr)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if dims is None:
        dims = array_dims(name, arr.ndim)
    try:
        z = create_one_chunk(root, name, arr.shape, arr.dtype, dims)
        if arr.size:
            z[...] = arr
    except OSError as e:
        raise os_error(Path(root), e) from None
    return array_checksum(arr)


def create_one_chunk(root: str | Path, name: str, shape: tuple[int, ...], dtype: np.dtype,
                     dims: tuple[str, ...]) -> zarr.Array:
    """The metadata of an uncompressed, one-chunk, little-endian array (its chunk not written)."""
    return zarr.create_array(store=str(root), name=name, shape=shape, chunks=tuple(max(1, s) for s in shape),
                             dtype=dtype, compressors=None, filters=None, fill_value=0, dimension_names=dims,
                             config={"write_empty_chunks": True}, zarr_format=3, overwrite=True)


def os_error(root: Path, e: OSError) -> StoreError:
    if e.errno == errno.ENOSPC:
        return StoreError(f"{root.parent}: no space left on the device while writing the store")
    if e.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
        return StoreError(f"{root.parent}: cannot write the store ({os.strerror(e.errno)})")
    return StoreError(f"{root}: cannot write the store ({e})")


def array_checksum(a: np.ndarray) -> str:
    """sha256 over an array's dtype, shape and bytes."""
    h = hashlib.sha256(f"{a.dtype.str}:{a.shape};".encode())
    _hash_bytes(h, a)
    return h.hexdigest()


HASH_SLICE = 64 << 20  # bytes hashed between two releases of a memory-mapped array's pages


def release_pages(*arrays: np.ndarray) -> None:
    """Drop the pages of memory-mapped arrays (``np.memmap``, slices of one included) from this process's
    resident memory: they stay in the page cache, and the next access reads them again. Other arrays are left
    alone. A rank reads its block once (the checksum, the split of its plan) and keeps what it computes with."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    for a in arrays:
        m = getattr(a, "_mmap", None) if isinstance(a, np.memmap) else None
        if advice is not None and m is not None and not m.closed:
            m.madvise(advice)


def _hash_bytes(h, a: np.ndarray) -> None:
    """``h.update`` with the bytes of ``a`` (C order), :data:`HASH_SLICE` at a time, releasing a memory-mapped
    ``a``'s pages after each slice (hashing a block holds a slice of it, not the block)."""
    if not a.size:
        return
    flat = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    for start in range(0, flat.size, HASH_SLICE):
        h.update(flat[start:start + HASH_SLICE].data)
        release_pages(a)


def block_checksum(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the names, shapes, dtypes and bytes of a block's arrays."""
    h = hashlib.sha256()
    for name, a in arrays.items():
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        _hash_bytes(h, a)
    return h.hexdigest()


def write_rank(root: str | Path, block: RankBlock) -> str:
    """Write one rank's block; returns its checksum. Safe to run for
    different ranks in parallel (Dask tasks ``write-rank``)."""
    arrays = block_arrays(block)
    for name, a in arrays.items():
        write_array(root, _layout.rank_array(block.rank, name), a)
    return block_checksum(arrays)


def write_graph_block(root: str | Path, b: int, indptr: np.ndarray, indices: np.ndarray) -> str:
    """Row block ``b`` of the input graph's pattern (a ``write-graph`` task);
    returns its checksum."""
    sums = [write_array(root, _layout.graph_block(b, "indptr"), np.asarray(indptr, np.int64)),
            write_array(root, _layout.graph_block(b, "indices"), np.asarray(indices, np.int32))]
    return hashlib.sha256("".join(sums).encode()).hexdigest()


NODE_ARRAYS = {"features": ("node", "feature"), "labels": ("node",), "train_mask": ("node",),
               "val_mask": ("node",), "test_mask": ("node",)}


def write_node_rows(root: str | Path, lo: int, arrays: dict[str, np.ndarray]) -> dict[str, str]:
    """Rows ``lo..`` of the node arrays (a ``write-nodes`` task; ``lo`` is a
    chunk boundary, so parallel tasks never share a chunk). Returns the
    checksum of every piece as stored, by :func:`_layout.node_piece` key."""
    _check_abort()
    sums = {}
    try:
        g = zarr.open_group(str(root), path=_layout.NODES, mode="r+", zarr_format=3)
        for name, a in arrays.items():
            z = g[name]
            stored = np.ascontiguousarray(a, dtype=z.dtype)  # type: ignore[union-attr]
            z[lo:lo + a.shape[0]] = stored  # type: ignore[index]
            sums[_layout.node_piece(name, lo, lo + a.shape[0])] = array_checksum(stored)
    except OSError as e:
        raise os_error(Path(root), e) from None
    return sums
