"""Writing one rank's block piece by piece: each array's metadata first
(its whole shape known), then its single chunk file appended to in pieces,
so that the writer holds one piece, not the rank's rows (a rank of a
2-part store is half the graph).

The files are those :func:`._arrays.write_array` writes: one uncompressed
little-endian chunk in the default key encoding (``NAME/c/0``), the bytes
of the array in C order; the block's checksum is :func:`._arrays.block_checksum`
over the written arrays, memory-mapped back (their pages released as they are hashed), in :func:`._schema.block_arrays`'
order. So a block written here is byte for byte the block
:func:`._arrays.write_rank` writes from the joined arrays (tested).
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np

from . import _layout
from ._arrays import _check_abort, array_dims, block_checksum, create_one_chunk, os_error
from ._reader import memmap_array
from ._schema import StoreError, block_array_names


class ArrayStream:
    """One array of a rank, written in pieces along its first axis."""

    def __init__(self, root: Path, name: str, shape: tuple[int, ...], dtype: np.dtype):
        self.root, self.name, self.shape = root, name, tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).itemsize > 1 else np.dtype(dtype)
        self.rows = 0
        self._file: BinaryIO | None = None
        try:
            create_one_chunk(root, name, self.shape, self.dtype, array_dims(name, len(self.shape)))
            if 0 not in self.shape:
                path = _layout.chunk_file(root, name, len(self.shape))
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(path, "wb")  # noqa: SIM115 (closed by close())
        except OSError as e:
            raise os_error(root, e) from None

    def write(self, piece: np.ndarray) -> None:
        """Append ``piece`` (its first axis: the next rows; the other axes the array's)."""
        _check_abort()
        piece = np.ascontiguousarray(piece, dtype=self.dtype)
        if piece.shape[1:] != self.shape[1:] or self.rows + piece.shape[0] > self.shape[0]:
            raise ValueError(f"{self.name}: a piece of shape {piece.shape} does not fit {self.shape} "
                             f"after {self.rows} rows")
        if piece.size and self._file is not None:
            try:
                self._file.write(piece.view(np.uint8).reshape(-1).data)
            except OSError as e:
                raise os_error(self.root, e) from None
        self.rows += piece.shape[0]

    def close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def close(self) -> None:
        self.close_file()
        if self.rows != self.shape[0]:
            raise ValueError(f"{self.name}: {self.rows} rows written of {self.shape[0]}")


class RankStreams:
    """Rank ``r``'s arrays, each opened with :meth:`open` (or written whole
    with :meth:`put`); :meth:`finish` closes them and returns the block's
    checksum. Use as a context manager: an error closes the files."""

    def __init__(self, root: str | Path, r: int):
        self.root, self.r = Path(root), r
        self.streams: dict[str, ArrayStream] = {}

    def open(self, name: str, shape: tuple[int, ...], dtype) -> ArrayStream:
        s = ArrayStream(self.root, _layout.rank_array(self.r, name), shape, dtype)
        self.streams[name] = s
        return s

    def put(self, name: str, arr: np.ndarray) -> None:
        arr = np.asarray(arr)
        s = self.open(name, arr.shape, arr.dtype)
        s.write(arr)

    def finish(self) -> str:
        """Close every array; the checksum of the block as stored."""
        for s in self.streams.values():
            s.close()
        order = block_array_names("transpose/indptr" in self.streams)
        missing = [n for n in order if n not in self.streams]
        if missing or len(order) != len(self.streams):
            raise StoreError(f"rank {self.r}: block arrays missing {missing} or unexpected "
                             f"{sorted(set(self.streams) - set(order))}")
        # block_checksum releases a memory-mapped array's pages as it hashes: the writer never holds the block
        return block_checksum({n: memmap_array(self.root, _layout.rank_array(self.r, n)) for n in order})

    def __enter__(self) -> RankStreams:
        return self

    def __exit__(self, *exc) -> None:
        for s in self.streams.values():
            s.close_file()
