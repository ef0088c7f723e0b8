"""A build's input sizes before anything is read: vertices, nonzeros of Â,
feature width and classes, and how each was had (what ``pipeline build
--plan`` plans from).

- ``rmat:``: the expected counts of the generator, exact in expectation: a
  vertex slot whose bits pick ``k`` lower and ``s - k`` upper halves is hit
  by an edge with a probability fixed by ``a, b, c``, and an ordered pair of
  slots by the product over its levels' quadrants, so the expected vertices
  and distinct edges are sums over at most C(s + 3, 3) classes (5,984 at
  scale 31) - no edge is drawn.
- ``sbm:``: ``n`` and ``n * degree / 2`` undirected edges (collisions are
  left out: a few in a million).
- a named dataset: its published counts (:mod:`.datasets`).
- a file: Matrix Market and METIS headers are read (exact); an edge list's
  edge count is its size over the mean length of its first lines (a gzip
  file's first lines through its compression ratio so far), and its vertex
  count is unknown before it is read: a tenth of the edges is assumed.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError
from . import datasets, synthetic

ASSUMED_DEGREE = 10  # vertices of an edge list that was not read: edges / this
HEAD_BYTES = 1 << 20  # the first bytes of an edge list whose mean line length estimates its edge count
DEFAULT_DIM, DEFAULT_CLASSES = 64, 16  # shgcn.pipeline.nodes: what a graph without node data gets (tested equal)


@dataclass(frozen=True)
class Counts:
    """The sizes a plan needs. ``nnz``: nonzeros of Â (the distinct edges as
    stored, both ways when undirected, plus one self loop per vertex);
    ``edges``: the distinct edges without self loops; ``how``: where the
    counts come from, for the plan's first line; ``estimated``: guessed
    from a file's size (the readers then check the memory as they read)."""

    n: int
    nnz: int
    edges: int
    features: int
    classes: int
    directed: bool
    how: str
    estimated: bool = False
    name: str = "the graph"
    symmetric: int = 0  # adjacency entries of A + Aᵀ without loops (the partitioners' graph); 0: unknown

    @property
    def graph_entries(self) -> int:
        """The partitioners' adjacency entries: known, or at most twice a directed graph's edges."""
        return self.symmetric or (2 * self.edges if self.directed else self.edges)


def rmat_expected(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
                  directed: bool = True) -> tuple[float, float]:
    """(vertices, distinct edges without self loops) an R-MAT graph has in
    expectation; undirected: the distinct entries of A + Aᵀ."""
    d = 1.0 - a - b - c
    m = float(edge_factor) * 2.0**scale
    row_hi, col_hi = c + d, b + d  # the probability that one level sets the source's (destination's) bit
    n = 0.0
    for k in range(scale + 1):  # slots with k set bits: hit as a source, a destination, or both
        p_src = (1 - row_hi) ** (scale - k) * row_hi**k
        p_dst = (1 - col_hi) ** (scale - k) * col_hi**k
        both = a ** (scale - k) * d**k
        n += math.comb(scale, k) * _hit(p_src + p_dst - both, m)
    edges = 0.0
    for ka in range(scale + 1):
        for kb in range(scale + 1 - ka):
            for kc in range(scale + 1 - ka - kb):
                kd = scale - ka - kb - kc
                if kb == 0 and kc == 0:
                    continue  # the diagonal: self loops, which the build drops
                p = _power(a, ka) * _power(b, kb) * _power(c, kc) * _power(d, kd)
                q = p if directed else p + _power(a, ka) * _power(b, kc) * _power(c, kb) * _power(d, kd)
                edges += _multinomial(scale, ka, kb, kc, kd) * _hit(q, m)
    return n, edges


def _power(x: float, k: int) -> float:
    return 1.0 if k == 0 else x**k


def _hit(q: float, m: float) -> float:
    """The probability that ``m`` independent draws hit an outcome of probability ``q`` at least once."""
    return 0.0 if q <= 0 else -math.expm1(m * math.log1p(-min(q, 1.0 - 1e-16)))


def _multinomial(s: int, *ks: int) -> float:
    return math.exp(math.lgamma(s + 1) - sum(math.lgamma(k + 1) for k in ks))


def input_counts(source: object, fmt: str | None = None, data_dir: str | None = None, directed: bool | None = None,
                 features: int | str | None = None, classes: int | None = None) -> Counts:
    """The :class:`Counts` of a build's SOURCE; ``features``: the width
    ``--features`` asks for (an int, or a .npy file's path; None: the
    source's own), ``classes``: ``--labels random:C``'s C (None: the source's)."""
    n, nnz, edges, dim, own, direct, how = _graph_counts(source, fmt, data_dir, directed)
    d = _npy_width(features) if isinstance(features, str) else features
    parsed = synthetic.parse_params(source) if isinstance(source, str) else None
    sym = _rmat_symmetric(parsed[1]) if parsed is not None and parsed[0] == "rmat" and direct else 0
    return Counts(int(n), int(nnz), int(edges), int(d or dim or DEFAULT_DIM), int(classes or own or DEFAULT_CLASSES),
                  direct, how, how.startswith("estimated"), source if isinstance(source, str) else "the graph", int(sym))


def _rmat_symmetric(kw: dict) -> float:
    return _rmat(kw, False)[1]



def _graph_counts(source, fmt, data_dir, directed) -> tuple[float, float, float, int, int, bool, str]:
    """(n, nnz, edges, features, classes, directed, how) of the graph alone (0: the build's default)."""
    if not isinstance(source, str):  # the Python API's matrix or edge index: its shape is known
        try:
            n = int(source.shape[0]) if hasattr(source, "nnz") else int(np.max(source) + 1 if np.size(source) else 0)
            e = int(getattr(source, "nnz", np.shape(source)[-1] if np.ndim(source) == 2 else 0))
        except (TypeError, ValueError, AttributeError, IndexError):  # a peer's object (PyG, DGL): sized as it is read
            return 0, 0, 0, 0, 0, True, "estimated: an object in memory, sized as it is read"
        return n, e + n, e, 0, 0, True, "in memory (exact)"
    parsed = synthetic.parse_params(source)
    if parsed is not None:
        return _generator_counts(*parsed, directed)
    if source.lower() in datasets.REGISTRY:
        ds = datasets.lookup(source)
        way = ds.directed if directed is None else directed
        e = ds.edges - ds.self_loops
        entries = e if ds.directed else 2 * e  # published undirected pairs are stored both ways
        entries = 2 * e if not way and ds.directed else entries  # --undirected adds the reverses (at most)
        return ds.nodes, entries + ds.nodes, entries, ds.features, ds.classes, way, "published counts"
    return _file_counts(source, directed)


def _generator_counts(kind: str, kw: dict, directed: bool | None) -> tuple[float, float, float, int, int, bool, str]:
    if kind == "rmat":
        way = True if directed is None else directed
        n, e = _rmat(kw, way)
        return n, e + n, e, 0, 0, way, "expected counts of the generator"
    n = int(kw.get("n", 2000))
    e = 2 * int(n * kw.get("degree", 10.0) / 2)  # undirected: both ways
    return n, e + n, e, int(kw.get("features", 32)), int(kw.get("classes", 5)), False, "counts of the generator"


def _rmat(kw: dict, directed: bool) -> tuple[float, float]:
    return rmat_expected(int(kw["scale"]), int(kw.get("edge_factor", 16)), float(kw.get("a", 0.57)),
                         float(kw.get("b", 0.19)), float(kw.get("c", 0.19)), directed=directed)


def _npy_width(path: str) -> int:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the plan (issue 33): preflight names it
            return 0
        return int(np.load(path, mmap_mode="r").shape[1])
    except (OSError, ValueError, IndexError):
        return 0  # the build names what is wrong with the file


def _file_counts(path: str, directed: bool | None) -> tuple[float, float, float, int, int, bool, str]:
    """An edge list's estimate, or the exact sizes a Matrix Market or METIS header declares."""
    p = Path(path)
    way = True if directed is None else directed
    header = _header(p)
    if header is not None:
        n, e, sym = header
        entries = 2 * e if (sym or not way) else e
        return n, entries + n, entries, 0, 0, way and not sym, "the file's header"
    e = _estimated_lines(p)
    entries = e if way else 2 * e
    n = max(1, e // ASSUMED_DEGREE)
    return n, entries + n, entries, 0, 0, way, (f"estimated from the file's size (its first lines' length; "
                                                f"vertices assumed edges / {ASSUMED_DEGREE})")


def _open(p: Path):
    return gzip.open(p, "rb") if p.name.endswith(".gz") else open(p, "rb")


def _header(p: Path) -> tuple[int, int, bool] | None:
    """(vertices, edges, symmetric) from a Matrix Market size line or a METIS .graph header."""
    name = p.name.lower().removesuffix(".gz")
    if p.name.lower().endswith(".npz") and p.is_file():  # its shape and an array's header (checked by the plan)
        from .npz import npz_declared

        with contextlib.suppress(UserError):
            n, entries = npz_declared(str(p))
            return n, entries, False
        return None
    if not (name.endswith((".mtx", ".graph", ".metis")) and p.is_file()):
        return None
    try:
        with _open(p) as f:
            first = f.readline()
            sym = b"symmetric" in first.lower()
            line = first
            while line.startswith((b"%", b"#")) or not line.strip():
                line = f.readline()
                if not line:
                    return None
            words = [int(w) for w in line.split()[:3]]
    except (OSError, ValueError, EOFError):
        return None
    if name.endswith(".mtx") and len(words) == 3:
        return max(words[0], words[1]), words[2], sym
    return (words[0], words[1], True) if len(words) >= 2 else None  # METIS counts undirected edges


def _estimated_lines(p: Path) -> int:
    """An edge list's lines (a directory's files: its size over 16 bytes a line)."""
    if not p.is_file():
        size = sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0
        return max(1, size // 16)
    size = p.stat().st_size
    try:
        with open(p, "rb") as raw:
            stream = gzip.GzipFile(fileobj=raw) if p.name.endswith(".gz") else raw
            head = stream.read(HEAD_BYTES)
            consumed = raw.tell() if p.name.endswith(".gz") else len(head)
    except (OSError, EOFError):
        return max(1, size // 16)
    lines = [ln for ln in head.splitlines() if ln.strip() and not ln.startswith((b"#", b"%"))]
    if not lines or not consumed:
        return max(1, size // 16)
    mean = len(head) / len(lines)  # bytes of text per edge line, comments included
    return max(1, int(size * (len(head) / consumed) / mean))
