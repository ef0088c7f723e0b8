"""Reading a store: validated memory-maps of single-chunk arrays."""

from __future__ import annotations

import json
import warnings
from dataclasses import fields
from functools import cached_property
from pathlib import Path

import numpy as np

from . import _layout
from ._schema import NODE_DTYPES, SCHEMA_VERSION, Plan, RankBlock, StoreError, block_arrays
from ._writer import block_checksum

_BYTES_CODECS = ([{"name": "bytes", "configuration": {"endian": "little"}}], [{"name": "bytes"}])


def _meta(root: Path, name: str) -> dict:
    path = _layout.array_meta(root, name)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise StoreError(f"{path.parent}: array missing from the store") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StoreError(f"{path}: corrupt array metadata ({e})") from None


def memmap_array(root: str | Path, name: str, expected: str | None = None) -> np.ndarray:
    """Memory-map array ``name`` after checking that its metadata describes
    one uncompressed little-endian chunk of the expected dtype and that the
    chunk file has exactly the right size."""
    root = Path(root)
    meta = _meta(root, name)
    where = root / name
    shape = tuple(meta.get("shape", ()))
    try:
        dtype = np.dtype(meta["data_type"]).newbyteorder("<") if meta["data_type"] != "bool" else np.dtype(bool)
    except (KeyError, TypeError):
        raise StoreError(f"{where}: unsupported data type {meta.get('data_type')!r}") from None
    if expected is not None and dtype != np.dtype(expected):
        raise StoreError(f"{where}: data type {dtype} where {np.dtype(expected)} was expected")
    if meta.get("codecs") not in _BYTES_CODECS:
        raise StoreError(f"{where}: compressed or non-little-endian array; cannot memory-map it")
    grid = meta.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")
    if grid is None or tuple(grid) != tuple(max(1, s) for s in shape):
        raise StoreError(f"{where}: not a single-chunk array")
    if meta.get("chunk_key_encoding", {}).get("configuration", {}).get("separator", "/") != "/":
        raise StoreError(f"{where}: unexpected chunk key encoding")
    if 0 in shape:
        return np.zeros(shape, dtype=dtype)
    path = _layout.chunk_file(root, name, len(shape))
    expected_size = int(np.prod(shape)) * dtype.itemsize
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise StoreError(f"{path}: chunk file missing") from None
    if size != expected_size:
        raise StoreError(f"{path}: chunk file has {size} bytes, expected {expected_size} (truncated or corrupt)")
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def _plan(root: Path, prefix: str, expected_types: dict) -> Plan:
    return Plan(**{f.name: memmap_array(root, f"{prefix}{f.name}", expected_types[f.name]) for f in fields(Plan)})


def open_rank(path: str | Path, r: int, verify: bool = True) -> RankBlock:
    """Memory-map rank ``r``'s block of the store at ``path``.

    Reads the root attributes and rank ``r``'s arrays only. With ``verify``
    the block's checksum is recomputed (reads the block once) and compared
    with the one recorded at build time.
    """
    from ._schema import PLAN_DTYPES

    s = open_store(path)
    parts = s.attrs["parts"]
    if not 0 <= r < parts:
        raise StoreError(f"{path}: rank {r} out of range: the store has {parts} parts")
    root = Path(path)
    prefix = _layout.rank_array(r, "")
    plan = _plan(root, prefix, PLAN_DTYPES)
    transpose = _plan(root, prefix + "transpose/", PLAN_DTYPES) if s.attrs["directed"] else None
    node = {k: memmap_array(root, prefix + k, dt) for k, dt in NODE_DTYPES.items()}
    offsets = s.offsets
    block = RankBlock(rank=r, offset=int(offsets[r]), plan=plan, transpose=transpose, **node)
    if block.n_own != offsets[r + 1] - offsets[r]:
        raise StoreError(f"{root / prefix}: block has {block.n_own} rows, offsets say {offsets[r + 1] - offsets[r]}")
    if verify:
        want = s.attrs["checksums"][str(r)]
        if block_checksum(block_arrays(block)) != want:
            raise StoreError(f"{root / prefix}: checksum mismatch: rank {r}'s block is corrupt")
    return block


class Store:
    """A complete store, opened read-only. Use :func:`open_store`."""

    def __init__(self, path: Path, attrs: dict):
        self.path = path
        self.attrs = attrs

    def __repr__(self) -> str:
        a = self.attrs
        return f"<Store {self.path} dataset={a.get('dataset')} n={a.get('n')} parts={a.get('parts')} model={a.get('model')}>"

    @property
    def parts(self) -> int:
        return int(self.attrs["parts"])

    @property
    def models(self) -> list[str]:
        return list(self.attrs["models"])

    @cached_property
    def offsets(self) -> np.ndarray:
        """(P+1,) int64: rank r owns permuted ids ``offsets[r]:offsets[r+1]``."""
        return np.array(memmap_array(self.path, _layout.OFFSETS, "<i8"))

    def permutation(self) -> np.ndarray:
        """(n,) int64: original vertex index of each permuted (new) id."""
        return np.array(memmap_array(self.path, _layout.PERMUTATION, "<i8"))

    def partition(self, model: str) -> np.ndarray:
        """(n,) int32: part of every original vertex index under ``model``."""
        if model not in self.models:
            raise StoreError(f"{self.path}: no partition for model {model!r}; the store has {', '.join(self.models)}")
        return np.array(memmap_array(self.path, _layout.partition_array(model), "<i4"))

    def rank(self, r: int, verify: bool = True) -> RankBlock:
        """Memory-mapped block of rank ``r`` (see :func:`open_rank`)."""
        return open_rank(self.path, r, verify=verify)

    def quality(self):
        """Quality of every model as an xarray Dataset (dims model, part, sender, receiver)."""
        import xarray as xr
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
            return xr.open_zarr(str(self.path), group=_layout.QUALITY, zarr_format=3, consolidated=False).load()

    def graph(self):
        """The input graph's pattern (no self loops), original vertex order,
        as a csr_matrix: what the edge and random-walk samplers walk on."""
        import scipy.sparse as sp
        indptr = np.array(memmap_array(self.path, _layout.graph_array("indptr"), "<i8"))
        indices = np.array(memmap_array(self.path, _layout.graph_array("indices"), "<i4"))
        n = indptr.size - 1
        return sp.csr_matrix((np.ones(indices.size, np.float32), indices, indptr), shape=(n, n))

    def minibatch(self):
        """Mini-batch quality (xarray Dataset) when the store has an ``shp`` model, else None."""
        import xarray as xr
        if not (self.path / _layout.MINIBATCH / "zarr.json").exists():
            return None
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
            return xr.open_zarr(str(self.path), group=_layout.MINIBATCH, zarr_format=3, consolidated=False).load()

    def nodes(self):
        """Node data in original vertex order as an xarray Dataset (lazy)."""
        import xarray as xr
        return xr.open_zarr(str(self.path), group=_layout.NODES, zarr_format=3, consolidated=False)


def open_store(path: str | Path) -> Store:
    """Open a complete store; raise :class:`StoreError` for anything else."""
    path = Path(path)
    meta_path = path / _layout.ROOT_META
    if not path.exists():
        raise StoreError(f"{path}: store not found")
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise StoreError(f"{path}: not a store (no {_layout.ROOT_META})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StoreError(f"{meta_path}: corrupt ({e})") from None
    attrs = meta.get("attributes", {})
    if not attrs.get("complete"):
        raise StoreError(f"{path}: incomplete store (its build did not finish)")
    if attrs.get("schema_version") != SCHEMA_VERSION:
        raise StoreError(f"{path}: schema version {attrs.get('schema_version')}, this version reads {SCHEMA_VERSION}")
    return Store(path, attrs)
