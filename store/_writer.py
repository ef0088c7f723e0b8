"""Writing a store, atomically and without ever touching what is not ours.

A build writes into a hidden sibling ``.NAME.partial-<pid>-<id>``; the
commit swaps it into place in one atomic step (``renameat2``: exchange with
an old store, or rename without replacing). Partials never open as stores
(:func:`store.open_store` refuses their names), so after a kill at any
moment ``NAME`` holds the old store, the new one, or nothing, plus at most
one partial, which the next build to ``NAME`` removes.

While it runs, a build holds ``.NAME.lock`` (a kernel lock, :mod:`._lock`):
a second build to the same output stops at once. A store is never written
inside another store (the outer one's ``--overwrite`` would delete it).
``--overwrite`` replaces only a shgcn store that holds nothing but what a
store holds, or an empty directory, and the commit checks again that
``NAME`` is still what it was at the start: anything else that appeared
there is kept, and the new store stays in its partial, named in the message.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import uuid
import warnings
from pathlib import Path

import numpy as np
import zarr

from . import _layout
from ._arrays import ABORT, NODE_ARRAYS, _check_abort, array_checksum, os_error, write_array
from ._atomic import RENAME_EXCHANGE, RENAME_NOREPLACE, enclosing_store, foreign_entries, identity, is_store_dir, renameat2
from ._lock import OutputLock
from ._schema import SCHEMA_VERSION, StoreError
from ._tables import table_checksums

log = logging.getLogger(__name__)

NODE_CHUNK_BYTES = 1 << 25  # at most 32 MiB a chunk of a node array: what a write task holds at once per array


def node_chunk_rows(n: int, task_rows: int, row_bytes: int) -> int:
    """Rows per chunk of a node array of ``n`` rows of ``row_bytes`` each,
    written by tasks of ``task_rows`` rows (a power of two).

    Zarr stores an edge chunk at its full size, so a chunk taller than the
    array pads the file (Cora's 2,708 x 1,433 features took a 65,536-row
    chunk: 375 MB on disk and in memory for 15 MB of data): never taller
    than ``n``. Wide rows get a power-of-two fraction of ``task_rows``, so a
    task's rows stay whole chunks (parallel tasks never share one) and a
    chunk stays within :data:`NODE_CHUNK_BYTES`. Depends on the shape only,
    so the same inputs give the same store."""
    rows = max(1, task_rows)
    while rows > 1 and rows * max(1, row_bytes) > NODE_CHUNK_BYTES:  # a loop over at most 16 halvings
        rows //= 2
    return max(1, min(rows, n))

_ACTIVE: set[StoreWriter] = set()


def abort_all() -> bool:
    """Ctrl-C: stop this process's writes, remove the partial stores of the
    builds in it and release their locks. True when there was a partial store
    to remove: a write in flight may bring one back (or keep ``rmtree`` from
    removing a directory it was filling), so the caller calls again until this
    is False."""
    ABORT.set()
    found = False
    for w in list(_ACTIVE):
        found |= os.path.lexists(w.tmp)
        shutil.rmtree(w.tmp, ignore_errors=True)
        w._release_lock()
    return found


class StoreWriter:
    """Context manager that builds a store in a partial directory and commits
    it atomically (see the module docstring).

    >>> with StoreWriter("out.zarr", overwrite=False) as w:   # doctest: +SKIP
    ...     w.write_permutation(perm, offsets)
    ...     w.commit(attrs)

    Leaving the block without :meth:`commit` (an exception, Ctrl-C) deletes
    the partial directory; the destination is untouched.
    """

    def __init__(self, path: str | Path, overwrite: bool = False):
        raw = str(path)
        self.path = Path(path)
        if raw.strip() in ("", ".", "..", "/") or self.path.name in ("", ".", ".."):
            raise StoreError(f"--out {raw!r}: name a new directory for the store, e.g. stores/graph.zarr")
        self.path = self.path.absolute()
        self.overwrite = overwrite
        self._check_target()
        self.start_identity = identity(self.path)
        self.tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.tmp = self.path.parent / f".{self.path.name}.partial-{self.tag}"
        self.lock = self.path.parent / f".{self.path.name}.lock"
        self._lock = OutputLock(self.lock, self.path, self.tmp.name)
        self.committed = False
        self.sums: dict[str, str] = {}

    def _check_target(self) -> None:
        p = self.path
        if p.parent.exists() and not p.parent.is_dir():
            raise StoreError(f"{p.parent}: not a directory")
        outer = enclosing_store(p)
        if outer is not None:
            raise StoreError(f"{p}: inside the store {outer}; a store is never built inside another (that store's "
                             "--overwrite would delete it): choose a directory outside it")
        if not p.exists() and not p.is_symlink():
            return
        if not self.overwrite:
            raise StoreError(f"{p}: already exists (pass --overwrite to replace a store)")
        if p.is_symlink() or not p.is_dir():
            what = f"a link (to {os.readlink(p)})" if p.is_symlink() else "a file, not a shgcn store"
            raise StoreError(f"{p}: exists and is {what}; --overwrite replaces only a store or an empty directory, "
                             "so it is left as it is")
        if not is_store_dir(p) and any(p.iterdir()):
            raise StoreError(f"{p}: a directory that is not a shgcn store and is not empty; --overwrite replaces "
                             "only a store or an empty directory, so it is left as it is")
        extra = foreign_entries(p) if is_store_dir(p) else []
        if extra:
            raise StoreError(f"{p}: the store holds {extra[0].relative_to(p)}, which no store holds; --overwrite "
                             f"deletes only what a store contains, so {p} is left as it is (move that out first)")

    def __enter__(self) -> StoreWriter:
        ABORT.clear()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{self.path.parent}: cannot create the output directory ({e.strerror})") from None
        self._lock.acquire()
        try:
            self._remove_stale_partials()
            self.tmp.mkdir()
            zarr.open_group(str(self.tmp), mode="w", zarr_format=3)
        except OSError as e:  # a full disk as the partial store is begun: it goes too
            shutil.rmtree(self.tmp, ignore_errors=True)
            self._release_lock()
            raise os_error(self.tmp, e) from None
        _ACTIVE.add(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        _ACTIVE.discard(self)
        try:
            if not self.committed:
                if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
                    ABORT.set()
                shutil.rmtree(self.tmp, ignore_errors=True)
        finally:
            self._release_lock()

    # --- the lock
    def _release_lock(self) -> None:
        self._lock.release()

    def _remove_stale_partials(self) -> None:
        """With the lock held, any partial of this store is a killed build's
        (nothing is ever built inside one: :func:`enclosing_store`)."""
        for p in self.path.parent.glob(f".{self.path.name}.partial-*"):
            if p.is_dir() and not p.is_symlink():
                log.warning("%s: removing the partial store of an earlier build that did not finish", p)
                shutil.rmtree(p, ignore_errors=True)

    # --- contents
    @property
    def root(self) -> str:
        return str(self.tmp)

    @property
    def work_dir(self) -> str:
        """Scratch space inside the partial (partitioner children's files):
        removed with it, also after a kill."""
        return str(self.tmp / ".work")

    def _array(self, name: str, arr: np.ndarray, dims: tuple[str, ...]) -> None:
        self.sums[name] = write_array(self.tmp, name, arr, dims)

    def write_partition(self, model: str, part: np.ndarray) -> None:
        """(n,) int32 part of every original vertex index under ``model``."""
        self._array(_layout.partition_array(model), np.asarray(part, np.int32), ("node",))

    def write_permutation(self, perm: np.ndarray, offsets: np.ndarray) -> None:
        """(n,) new id -> original index, and the (P+1,) rank offsets."""
        self._array(_layout.PERMUTATION, np.asarray(perm, np.int64), ("node",))
        self._array(_layout.OFFSETS, np.asarray(offsets, np.int64), ("rank_ptr",))

    def write_graph_bounds(self, bounds: np.ndarray, sums: list[str]) -> None:
        """Row bounds of the graph's blocks and the blocks' checksums."""
        self._array(_layout.graph_bounds(), np.asarray(bounds, np.int64), ("block_ptr",))
        for b, s in enumerate(sums):
            self.sums[_layout.graph_block(b, "")] = s

    def create_nodes(self, n: int, dim: int, chunk_rows: int, file_id: np.ndarray, part: np.ndarray, *,
                     feature_dtype: str = "float32", multi_label_classes: int | None = None) -> None:
        """The node arrays (filled by ``write-nodes`` tasks, one chunk of rows
        each), and the ``node``, ``file_id`` and ``part`` columns (O(n)).
        Features are float32, or float16 when asked; labels (n,) int32, or
        (n, C) bool for multi-label targets (``multi_label_classes`` C)."""
        g = zarr.open_group(str(self.tmp), mode="a", zarr_format=3).require_group(_layout.NODES)
        g.attrs.update({"description": "node data in original vertex order; file_id is the id in the input file"})
        dtypes: dict[str, np.dtype] = {"features": np.dtype(feature_dtype), "labels": np.dtype(np.int32),
                                       **dict.fromkeys(("train_mask", "val_mask", "test_mask"), np.dtype(bool))}
        shapes = {"features": (n, dim), "labels": (n,)}
        dims = dict(NODE_ARRAYS)
        if multi_label_classes is not None:
            dtypes["labels"], shapes["labels"] = np.dtype(bool), (n, multi_label_classes)
            dims["labels"] = ("node", "class")
        for name in NODE_ARRAYS:
            shape = shapes.get(name, (n,))
            rows = node_chunk_rows(n, chunk_rows, int(np.prod(shape[1:], dtype=np.int64)) * dtypes[name].itemsize)
            chunks = (rows, *(max(1, s) for s in shape[1:]))
            g.create_array(name, shape=shape, chunks=chunks, dtype=dtypes[name], dimension_names=dims[name],
                           fill_value=0, compressors=None)
        for name, values in (("node", np.arange(n, dtype=np.int64)), ("file_id", np.asarray(file_id, np.int64)),
                             ("part", np.asarray(part, np.int32))):
            z = g.create_array(name, shape=(n,), chunks=(node_chunk_rows(n, chunk_rows, values.itemsize),),
                               dtype=values.dtype, dimension_names=("node",), fill_value=0, compressors=None)
            z[...] = values
            self.sums[_layout.node_piece(name, 0, n)] = array_checksum(values)

    def record_node_sums(self, sums: dict[str, str]) -> None:
        """The checksums of the node arrays' pieces, as the ``write-nodes``
        tasks returned them (:func:`write_node_rows`)."""
        self.sums.update(sums)

    def write_quality(self, ds) -> None:
        """Quality of every model (xarray Dataset, dim ``model``)."""
        self._dataset(_layout.QUALITY, ds)

    def write_minibatch(self, ds) -> None:
        """Mini-batch quality of every model (xarray Dataset)."""
        self._dataset(_layout.MINIBATCH, ds)

    def _dataset(self, group: str, ds) -> None:
        """Write an xarray Dataset as a sub-group (readable with ``xr.open_zarr``).
        Model names are fixed-length UTF-32 (``fixed_length_utf32``, registered
        in zarr-extensions), never ``vlen-utf8``."""
        ds = ds.copy()
        for name, var in ds.variables.items():
            if var.dtype.kind in "OSU":
                ds[name] = var.astype(str)
        with _quiet_zarr():
            ds.to_zarr(str(self.tmp), group=group, mode="w", zarr_format=3, consolidated=False)
        # every array of the table as it reads back, for Store.verify (issue 51: info --verify covers the tables)
        self.sums = {k: v for k, v in self.sums.items() if not k.startswith(f"{group}/")}
        self.sums.update(table_checksums(self.tmp, group))

    # --- the commit
    def commit(self, attrs: dict) -> None:
        """Write the root attributes, consolidate the metadata, and swap the
        store into place (checking that nothing else appeared there)."""
        _check_abort()
        attrs = {**attrs, "schema_version": SCHEMA_VERSION, "complete": True,
                 "array_checksums": dict(sorted(self.sums.items()))}
        json.dumps(attrs)  # fail here, not half-way, on a non-JSON value
        try:
            g = zarr.open_group(str(self.tmp), mode="r+", zarr_format=3)
            g.attrs.update(attrs)
            shutil.rmtree(self.tmp / ".work", ignore_errors=True)
            with _quiet_zarr():
                zarr.consolidate_metadata(str(self.tmp), zarr_format=3)
        except OSError as e:
            raise os_error(self.tmp, e) from None
        now = identity(self.path)
        if now != self.start_identity or (now is not None and not self._replaceable()):
            kept = self.tmp.parent / f"{self.path.name}.new-{self.tag}"
            os.rename(self.tmp, kept)
            self.committed = True
            raise StoreError(f"{self.path}: something else appeared there during the build and was left as it is; "
                             f"the new store is at {kept}")
        self._swap(now is not None)
        self.committed = True

    def _replaceable(self) -> bool:
        """Still a store holding only what a store holds, or an empty directory."""
        p = self.path
        return p.is_dir() and ((is_store_dir(p) and not foreign_entries(p)) or not any(p.iterdir()))

    def _swap(self, exists: bool) -> None:
        try:
            renameat2(self.tmp, self.path, RENAME_EXCHANGE if exists else RENAME_NOREPLACE)
        except (OSError, AttributeError) as e:
            if isinstance(e, OSError) and e.errno == errno.EEXIST:
                raise StoreError(f"{self.path}: appeared during the build; the new store stays at {self.tmp}") from None
            if isinstance(e, OSError) and e.errno not in (errno.ENOSYS, errno.EINVAL):
                raise os_error(self.path, e) from None
            # no renameat2 here: two renames (a kill between them leaves the old store under .old-)
            old = self.path.parent / f".{self.path.name}.partial-old-{self.tag}"
            if exists:
                os.rename(self.path, old)
            os.rename(self.tmp, self.path)
            shutil.rmtree(old, ignore_errors=True)
            return
        if exists:  # the old store now sits under the partial's name: never a store, removed now or next time
            shutil.rmtree(self.tmp, ignore_errors=True)


@contextlib.contextmanager
def _quiet_zarr():
    """zarr-python warns about every extension data type (our model names are
    ``fixed_length_utf32``, registered in zarr-extensions) and about
    consolidated metadata (which xarray reads); both are deliberate here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*data type \(FixedLengthUTF32.*")
        warnings.filterwarnings("ignore", message=".*Consolidated metadata is currently not part.*")
        yield
