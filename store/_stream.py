"""Writing one rank's block where each piece belongs: every array made at
its final shape first (its metadata, and its single chunk file sized with
nothing written), then filled at any offset by any task, so that no writer
holds the rank's rows (a rank of a 2-part store is half the graph) and no
piece waits anywhere for the rank's turn.

The files are those :func:`._arrays.write_array` writes: one uncompressed
little-endian chunk in the default key encoding (``NAME/c/0``), the bytes
of the array in C order; the block's checksum is :func:`._arrays.block_checksum`
over the written arrays, memory-mapped back (their pages released as they are
hashed), in :func:`._schema.block_arrays`' order. So a block written here is
byte for byte the block :func:`._arrays.write_rank` writes from the joined
arrays (tested).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import _layout
from ._arrays import _check_abort, array_dims, block_checksum, create_one_chunk, os_error
from ._reader import _meta as zarr_meta
from ._reader import memmap_array
from ._schema import block_array_names


class RankFiles:
    """Rank ``r``'s arrays made at their final shapes before any of their
    rows exists (:meth:`create`: the metadata, and a chunk file of the final
    size with nothing written: a sparse file, its blocks used as they are
    written), then filled at any offset, in any order, by any process
    (:meth:`write_at`), and hashed once every array is complete
    (:meth:`checksum`). The build's layout writes each row block's rows of a
    rank where they belong, so no piece waits in a temporary area; the bytes
    are those :class:`RankStreams` writes (tested)."""

    def __init__(self, root: str | Path, r: int):
        self.root, self.r = Path(root), r

    def _name(self, name: str) -> str:
        return _layout.rank_array(self.r, name)

    def create(self, name: str, shape: tuple[int, ...], dtype) -> None:
        """Array ``name`` of ``shape`` and ``dtype``, its chunk file sized, its bytes zeros until written."""
        dt = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).itemsize > 1 else np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        try:
            create_one_chunk(self.root, self._name(name), shape, dt, array_dims(name, len(shape)))
            if 0 not in shape:
                path = _layout.chunk_file(self.root, self._name(name), len(shape))
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "wb") as f:
                    f.truncate(int(np.prod(shape)) * dt.itemsize)
        except OSError as e:
            raise os_error(self.root, e) from None

    def put(self, name: str, arr: np.ndarray) -> None:
        """Array ``name`` created and written whole."""
        arr = np.asarray(arr)
        self.create(name, arr.shape, arr.dtype)
        self.write_at(name, 0, arr)

    def _file(self, name: str) -> tuple[Path, np.dtype, tuple[int, ...]]:
        meta = zarr_meta(self.root, self._name(name))
        shape = tuple(int(s) for s in meta["shape"])
        dt = np.dtype(meta["data_type"]) if meta["data_type"] != "bool" else np.dtype(bool)
        return _layout.chunk_file(self.root, self._name(name), len(shape)), dt.newbyteorder("<"), shape

    def write_at(self, name: str, start: int, piece: np.ndarray) -> None:
        """``piece`` written at row ``start`` of array ``name`` (its other axes the array's)."""
        _check_abort()
        path, dt, shape = self._file(name)
        piece = np.ascontiguousarray(piece, dtype=dt)
        if piece.shape[1:] != shape[1:] or start < 0 or start + piece.shape[0] > shape[0]:
            raise ValueError(f"{self._name(name)}: a piece of shape {piece.shape} at row {start} does not fit {shape}")
        if not piece.size:
            return
        row = int(np.prod(shape[1:], dtype=np.int64)) * dt.itemsize
        try:
            fd = os.open(path, os.O_WRONLY)
            try:
                view, at = memoryview(piece.view(np.uint8).reshape(-1).data), start * row
                while view.nbytes:  # pwrite may write less than asked (large writes, signals)
                    done = os.pwrite(fd, view, at)
                    view, at = view[done:], at + done
            finally:
                os.close(fd)
        except OSError as e:
            raise os_error(self.root, e) from None

    def checksum(self, transpose: bool) -> str:
        """The block's checksum, every array complete (``transpose``: a directed store's block)."""
        order = block_array_names(transpose)
        # block_checksum releases a memory-mapped array's pages as it hashes: the writer never holds the block
        return block_checksum({n: memmap_array(self.root, self._name(n)) for n in order})
