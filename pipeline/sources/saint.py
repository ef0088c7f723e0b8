"""GraphSAINT dataset directories (Reddit, Flickr, Yelp, Amazon: the files
of the GraphSAINT authors, which PyG's ``Flickr``/``Yelp``/``AmazonProducts``
read too)::

    DIR/adj_full.npz     the whole graph: a scipy CSR matrix (indptr, indices, data, shape), both directions
    DIR/feats.npy        (n, D) features
    DIR/class_map.json   {"vertex": class} (single-label) or {"vertex": [0, 1, ...]} (multi-label)
    DIR/role.json        {"tr": [...], "va": [...], "te": [...]}: train, validation and test vertices

The adjacency is cut into row ranges read by parallel tasks (in place when
the archive stores it uncompressed, else streamed once into scratch files),
the features are read in place from ``feats.npy`` by each row block, and
``class_map.json`` is parsed as a stream of blocks into a row-addressable
scratch file (for Amazon it is about 0.5 GB of text).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError, located
from .base import RawSource, ReadOptions, Recognizes
from .chunks import checked_metas
from .nodefiles import MAX_CLASS, csr_chunk, mask_of, row_cuts, scratch
from .parsing import DEFAULT_CHUNK_BYTES
from .probe import readable
from .records import NodeSource
from .rowfiles import RowFile, materialize, member, npy_view
from .tokens import tokenize

FILES = ("adj_full.npz", "feats.npy", "class_map.json", "role.json")
ROLES = (("tr", "train"), ("va", "val"), ("te", "test"))
_SEPARATORS = bytes.maketrans(b'{}[]":,', b"       ")
_QUOTED_VALUE = re.compile(rb'[:\[]\s*"')  # a string where a class or a 0/1 value belongs


@dataclass(frozen=True)
class SaintLayout:
    root: str
    n: int
    nnz: int
    dim: int


def probe_saint(path: str) -> SaintLayout:
    """``ingest-probe`` task: the files exist and agree on the vertex count."""
    root = Path(path)
    if not root.is_dir():
        raise located(root, "not a GraphSAINT directory (not a directory)")
    for f in FILES:
        if not (root / f).exists():
            raise located(root / f, f"file not found (a GraphSAINT directory holds {', '.join(FILES)})")
        readable(root / f)
    adj = str(root / "adj_full.npz")
    try:
        shape = tuple(int(s) for s in np.load(adj, allow_pickle=False)["shape"])
    except (KeyError, ValueError, OSError) as e:
        raise located(adj, f"not a scipy.sparse CSR .npz (no 'shape': {e})") from None
    if len(shape) != 2 or shape[0] != shape[1]:
        raise located(adj, f"the adjacency is {shape}; it must be square")
    n = shape[0]
    ptr, idx = member(adj, "indptr"), member(adj, "indices")
    if ptr.shape != (n + 1,):
        raise located(adj, f"indptr has shape {ptr.shape}; a {n} x {n} CSR matrix needs ({n + 1},)")
    x = npy_view(root / "feats.npy")
    if len(x.shape) != 2 or x.shape[0] != n:
        raise located(root / "feats.npy", f"features of shape {x.shape}, but adj_full.npz has {n} vertices "
                                          f"(expected ({n}, D))")
    return SaintLayout(str(root), n, int(idx.shape[0]), int(x.shape[1]))


def csr_files(adj: str, work_dir: str | None) -> tuple[RowFile, RowFile]:
    """``ingest-csr-files`` task: indptr and indices, in place or streamed once."""
    return (materialize(member(adj, "indptr"), scratch(work_dir, "saint-indptr.raw")),
            materialize(member(adj, "indices"), scratch(work_dir, "saint-indices.raw")))


def _ptr(files: tuple[RowFile, RowFile]) -> RowFile:
    return files[0]


def _chunk(files: tuple[RowFile, RowFile], lo: int, hi: int, n: int, where: str):
    return csr_chunk(files[0], files[1], lo, hi, n, where)


def class_map(path: str, n: int, out: Path, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> tuple[RowFile, int, str]:
    """``class_map.json`` parsed as a stream of blocks into ``out``: (n,)
    int32 classes (-1: no entry) or (n, C) bool. Returns (RowFile, classes, kind)."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
        kind = "multi" if head[head.find(b":") + 1:].lstrip().startswith(b"[") else "single"
        width = 2
        if kind == "multi":
            first = head[head.find(b"[") + 1:head.find(b"]")]
            width = first.count(b",") + 2  # the vertex, then C values
        dtype, shape = (bool, (n, width - 1)) if kind == "multi" else (np.int32, (n,))
        m = np.lib.format.open_memmap(str(out) + ".npy", mode="w+", dtype=dtype, shape=shape)
        if kind == "single":
            m[:] = -1
        f.seek(0)
        rest, top = b"", -1
        while True:
            block = f.read(chunk_bytes)
            data = rest + block
            cut = (data.rfind(b"]") if kind == "multi" else data.rfind(b",")) + 1 if block else len(data)
            rest = data[cut:]
            top = max(top, _scatter(m, data[:cut], width, kind, path))
            if not block:
                break
        m.flush()
    view = npy_view(str(out) + ".npy")
    return view, (top + 1 if kind == "single" else width - 1), kind


def _scatter(m: np.ndarray, data: bytes, width: int, kind: str, path: str) -> int:
    """Entries of one block of the class map into the memmap; returns the largest class seen."""
    if _QUOTED_VALUE.search(data):  # the tokens drop quotes (the keys'): a value "3" would pass as the class 3
        raise located(path, "a class must be a number (or a list of 0/1 numbers), not a string")
    t = tokenize(data.translate(_SEPARATORS), comment_chars=b"")
    if t.error is not None:
        raise located(path, f"not a GraphSAINT class map ({t.error.message})")
    if t.values.size % width:
        raise located(path, f"entries of unequal length: expected {width - 1} values per vertex")
    rows = t.values.reshape(-1, width)
    ids = rows[:, 0]
    n = m.shape[0]
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise located(path, f"vertex {ids[(ids < 0) | (ids >= n)][0]} outside 0..{n - 1}")
    vals = rows[:, 1:]
    if kind == "multi":
        if vals.size and (vals.min() < 0 or vals.max() > 1):
            raise located(path, "multi-label targets must be 0 or 1")
        m[ids] = vals.astype(bool)
        return -1
    y = vals[:, 0]  # integer tokens: only the int32 bound can fail
    bad = np.flatnonzero(y > MAX_CLASS)
    if bad.size:
        raise located(path, f"vertex {ids[bad[0]]}: class {y[bad[0]]} is not a class number (whole, at most "
                            f"{MAX_CLASS:,})")
    m[ids] = np.where(y >= 0, y, -1).astype(np.int32)
    return int(vals.max(initial=-1))


def roles(path: str, n: int) -> dict[str, np.ndarray]:
    """``role.json``'s train / val / test vertex lists as (n,) bool masks."""
    try:
        with open(path) as f:
            r = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise located(path, f"not JSON ({e})") from None
    if not isinstance(r, dict):
        raise located(path, "expected an object with the lists tr, va, te")
    missing = [k for k, _ in ROLES if k not in r]
    if missing:
        raise located(path, f"no {missing[0]!r} list (GraphSAINT's roles are tr, va, te)")
    if not isinstance(r["tr"], list) or not r["tr"]:
        raise located(path, "the 'tr' list holds no vertex: nothing to train on")
    return {name: mask_of(r[key], n, f"{path} ({key})") for key, name in ROLES}


def saint_nodes(lay: SaintLayout, work_dir: str | None, chunk_bytes: int) -> NodeSource:
    """``ingest-nodes`` task: features in place, labels parsed into a scratch file, roles as masks."""
    root = Path(lay.root)
    y, classes, kind = class_map(str(root / "class_map.json"), lay.n, scratch(work_dir, "saint-labels"), chunk_bytes)
    role = str(root / "role.json")
    return NodeSource(npy_view(root / "feats.npy"), y, roles(role, lay.n), classes, kind, roles=role)


def submit_saint(tasks, path: str, opts: ReadOptions) -> RawSource:
    """Start reading a GraphSAINT directory on the workers."""
    lay: SaintLayout = tasks.submit("ingest-probe", probe_saint, path).result()
    adj = str(Path(lay.root) / "adj_full.npz")
    files = tasks.submit("ingest-csr-files", csr_files, adj, opts.work_dir)
    ranges = tasks.submit("ingest-row-cuts", row_cuts, tasks.submit("ingest-csr-files", _ptr, files),
                          max(1, opts.chunk_bytes // 8)).result()
    chunks = [tasks.submit("ingest-edges", _chunk, files, lo, hi, lay.n, adj, index=i)
              for i, (lo, hi) in enumerate(ranges)]
    metas = checked_metas(tasks, chunks)
    if sum(m.edges for m in metas) == 0:
        raise UserError(f"{adj}: no edges found")
    nodes = tasks.submit("ingest-nodes", saint_nodes, lay, opts.work_dir, opts.chunk_bytes)
    return RawSource(path, chunks, metas, lay.n, 0, False, nodes, ["GraphSAINT directory (adjacency in both directions)"])


@dataclass(frozen=True)
class Saint:
    """The GraphSAINT directory reader (:func:`submit_saint`)."""

    name: str = "saint"
    # either file names a GraphSAINT directory (its reader names any other that is missing)
    recognizes: Recognizes = Recognizes(files=("adj_full.npz", "role.json"))
    names_files: bool = False

    def precheck(self, path: str, split_scheme: str | None = None) -> None:
        """The directory's layout (:func:`probe_saint`)."""
        probe_saint(path)

    def submit(self, tasks, path: str, opts: ReadOptions) -> RawSource:
        return submit_saint(tasks, path, opts)


READER = Saint()
