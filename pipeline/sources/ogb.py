"""OGB node-property directories (``ogbn-arxiv``, ``ogbn-products``,
``ogbn-papers100M``...), as OGB's own loader leaves them after a download:

CSV layout::

    DIR/raw/edge.csv.gz             one "src,dst" line per edge, 0-based (undirected graphs: each pair once)
    DIR/raw/num-node-list.csv.gz    the vertex count (one line)
    DIR/raw/node-feat.csv.gz        n lines of D comma-separated floats (optional)
    DIR/raw/node-label.csv.gz       n lines: a class id (NaN: none), or several 0/1 columns (multi-label)
    DIR/split/<scheme>/{train,valid,test}.csv.gz   vertex ids, one per line

npz layout (``papers100M-bin``): ``raw/data.npz`` with ``edge_index`` (2, E),
``num_nodes_list`` and ``node_feat`` (n, D); ``raw/node-label.npz`` with
``node_label`` (n, 1) (NaN: none); the same ``split/`` directory.

Everything is read on the workers: the edges as chunks (text parsed in
parallel like any edge list, or slices of the (2, E) array), the node data
by one task that streams the compressed files once into row-addressable
scratch files (:mod:`.rowfiles`): no array is ever whole in memory.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import located
from . import chunks as chunk_tasks
from . import csvblocks
from .base import RawSource, ReadOptions, Recognizes
from .nodefiles import cuts, mask_of, pair_chunk, scratch, write_labels
from .probe import probe
from .records import NodeSource
from .rowfiles import BLOCK_BYTES, RawWriter, RowFile, materialize, member, member_blocks, npz_keys
from .text import raise_first_error, submit_parse

log = logging.getLogger(__name__)

SPLITS = (("train", "train"), ("valid", "val"), ("test", "test"))  # file stem -> mask name


@dataclass(frozen=True)
class OgbLayout:
    """What the probe found: ``kind`` csv or npz, the vertex count (None: not
    declared), the files, the split scheme chosen (None: no split)."""

    root: str
    kind: str
    n: int | None
    edges: str
    features: str | None
    labels: str | None
    scheme: str | None
    edge_count: int | None = None


def _csv(raw: Path, stem: str) -> Path | None:
    """``raw/STEM.csv.gz`` or ``raw/STEM.csv``, None when neither is there; a
    link to nothing is an error (it would otherwise mean "absent": random
    features in place of the user's)."""
    for p in (raw / f"{stem}.csv.gz", raw / f"{stem}.csv"):
        if p.is_symlink() and not p.exists():
            raise located(p, f"a link to {os.readlink(p)}, which does not exist")
    return next((p for p in (raw / f"{stem}.csv.gz", raw / f"{stem}.csv") if p.exists()), None)


def _scheme(root: Path, asked: str | None) -> str | None:
    split = root / "split"
    schemes = sorted(p.name for p in split.iterdir() if p.is_dir()) if split.is_dir() else []
    if asked is not None and asked not in schemes:
        have = f"it has {', '.join(schemes)}" if schemes else "it has none"
        raise located(split, f"no split scheme {asked!r} ({have}; choose with --split-scheme)")
    if asked is None and len(schemes) > 1:
        raise located(split, f"several split schemes ({', '.join(schemes)}): choose one with --split-scheme")
    scheme = asked or (schemes[0] if schemes else None)
    if scheme is not None:
        for stem, _ in SPLITS:
            if _csv(split / scheme, stem) is None:
                raise located(split / scheme / f"{stem}.csv.gz", "file not found (a split needs train, valid and test)")
    return scheme


def probe_ogb(path: str, scheme: str | None) -> OgbLayout:
    """``ingest-probe`` task: find the layout, the vertex count and the split."""
    root = Path(path)
    if root.name == "raw" and not (root / "raw").exists():
        root = root.parent
    raw = root / "raw"
    if not raw.is_dir():
        raise located(root, "not an OGB node-property directory (no raw/ inside)")
    chosen = _scheme(root, scheme)
    if (raw / "data.npz").exists():
        return _probe_npz(root, raw, chosen)
    edges = _csv(raw, "edge")
    if edges is None:
        raise located(raw / "edge.csv.gz", "file not found (an OGB directory needs its edges)")
    counts = _csv(raw, "num-node-list")
    n = None
    if counts is not None:
        values = csvblocks.read_column(str(counts))
        if values.size != 1 or values[0] < 1 or values[0] != np.round(values[0]):
            raise located(counts, f"expected one positive vertex count, found {values.size} values")
        n = int(values[0])
    feat, label = _csv(raw, "node-feat"), _csv(raw, "node-label")
    return OgbLayout(str(root), "csv", n, str(edges), str(feat) if feat else None, str(label) if label else None,
                     chosen)


def _probe_npz(root: Path, raw: Path, scheme: str | None) -> OgbLayout:
    data = str(raw / "data.npz")
    e = member(data, "edge_index")
    if len(e.shape) != 2 or e.shape[0] != 2:
        raise located(data, f"edge_index has shape {e.shape}; expected (2, E)")
    counts = np.load(data, allow_pickle=False)["num_nodes_list"] if "num_nodes_list" in npz_keys(data) else None
    if counts is None or counts.size != 1:
        raise located(data, "expected num_nodes_list with one vertex count (one graph)")
    labels = raw / "node-label.npz" if (raw / "node-label.npz").exists() else _csv(raw, "node-label")
    return OgbLayout(str(root), "npz", int(counts[0]), data, data if "node_feat" in npz_keys(data) else None,
                     str(labels) if labels else None, scheme, int(e.shape[1]))


# ------------------------------------------------------------------ node data (one task)

def _features(lay: OgbLayout, work_dir: str | None, dtype: str, chunk_bytes: int) -> RowFile | None:
    if lay.features is None:
        return None
    if lay.kind == "npz":
        m = member(lay.features, "node_feat")
        if len(m.shape) != 2:
            raise located(lay.features, f"node_feat has shape {m.shape}; expected (n, D)")
        return materialize(m, scratch(work_dir, "ogb-features.raw"), None if m.view is not None else dtype)
    first = True
    with RawWriter(scratch(work_dir, "ogb-features.raw"), dtype, ()) as w:
        for block in csvblocks.row_blocks(lay.features, None, chunk_bytes):
            if first:
                w.row_shape, first = (block.shape[1],), False
            w.write(block)
        if first:
            raise located(lay.features, "empty file")
        return w.close()


def _labels(lay: OgbLayout, work_dir: str | None, chunk_bytes: int) -> tuple[RowFile, int, str] | None:
    if lay.labels is None:
        return None
    out = scratch(work_dir, "ogb-labels.raw")
    if lay.labels.endswith(".npz"):
        m = member(lay.labels, "node_label")
        rows = m.shape[0] if m.shape else 0
        row = int(np.prod(m.shape[1:], dtype=np.int64)) if len(m.shape) > 1 else 1
        blocks = (flat.astype(np.float64).reshape(-1, row) for flat in
                  _member_rows(m, rows, row))
        return write_labels(blocks, out, lay.labels, negative_unlabelled=False)  # OGB's unlabelled: NaN only
    return write_labels(csvblocks.row_blocks(lay.labels, None, chunk_bytes), out, lay.labels, negative_unlabelled=False)


def _member_rows(m, rows: int, row: int):
    per = max(1, BLOCK_BYTES // (8 * row)) * row
    if m.view is not None:
        for a, b in cuts(rows, per // row):
            yield m.view[a:b].reshape(-1)
        return
    yield from member_blocks(m, block_items=per)


def _masks(lay: OgbLayout, n: int) -> dict[str, np.ndarray] | None:
    if lay.scheme is None:
        return None
    split = Path(lay.root) / "split" / lay.scheme
    out = {}
    for stem, name in SPLITS:
        path = _csv(split, stem)
        out[name] = mask_of(csvblocks.read_column(str(path)), n, str(path))
    if not out["train"].any():
        raise located(_csv(split, "train") or split, "an empty training split (no vertex ids): nothing to train on")
    return out


def _train_file(lay: OgbLayout) -> str | None:
    """The split's training file (the build's line when none of its vertices has a label), or None."""
    if lay.scheme is None:
        return None
    split = Path(lay.root) / "split" / lay.scheme
    return str(_csv(split, "train") or split)


def _check_trainable(labels: RowFile, train: np.ndarray, where: str) -> None:
    """Some training vertex has a label (single-label classes: -1 is unlabelled), read block by block."""
    for a, b in cuts(train.shape[0], BLOCK_BYTES // 4):
        if (labels[a:b][train[a:b]] >= 0).any():
            return
    raise located(where, f"none of the {int(train.sum()):,} training vertices has a label (NaN): nothing to train on")


def ogb_nodes(lay: OgbLayout, work_dir: str | None, dtype: str, chunk_bytes: int) -> NodeSource:
    """``ingest-nodes`` task: features and labels streamed into scratch
    files, the split as masks; every row count checked against the vertex count."""
    x = _features(lay, work_dir, dtype, chunk_bytes)
    y = _labels(lay, work_dir, chunk_bytes)
    n = lay.n
    for what, arr, where in (("feature", x, lay.features), ("label", None if y is None else y[0], lay.labels)):
        if arr is None:
            continue
        if n is None:
            n = arr.shape[0]
        elif arr.shape[0] != n:
            raise located(where or lay.root, f"{arr.shape[0]:,} {what} rows, but the graph has {n:,} vertices "
                                 "(raw/num-node-list.csv.gz; a truncated or mismatched file?)")
    if n is None:
        raise located(lay.root, "no vertex count: raw/num-node-list.csv.gz, node-feat or node-label is needed")
    masks = _masks(lay, n)
    if masks is not None and y is not None and y[2] == "single":
        _check_trainable(y[0], masks["train"], lay.labels or lay.root)
    return NodeSource(x, None if y is None else y[0], masks, None if y is None else y[1],
                      "single" if y is None else y[2], roles=_train_file(lay))


def rows_of(src: NodeSource) -> int:
    sizes = [a.shape[0] for a in (src.features, src.labels) if a is not None]
    sizes += [m.shape[0] for m in (src.masks or {}).values()]
    return sizes[0] if sizes else -1


# ------------------------------------------------------------------ edges

def npz_edges(e_path: str, work_dir: str | None, count: int) -> tuple[RowFile, RowFile]:
    """``ingest-edges-index`` task: the two rows of ``edge_index``, in place
    when stored uncompressed, else streamed once into two scratch files."""
    m = member(e_path, "edge_index")
    if m.view is not None:
        return m.view.row(0), m.view.row(1)
    out = []
    for i, name in enumerate(("ogb-src.raw", "ogb-dst.raw")):
        with RawWriter(scratch(work_dir, name), m.dtype, ()) as w:
            for block in member_blocks(m, start=i * count, items=count):
                w.write(block)
            out.append(w.close())
    return out[0], out[1]


def submit_ogb(tasks, path: str, opts: ReadOptions) -> RawSource:
    """Start reading an OGB directory on the workers (the edges as chunks,
    the node data as one streaming task)."""
    lay: OgbLayout = tasks.submit("ingest-probe", probe_ogb, path, opts.split_scheme).result()
    nodes = tasks.submit("ingest-nodes", ogb_nodes, lay, opts.work_dir, opts.feature_dtype, opts.chunk_bytes)
    n = lay.n if lay.n is not None else int(tasks.submit("ingest-nodes-rows", rows_of, nodes).result())
    if lay.kind == "csv":
        pb = tasks.submit("ingest-probe", probe, lay.edges, "edgelist").result()
        pb = replace(pb, kind="csv-pairs", kwargs={"max_id": n, "base": 0})
        chunks = submit_parse(tasks, pb, opts)
        metas = chunk_tasks.gather_metas(tasks, chunks)
        raise_first_error(pb, metas)
    else:
        src_dst = tasks.submit("ingest-edges-index", npz_edges, lay.edges, opts.work_dir, lay.edge_count)
        where = f"{lay.edges}[edge_index]"
        chunks = [tasks.submit("ingest-edges", _pair, src_dst, a, b, n, where, index=i)
                  for i, (a, b) in enumerate(cuts(int(lay.edge_count or 0), max(1, opts.chunk_bytes // 8)))]
        metas = chunk_tasks.checked_metas(tasks, chunks)
    if sum(m.edges for m in metas) == 0:
        raise located(lay.edges, "no edges found")
    return RawSource(path, chunks, metas, n, 0, None, nodes,
                     [f"OGB directory ({lay.kind} layout), split {lay.scheme or 'none: a seeded random split'}"])


def _pair(src_dst: tuple[RowFile, RowFile], a: int, b: int, n: int, where: str):
    return pair_chunk(src_dst[0], src_dst[1], a, b, n, where)


@dataclass(frozen=True)
class Ogb:
    """The OGB node-property directory reader (:func:`submit_ogb`)."""

    name: str = "ogb"
    # its edges (raw/edge.csv.gz or raw/data.npz); else its raw/ or split/ folder (the reader names what is missing)
    recognizes: Recognizes = Recognizes(files=("raw/edge.csv.gz", "raw/edge.csv", "raw/data.npz"),
                                        folders=("raw", "split"))
    names_files: bool = False

    def precheck(self, path: str, split_scheme: str | None = None) -> None:
        """The directory's layout (:func:`probe_ogb`)."""
        probe_ogb(path, split_scheme)

    def submit(self, tasks, path: str, opts: ReadOptions) -> RawSource:
        return submit_ogb(tasks, path, opts)


READER = Ogb()
