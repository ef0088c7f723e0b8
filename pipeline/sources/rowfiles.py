"""Arrays on disk that row blocks read a slice of: the data of a ``.npy``
file, a member stored uncompressed in a ``.npz`` archive, or a raw file that
a reader wrote in a scratch directory while streaming a compressed input
(a gzip CSV, a deflated ``.npz`` member) once, block by block.

A :class:`RowFile` is a file name, an offset, a data type and a shape: it
travels to the workers as those few values, and each ``nodes`` or edge task
memory-maps only the rows it needs, so no array is ever copied whole, nor
sent anywhere.
"""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import located

_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a zip member's local file header (30 bytes)
BLOCK_BYTES = 16 * 2**20  # a streamed member is read in blocks of about this size


@dataclass(frozen=True)
class RowFile:
    """A C-ordered array at ``offset`` of ``path`` (no header there).

    ``rf[lo:hi]`` reads rows lo..hi-1 into memory (an ndarray of ``dtype``);
    ``shape``, ``ndim``, ``dtype`` and ``len`` describe it without reading."""

    path: str
    offset: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a RowFile reads contiguous row ranges only (rf[lo:hi])")
        lo, hi, _ = key.indices(self.shape[0])
        hi = max(lo, hi)
        dt = np.dtype(self.dtype)
        row = int(np.prod(self.shape[1:], dtype=np.int64)) * dt.itemsize
        if hi == lo or row == 0:
            return np.zeros((hi - lo, *self.shape[1:]), dt)
        m = np.memmap(self.path, dtype=dt, mode="r", offset=self.offset + lo * row, shape=(hi - lo, *self.shape[1:]))
        return np.array(m)

    def row(self, i: int) -> RowFile:
        """Row ``i`` of a 2-D array as a 1-D RowFile (e.g. the sources of a (2, E) edge_index)."""
        size = int(np.prod(self.shape[1:], dtype=np.int64))
        return RowFile(self.path, self.offset + i * size * np.dtype(self.dtype).itemsize, self.dtype, self.shape[1:])

    def read(self) -> np.ndarray:
        return self[0:self.shape[0]]


def _header(f, where: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from a .npy header (the file positioned at its magic)."""
    try:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(f)
    except (ValueError, OSError, EOFError) as e:
        raise located(where, f"not a .npy array ({e})") from None
    if dtype.hasobject:
        raise located(where, "holds Python objects; only arrays of numbers are read")
    if fortran and len(shape) > 1:
        raise located(where, "is stored in Fortran order; save it C-ordered (np.ascontiguousarray)")
    return tuple(int(s) for s in shape), dtype


def npy_view(path: str | Path) -> RowFile:
    """The array of a .npy file, read in place."""
    p = str(path)
    try:
        with open(p, "rb") as f:
            shape, dtype = _header(f, p)
            offset = f.tell()
    except FileNotFoundError:
        raise located(p, "file not found") from None
    need = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if os.path.getsize(p) < need:
        raise located(p, f"truncated: the header says {shape} of {dtype} ({need:,} bytes), the file has "
                         f"{os.path.getsize(p):,}")
    return RowFile(p, offset, dtype.str, shape)


def _zip(path: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise located(path, "file not found") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise located(path, f"not a .npz archive ({e})") from None


def npz_keys(path: str) -> list[str]:
    """The arrays a .npz archive holds."""
    with _zip(path) as z:
        return [n[:-4] for n in z.namelist() if n.endswith(".npy")]


@dataclass(frozen=True)
class Member:
    """An array of a .npz archive: its shape and dtype, and a RowFile when it
    is stored uncompressed (``np.savez``), else None (``np.savez_compressed``:
    read it with :func:`member_blocks`)."""

    path: str
    key: str
    shape: tuple[int, ...]
    dtype: str
    view: RowFile | None


def member(path: str, key: str) -> Member:
    """Look at array ``key`` of a .npz archive (reads its header only)."""
    where = f"{path}[{key}]"
    with _zip(path) as z:
        try:
            info = z.getinfo(key + ".npy")
        except KeyError:
            raise located(path, f"has no array {key!r} (it holds {', '.join(npz_keys(path)) or 'nothing'})") from None
        with z.open(info) as f:
            shape, dtype = _header(f, where)
            header = f.tell()
    view = None
    if info.compress_type == zipfile.ZIP_STORED:
        with open(path, "rb") as f:
            f.seek(info.header_offset)
            fields = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
        start = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]  # name, extra field lengths
        view = RowFile(path, start + header, dtype.str, shape)
    return Member(path, key, shape, dtype.str, view)


def member_blocks(m: Member, start: int = 0, items: int | None = None,
                  block_items: int | None = None) -> Iterator[np.ndarray]:
    """The member's flat items ``start..start+items-1`` in blocks of
    ``block_items``, decompressed as a stream (memory: one block)."""
    dt = np.dtype(m.dtype)
    total = int(np.prod(m.shape, dtype=np.int64))
    items = total - start if items is None else items
    per = block_items or max(1, BLOCK_BYTES // dt.itemsize)
    with _zip(m.path) as z, z.open(m.key + ".npy") as f:
        _header(f, f"{m.path}[{m.key}]")
        skip = start * dt.itemsize
        while skip:  # a deflated stream cannot seek: read past what comes before
            skip -= len(f.read(min(skip, BLOCK_BYTES))) or skip
        left = items
        while left > 0:
            k = min(per, left)
            buf = f.read(k * dt.itemsize)
            if len(buf) < k * dt.itemsize:
                raise located(m.path, f"array {m.key!r} is truncated (a damaged archive)")
            left -= k
            yield np.frombuffer(buf, dt)


class RawWriter:
    """A raw C-ordered array written block by block into a scratch file; its
    :class:`RowFile` once done (the row count need not be known in advance)."""

    def __init__(self, path: str | Path, dtype, row_shape: tuple[int, ...] = ()):
        self.path, self.dtype, self.row_shape = str(path), np.dtype(dtype), tuple(row_shape)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "wb")
        self.rows = 0

    def write(self, block: np.ndarray) -> None:
        with np.errstate(over="ignore", invalid="ignore"):  # 1e39 -> float32 is inf: the ingest's finite check names it
            block = np.ascontiguousarray(block, dtype=self.dtype)
        if block.shape[1:] != self.row_shape:
            raise ValueError(f"rows of shape {block.shape[1:]}, expected {self.row_shape}")
        self._f.write(block.tobytes())
        self.rows += block.shape[0]

    def close(self) -> RowFile:
        self._f.close()
        return RowFile(self.path, 0, self.dtype.str, (self.rows, *self.row_shape))

    def __enter__(self) -> RawWriter:
        return self

    def __exit__(self, *exc) -> None:
        if not self._f.closed:
            self._f.close()


def materialize(m: Member, out: str | Path, dtype=None, check=None) -> RowFile:
    """The member as a RowFile: itself when stored uncompressed (and of
    ``dtype``, or no ``dtype`` asked), else streamed once into ``out``
    (converted to ``dtype``; ``check(block, first_item)`` may raise for bad
    values), block by block."""
    want = np.dtype(dtype or m.dtype)
    if m.view is not None and want == np.dtype(m.dtype) and check is None:
        return m.view
    row_shape = m.shape[1:]
    row_items = max(1, int(np.prod(row_shape, dtype=np.int64)))
    done = 0
    with RawWriter(out, want, row_shape) as w:
        per = max(1, BLOCK_BYTES // (row_items * np.dtype(m.dtype).itemsize)) * row_items
        for flat in member_blocks(m, block_items=per):
            block = flat.reshape(-1, *row_shape)
            if check is not None:
                check(block, done)
            w.write(block)
            done += block.shape[0]
        return w.close()
