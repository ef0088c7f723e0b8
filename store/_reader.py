"""Reading a store: validated memory-maps of single-chunk arrays."""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import _layout
from ._arrays import array_checksum, block_checksum, release_pages
from ._schema import SCHEMA_VERSION, Plan, RankBlock, StoreError, block_arrays, node_dtypes
from ._tables import TABLES, UNREADABLE, table_checksums, verify_tables

if TYPE_CHECKING:
    from shgcn.core.epoch import PartitionCost

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
    node = {k: memmap_array(root, prefix + k, dt) for k, dt in node_dtypes(s.attrs).items()}
    offsets = s.offsets
    block = RankBlock(rank=r, offset=int(offsets[r]), plan=plan, transpose=transpose, **node)
    if block.n_own != offsets[r + 1] - offsets[r]:
        raise StoreError(f"{root / prefix}: block has {block.n_own} rows, offsets say {offsets[r + 1] - offsets[r]}")
    if verify:
        want = s.attrs.get("checksums", {}).get(str(r))
        if want is None:
            raise StoreError(f"{root / prefix}: no checksum recorded for rank {r}'s block (a damaged store)")
        if block_checksum(block_arrays(block)) != want:
            raise StoreError(f"{root / prefix}: checksum mismatch: rank {r}'s block is corrupt")
    for name, plan_ in (("", block.plan), ("transpose/", block.transpose)):
        if plan_ is not None:
            _check_plan(root / f"{prefix}{name}", plan_, r, offsets, int(s.attrs["n"]))
            release_pages(plan_.indices, plan_.indptr)
    _check_nodes(root / prefix, block)
    release_pages(*block_arrays(block).values())  # the checks read them; the trainer reads what it uses
    return block


_SLICE = 1 << 22  # rows a check reads at once (a block's row pointer is checked in slices, not copied whole)


def _check_plan(where: Path, p: Plan, r: int, offsets: np.ndarray, n: int) -> None:
    """Cheap bounds checks (also with ``verify=False``): a corrupt plan must
    stop with a message, not index out of bounds or hang an MPI job."""
    parts = offsets.size - 1
    n_own = int(offsets[r + 1] - offsets[r])
    halo = p.recv_ids.shape[0]

    def bad(what: str) -> StoreError:
        return StoreError(f"{where}: {what} (a corrupt block; the checksum would have caught it without --no-verify)")

    if p.indptr.shape[0] != n_own + 1 or p.indptr[0] != 0 or p.indptr[-1] != p.indices.shape[0] or \
            any(np.any(np.diff(p.indptr[lo:lo + _SLICE + 1]) < 0) for lo in range(0, n_own, _SLICE)):
        raise bad("indptr is not a CSR row pointer for its rows")
    if p.data.shape[0] != p.indices.shape[0]:
        raise bad("indices and data differ in length")
    if p.indices.shape[0] and (p.indices.min() < 0 or p.indices.max() >= n_own + halo):
        raise bad(f"a column index outside 0..{n_own + halo - 1}")
    for ptr, name, size in ((p.send_ptr, "send_ptr", p.send_rows.shape[0]), (p.recv_ptr, "recv_ptr", halo)):
        if ptr.shape[0] != parts + 1 or ptr[0] != 0 or ptr[-1] != size or np.any(np.diff(ptr) < 0):
            raise bad(f"{name} is not a pointer over {parts} ranks")
    if p.send_rows.shape[0] and (p.send_rows.min() < 0 or p.send_rows.max() >= n_own):
        raise bad(f"a row to send outside 0..{n_own - 1}")
    if halo and (p.recv_ids.min() < 0 or p.recv_ids.max() >= n):
        raise bad(f"a received id outside 0..{n - 1}")


def _check_nodes(where: Path, b: RankBlock) -> None:
    n_own = b.n_own
    for name in ("labels", "train_mask", "val_mask", "test_mask", "node_index"):
        if getattr(b, name).shape[0] != n_own:
            raise StoreError(f"{where / name}: {getattr(b, name).shape[0]} rows for a block of {n_own}")
    if b.features.ndim != 2 or b.features.shape[0] != n_own:
        raise StoreError(f"{where / 'features'}: shape {b.features.shape} for a block of {n_own} rows")


class Store:
    """A complete store, opened read-only. Use :func:`open_store`.

    Every array a reader depends on is checked against the checksum recorded
    at build time when it is read (``verify``, on by default)."""

    def __init__(self, path: Path, attrs: dict):
        self.path = path
        self.attrs = attrs

    def __repr__(self) -> str:
        a = self.attrs
        return (f"<Store {self.path} dataset={a.get('dataset')} n={a.get('n')} parts={a.get('parts')} "
                f"model={a.get('model')}>")

    @property
    def parts(self) -> int:
        return int(self.attrs["parts"])

    @property
    def models(self) -> list[str]:
        return list(self.attrs["models"])

    def _checked(self, name: str, expected: str, verify: bool = True) -> np.ndarray:
        a = np.array(memmap_array(self.path, name, expected))
        if verify:
            want = self.attrs.get("array_checksums", {}).get(name)
            if want is None:
                raise StoreError(f"{self.path / name}: no checksum recorded for this array (a damaged store)")
            if array_checksum(a) != want:
                raise StoreError(f"{self.path / name}: checksum mismatch: the array is corrupt")
        return a

    @cached_property
    def offsets(self) -> np.ndarray:
        """(P+1,) int64: rank r owns permuted ids ``offsets[r]:offsets[r+1]``."""
        off = self._checked(_layout.OFFSETS, "<i8")
        if off.size != self.parts + 1 or off[0] != 0 or off[-1] != self.attrs["n"] or np.any(np.diff(off) < 0):
            raise StoreError(f"{self.path / _layout.OFFSETS}: not the offsets of {self.parts} ranks")
        return off

    def permutation(self, verify: bool = True) -> np.ndarray:
        """(n,) int64: original vertex index of each permuted (new) id."""
        return self._checked(_layout.PERMUTATION, "<i8", verify)

    def partition(self, model: str, verify: bool = True) -> np.ndarray:
        """(n,) int32: part of every original vertex index under ``model``."""
        if model not in self.models:
            raise StoreError(f"{self.path}: no partition for model {model!r}; the store has {', '.join(self.models)}")
        return self._checked(_layout.partition_array(model), "<i4", verify)

    def rank(self, r: int, verify: bool = True) -> RankBlock:
        """Memory-mapped block of rank ``r`` (see :func:`open_rank`)."""
        return open_rank(self.path, r, verify=verify)

    def _dataset(self, group: str):
        import xarray as xr
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*data type \(FixedLengthUTF32.*")
            try:
                return xr.open_zarr(str(self.path), group=group, zarr_format=3).load()
            except UNREADABLE as e:  # a corrupt chunk: one line naming its array (issue 51)
                table_checksums(self.path, group)
                raise StoreError(f"{self.path / group}: cannot read the table ({e}): a damaged store") from None

    def quality(self):
        """Quality of every model as an xarray Dataset (dims model, part, sender, receiver)."""
        if not (self.path / _layout.QUALITY / _layout.ROOT_META).exists():
            raise StoreError(f"{self.path}: the store has no quality tables ({_layout.QUALITY}/ is missing: a "
                             "damaged store); rebuild it with pipeline build")
        ds = self._dataset(_layout.QUALITY)
        where = self.path / _layout.QUALITY / "model"
        try:  # a flipped byte decodes to another name, or to text pyarrow cannot wrap (its ArrowException)
            names = [str(m) for m in ds["model"].values]
        except Exception as e:  # noqa: BLE001 - whatever decoding the names raises, the chunk is corrupt
            raise StoreError(f"{where}: cannot read the model names ({type(e).__name__}): a corrupt chunk; "
                             "pipeline info --verify names every one") from None
        if sorted(names) != sorted(self.models):
            raise StoreError(f"{where}: the model names {names!r} are not the store's ({', '.join(self.models)}): a "
                             "corrupt chunk; pipeline info --verify names every one")
        return ds

    def graph(self, verify: bool = True):
        """The input graph's pattern (no self loops), original vertex order,
        as a csr_matrix: what the edge and random-walk samplers walk on."""
        import scipy.sparse as sp

        bounds = self._checked(_layout.graph_bounds(), "<i8", verify)
        n = int(self.attrs["n"])
        if bounds.size < 2 or bounds[0] != 0 or bounds[-1] != n or np.any(np.diff(bounds) < 0):
            raise StoreError(f"{self.path / _layout.graph_bounds()}: not the row bounds of {n} vertices")
        indptr_parts, indices_parts, off = [np.zeros(1, np.int64)], [], 0
        sums = self.attrs.get("array_checksums", {})
        for b in range(bounds.size - 1):  # a loop over row blocks
            ptr = np.array(memmap_array(self.path, _layout.graph_block(b, "indptr"), "<i8"))
            idx = np.array(memmap_array(self.path, _layout.graph_block(b, "indices"), "<i4"))
            if verify:
                key = _layout.graph_block(b, "")
                if key not in sums:
                    raise StoreError(f"{self.path / key}: no checksum recorded for this block (a damaged store)")
                if hashlib.sha256((array_checksum(ptr) + array_checksum(idx)).encode()).hexdigest() != sums[key]:
                    raise StoreError(f"{self.path / key}: checksum mismatch: the block is corrupt")
            if ptr.size != bounds[b + 1] - bounds[b] + 1 or ptr[0] != 0 or ptr[-1] != idx.size or \
                    np.any(np.diff(ptr) < 0) or (idx.size and (idx.min() < 0 or idx.max() >= n)):
                raise StoreError(f"{self.path / _layout.graph_block(b, '')}: inconsistent CSR block")
            indptr_parts.append(ptr[1:] + off)
            indices_parts.append(idx)
            off += idx.size
        indptr = np.concatenate(indptr_parts)
        indices = np.concatenate(indices_parts) if indices_parts else np.zeros(0, np.int32)
        return sp.csr_matrix((np.ones(indices.size, np.float32), indices, indptr), shape=(n, n))

    def graph_blocks(self, verify: bool = True) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The input graph's pattern as :meth:`graph` reads it, memory-mapped and not copied: per row block,
        (its first row, its indptr (rows + 1,) int64, its indices (nnz,) int32), views of the chunk files (the
        pages stay in the page cache, not in this process's anonymous memory). With ``verify`` each block's
        checksum is recomputed slice by slice, its pages released after each."""
        bounds = self._checked(_layout.graph_bounds(), "<i8", verify)
        n = int(self.attrs["n"])
        if bounds.size < 2 or bounds[0] != 0 or bounds[-1] != n or np.any(np.diff(bounds) < 0):
            raise StoreError(f"{self.path / _layout.graph_bounds()}: not the row bounds of {n} vertices")
        sums = self.attrs.get("array_checksums", {})
        out = []
        for b in range(bounds.size - 1):  # a loop over row blocks
            ptr = memmap_array(self.path, _layout.graph_block(b, "indptr"), "<i8")
            idx = memmap_array(self.path, _layout.graph_block(b, "indices"), "<i4")
            key = _layout.graph_block(b, "")
            if verify and (key not in sums or hashlib.sha256(
                    (array_checksum(ptr) + array_checksum(idx)).encode()).hexdigest() != sums[key]):
                raise StoreError(f"{self.path / key}: checksum mismatch or none recorded: the block is corrupt")
            if ptr.size != bounds[b + 1] - bounds[b] + 1 or ptr[0] != 0 or ptr[-1] != idx.size:
                raise StoreError(f"{self.path / key}: inconsistent CSR block")
            out.append((int(bounds[b]), ptr, idx))
        return out

    def permutation_mapped(self) -> np.ndarray:
        """(n,) int64 memory-mapped: :meth:`permutation` without reading it into memory (not verified)."""
        return memmap_array(self.path, _layout.PERMUTATION, "<i8")

    def verify(self) -> int:
        """Recompute every checksum the store records: each rank's block (in
        rank order), the partitions, the permutation and offsets, the node
        arrays, every array of the quality and mini-batch tables, the graph's
        blocks. Raises :class:`StoreError` naming the first that does not
        match; returns how many were checked."""
        for r in range(self.parts):
            open_rank(self.path, r, verify=True)
        checked = self.parts
        sums = self.attrs.get("array_checksums", {})
        for name in sorted(sums):
            if name.startswith(tuple(f"{g}/" for g in (_layout.GRAPH, _layout.NODES, *TABLES))):
                continue
            want = "<i4" if name.startswith("partitions/") else "<i8"
            self._checked(name, want)
            checked += 1
        checked += self._verify_nodes(sums)
        checked += verify_tables(self.path, sums)
        self.graph()
        return checked + sum(1 for k in sums if k.startswith(f"{_layout.GRAPH}/"))

    def _verify_nodes(self, sums: dict[str, str]) -> int:
        """Recompute the checksum of every recorded piece of the node arrays
        (stores written before they were recorded have none: 0 checked)."""
        import zarr

        pieces = [(k, p) for k in sorted(sums) if (p := _layout.parse_node_piece(k)) is not None]
        if not pieces:
            return 0
        g = zarr.open_group(str(self.path / _layout.NODES), mode="r", zarr_format=3)
        for key, (name, lo, hi) in pieces:  # a loop over row chunks
            try:
                a = np.asarray(g[name][lo:hi])  # type: ignore[index]
            except (KeyError, OSError, ValueError) as e:
                raise StoreError(f"{self.path / key}: cannot read the node rows ({e})") from None
            if array_checksum(a) != sums[key]:
                raise StoreError(f"{self.path / _layout.NODES / name}: rows {lo}:{hi}: checksum mismatch: the node "
                                 "data is corrupt")
        return len(pieces)

    def minibatch(self):
        """Mini-batch quality (xarray Dataset) when the store has an ``shp`` model, else None."""
        if not (self.path / _layout.MINIBATCH / "zarr.json").exists():
            return None
        return self._dataset(_layout.MINIBATCH)

    def partition_costs(self) -> list[PartitionCost]:
        """What the epoch model needs of every model's partition (:class:`shgcn.core.epoch.PartitionCost`):
        volume and load from the quality table, rows from the partition vectors, own-column nonzeros and
        Â's pattern from the input graph."""
        import scipy.sparse as sp

        from shgcn.core.epoch import PartitionCost, own_nonzeros

        q = self.quality()
        directed = bool(self.attrs.get("directed", False))
        pattern = self.graph()
        a = (pattern + sp.identity(pattern.shape[0], format="csr", dtype=pattern.dtype)).tocsr()
        parts = int(q["volume"].shape[1])
        out = []
        for i, m in enumerate(str(m) for m in q["model"].values):
            part = self.partition(m).astype(np.int64)
            out.append(PartitionCost(model=m, volume=np.asarray(q["volume"].values[i], np.int64),
                                     load=np.asarray(q["load"].values[i], np.int64),
                                     rows=np.bincount(part, minlength=parts).astype(np.int64),
                                     own=own_nonzeros(a, part, parts), directed=directed, graph=a, part=part))
        return out

    def feature_density(self, rows_per_rank: int = 65536) -> float:
        """The fraction of nonzero features, counted over the first ``rows_per_rank`` rows of every rank's
        block (memory-mapped; a bound on what is read): what the trainer's first layer costs depends on it
        (it keeps features with at most 10% nonzeros sparse)."""
        nnz = values = 0
        for r in range(self.parts):
            x = self.rank(r, verify=False).features[:rows_per_rank]
            nnz += int(np.count_nonzero(x))
            values += int(x.size)
        return nnz / values if values else 1.0

    def nodes(self):
        """Node data in original vertex order as an xarray Dataset (lazy)."""
        import xarray as xr
        return xr.open_zarr(str(self.path), group=_layout.NODES, zarr_format=3)


def open_store(path: str | Path) -> Store:
    """Open a complete store; raise :class:`StoreError` for anything else."""
    path = Path(path)
    meta_path = path / _layout.ROOT_META
    if _layout.is_partial(path):
        raise StoreError(f"{path}: the working directory of a build that did not finish, not a store "
                         "(the next build to the same output removes it)")
    if not path.exists():
        raise StoreError(f"{path}: store not found")
    if not path.is_dir():
        raise StoreError(f"{path}: not a store (a file, not a directory)")
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise StoreError(f"{path}: not a store (no {_layout.ROOT_META})") from None
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
        raise StoreError(f"{meta_path}: corrupt ({e})") from None
    attrs = meta.get("attributes", {}) if isinstance(meta, dict) else {}
    if not attrs.get("complete"):
        raise StoreError(f"{path}: incomplete store (its build did not finish)")
    if attrs.get("schema_version") != SCHEMA_VERSION:
        raise StoreError(f"{path}: schema version {attrs.get('schema_version')}, this version reads {SCHEMA_VERSION}")
    return Store(path, attrs)
