"""Atomic writing of a store: everything goes into a hidden sibling directory,
which is renamed into place only after the root attributes (with
``complete: true``) are written. An interrupted build leaves at most a
``.NAME.partial-*`` directory, which :func:`store.open_store` never accepts."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
import warnings
from pathlib import Path

import numpy as np
import zarr

from . import _layout
from ._schema import SCHEMA_VERSION, RankBlock, StoreError, block_arrays


def write_array(root: str | Path, name: str, arr: np.ndarray) -> None:
    """Write ``arr`` uncompressed, as one chunk, little-endian, so that a
    reader can memory-map the chunk file."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    chunks = tuple(max(1, s) for s in arr.shape)
    z = zarr.create_array(store=str(root), name=name, shape=arr.shape, chunks=chunks, dtype=arr.dtype,
                          compressors=None, filters=None, fill_value=0,
                          config={"write_empty_chunks": True}, zarr_format=3, overwrite=True)
    if arr.size:
        z[...] = arr


def block_checksum(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the names, shapes, dtypes and bytes of a block's arrays."""
    h = hashlib.sha256()
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.view(np.uint8).reshape(-1).data if a.size else b"")
    return h.hexdigest()


def write_rank(root: str | Path, block: RankBlock) -> str:
    """Write one rank's block; returns its checksum. Safe to run for
    different ranks in parallel (Dask tasks ``write-rank``)."""
    arrays = block_arrays(block)
    for name, a in arrays.items():
        write_array(root, _layout.rank_array(block.rank, name), a)
    return block_checksum(arrays)


class StoreWriter:
    """Context manager that builds a store in a temporary sibling directory.

    >>> with StoreWriter("out.zarr", overwrite=False) as w:   # doctest: +SKIP
    ...     w.array("offsets", offsets)
    ...     w.commit(attrs)

    Leaving the block without :meth:`commit` (an exception) deletes the
    temporary directory; the destination is untouched.
    """

    def __init__(self, path: str | Path, overwrite: bool = False):
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise StoreError(f"{self.path}: already exists (pass --overwrite to replace it)")
        if self.path.parent.exists() and not self.path.parent.is_dir():
            raise StoreError(f"{self.path.parent}: not a directory")
        self.tmp = self.path.parent / f".{self.path.name}.partial-{uuid.uuid4().hex[:12]}"
        self.committed = False

    def __enter__(self) -> StoreWriter:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{self.path.parent}: cannot create the output directory ({e})") from None
        zarr.open_group(str(self.tmp), mode="w", zarr_format=3)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.committed:
            shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def root(self) -> str:
        return str(self.tmp)

    def write_partition(self, model: str, part: np.ndarray) -> None:
        """(n,) int32 part of every original vertex index under ``model``."""
        write_array(self.tmp, _layout.partition_array(model), np.asarray(part, np.int32))

    def write_permutation(self, perm: np.ndarray, offsets: np.ndarray) -> None:
        """(n,) new id -> original index, and the (P+1,) rank offsets."""
        write_array(self.tmp, _layout.PERMUTATION, np.asarray(perm, np.int64))
        write_array(self.tmp, _layout.OFFSETS, np.asarray(offsets, np.int64))

    def write_graph(self, indptr: np.ndarray, indices: np.ndarray) -> None:
        """The input graph's pattern (no self loops) in original vertex order."""
        write_array(self.tmp, _layout.graph_array("indptr"), np.asarray(indptr, np.int64))
        write_array(self.tmp, _layout.graph_array("indices"), np.asarray(indices, np.int32))

    def write_nodes(self, ds) -> None:
        """Node data in original order (xarray Dataset, dim ``node``)."""
        self._dataset(_layout.NODES, ds)

    def write_quality(self, ds) -> None:
        """Quality of every model (xarray Dataset, dim ``model``)."""
        self._dataset(_layout.QUALITY, ds)

    def write_minibatch(self, ds) -> None:
        """Mini-batch quality of every model (xarray Dataset)."""
        self._dataset(_layout.MINIBATCH, ds)

    def _dataset(self, group: str, ds) -> None:
        """Write an xarray Dataset as a sub-group (readable with ``xr.open_zarr``)."""
        with warnings.catch_warnings():
            # string coordinates (model names) have no final Zarr v3 spec yet
            warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
            ds.to_zarr(str(self.tmp), group=group, mode="w", zarr_format=3, consolidated=False)

    def commit(self, attrs: dict) -> None:
        """Write the root attributes, mark the store complete, move it into place."""
        attrs = {**attrs, "schema_version": SCHEMA_VERSION, "complete": True}
        json.dumps(attrs)  # fail here, not half-way, on a non-JSON value
        g = zarr.open_group(str(self.tmp), mode="r+", zarr_format=3)
        g.attrs.update(attrs)
        old = None
        if self.path.exists():
            old = self.path.parent / f".{self.path.name}.old-{uuid.uuid4().hex[:12]}"
            os.rename(self.path, old)
        os.rename(self.tmp, self.path)
        self.committed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
