"""Readers for graph file formats, each returning a :class:`RawGraph`.

Formats: ``edgelist`` (SNAP / Network Repository text, optionally gzip),
``mtx`` (Matrix Market, banner and size line optional), ``metis`` (METIS
``.graph``), ``npz`` (a scipy.sparse matrix saved with ``save_npz``) and
``planetoid`` (the ``ind.<name>.*`` pickles, read through a restricted
unpickler).
"""

from __future__ import annotations

import itertools
import logging
import pickle
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import ingest
from .errors import UserError, located
from .graph import RawGraph

log = logging.getLogger(__name__)

FORMATS = ("edgelist", "mtx", "metis", "npz", "planetoid")
_HEADER_PEEK = 64 * 1024


def detect_format(path: str | Path) -> str:
    """Guess the format from the file name."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".mtx"):
        return "mtx"
    if name.endswith((".graph", ".metis")) and not name.startswith("ind."):
        return "metis"
    if name.endswith(".npz"):
        return "npz"
    if name.startswith("ind.") or Path(path).is_dir():
        return "planetoid"
    if name.endswith((".txt", ".edges", ".el", ".tsv", ".edgelist", ".csv")) or "." not in name:
        return "edgelist"
    raise UserError(f"{path}: unknown format; pass --format, one of {', '.join(FORMATS)}")


def read(path: str | Path, fmt: str | None, client, chunk_bytes: int = ingest.DEFAULT_CHUNK_BYTES,
         progress: bool = False) -> RawGraph:
    """Read ``path`` in format ``fmt`` (detected from the name when None)."""
    path = str(path)
    if fmt is None:
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}")
    if fmt == "planetoid":
        return read_planetoid(path)
    p = Path(path)
    if not p.exists():
        raise UserError(f"{path}: file not found")
    if p.is_dir():
        raise UserError(f"{path}: is a directory, expected a {fmt} file")
    if p.stat().st_size == 0:
        raise located(path, "empty file")
    if fmt == "npz":
        return read_npz(path)
    reader = {"edgelist": read_edgelist, "mtx": read_mtx, "metis": read_metis}[fmt]
    return reader(path, ingest.Parser(client, chunk_bytes, progress))


def _head_lines(path: str) -> list[bytes]:
    try:
        with ingest.open_text(path) as f:
            head = f.read(_HEADER_PEEK)
    except EOFError:
        raise located(path, "truncated gzip file (the compressed stream ends early)") from None
    except OSError as e:
        raise located(path, f"cannot read ({e})") from None
    return head.splitlines(keepends=True)


def read_edgelist(path: str, parser: ingest.Parser) -> RawGraph:
    src, dst, chunks = parser.run(path, ingest.parse_pairs)
    if src.size == 0:
        raise located(path, "no edges found (only comments or blank lines)")
    return RawGraph(src=src, dst=dst, n=None, directed=None, source=path, lines=int(src.size))


def read_mtx(path: str, parser: ingest.Parser) -> RawGraph:
    """Matrix Market coordinate file; the banner and size line are optional.

    Without a banner, the first data line is taken as a size line only if it
    has three integers and the third equals the number of entries that
    follow. Without a banner the symmetry is unknown: if every entry lies in
    the lower (or upper) triangle the file is read as symmetric.
    """
    lines = _head_lines(path)
    symmetric: bool | None = None
    i = 0
    if lines and lines[0].startswith(b"%%MatrixMarket"):
        words = lines[0].decode("latin-1").lower().split()
        if len(words) < 5 or words[1] != "matrix" or words[2] != "coordinate":
            raise located(path, "only 'matrix coordinate' Matrix Market files are supported", 1)
        symmetric = words[4] in ("symmetric", "skew-symmetric", "hermitian")
        i = 1
    while i < len(lines) and (lines[i].startswith(b"%") or not lines[i].strip()):
        i += 1
    header_bytes = sum(len(x) for x in lines[:i])
    n_declared = None
    first = lines[i].split() if i < len(lines) else []
    banner = symmetric is not None
    if first and (banner or len(first) == 3):
        try:
            rows, cols, nnz = (int(x) for x in first)
        except ValueError:
            raise located(path, f"bad size line {lines[i].strip()!r}", i + 1) from None
        entries = None if banner else _count_data_lines(path, header_bytes + len(lines[i]))
        if banner or entries == nnz:
            if rows != cols:
                raise located(path, f"matrix is {rows} x {cols}; an adjacency matrix must be square", i + 1)
            n_declared = rows
            header_bytes += len(lines[i])
            i += 1
    src, dst, _ = parser.run(path, ingest.parse_pairs, header_lines=i, header_bytes=header_bytes,
                             max_id=n_declared, base=1)
    if src.size == 0:
        raise located(path, "no entries found")
    if n_declared is None:
        if min(src.min(), dst.min()) < 0:
            raise located(path, "id 0 in a 1-based Matrix Market file")
        n_declared = int(max(src.max(), dst.max())) + 1
    if symmetric is None and (np.all(src >= dst) or np.all(src <= dst)):
        log.info("%s: no banner and all entries in one triangle: reading as symmetric", path)
        symmetric = True
    return RawGraph(src=src, dst=dst, n=n_declared, directed=None if symmetric is None else not symmetric,
                    source=path, lines=int(src.size), node_ids=np.arange(1, n_declared + 1, dtype=np.int64))


def _count_data_lines(path: str, offset: int) -> int:
    with ingest.open_text(path) as f:
        f.read(offset)
        count, last = 0, b"\n"
        while block := f.read(1 << 24):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def read_metis(path: str, parser: ingest.Parser) -> RawGraph:
    """METIS ``.graph``: header ``n m [fmt [ncon]]``, then one 1-based
    adjacency line per vertex; ``%`` lines are comments."""
    lines = _head_lines(path)
    i = 0
    while i < len(lines) and (lines[i].startswith(b"%") or not lines[i].strip()):
        i += 1
    if i == len(lines):
        raise located(path, "no METIS header line")
    try:
        head = [int(x) for x in lines[i].split()]
    except ValueError:
        raise located(path, f"bad METIS header {lines[i].strip()!r}", i + 1) from None
    if len(head) < 2:
        raise located(path, "METIS header needs 'n m'", i + 1)
    n, m = head[0], head[1]
    fmt = f"{head[2]:03d}" if len(head) > 2 else "000"
    ncon = head[3] if len(head) > 3 else (1 if fmt[1] == "1" else 0)
    if fmt[0] == "1":
        raise located(path, "METIS vertex sizes (fmt 1xx) are not supported", i + 1)
    header_bytes = sum(len(x) for x in lines[: i + 1])
    skip = ncon if fmt[1] == "1" else 0
    stride = 2 if fmt[2] == "1" else 1
    src, dst, chunks = parser.run(path, ingest.parse_adjacency, header_lines=i + 1, header_bytes=header_bytes,
                                  max_id=n, base=1, stride=stride, skip=skip)
    vertex_lines = sum(c.n_lines - c.n_comments for c in chunks)
    if vertex_lines < n:
        raise located(path, f"header declares {n} vertices but the file has {vertex_lines} adjacency lines")
    if src.size and src.max() >= n:
        raise located(path, f"more adjacency lines than the {n} vertices in the header", i + 2 + int(src.max()))
    if src.size != 2 * m:
        log.warning("%s: header declares %d edges, adjacency lists hold %d entries", path, m, src.size)
    return RawGraph(src=src, dst=dst, n=n, directed=False, source=path, lines=int(src.size) // 2,
                    node_ids=np.arange(1, n + 1, dtype=np.int64))


def read_npz(path: str) -> RawGraph:
    try:
        m = sp.load_npz(path).tocoo()
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise located(path, f"not a scipy.sparse .npz file ({e})") from None
    if m.shape[0] != m.shape[1]:
        raise located(path, f"matrix is {m.shape[0]} x {m.shape[1]}; an adjacency matrix must be square")
    n = m.shape[0]
    return RawGraph(src=m.row.astype(np.int64), dst=m.col.astype(np.int64), n=n, directed=None, source=path,
                    lines=int(m.nnz), node_ids=np.arange(n, dtype=np.int64))


# ---------------------------------------------------------------- Planetoid

class _RestrictedUnpickler(pickle.Unpickler):
    """Allows only the classes that the Planetoid pickles contain, so that a
    hostile file cannot make the unpickler import and call arbitrary code."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("scipy.sparse.csr", "csr_matrix"),
        ("scipy.sparse._csr", "csr_matrix"),
        ("collections", "defaultdict"),
        ("__builtin__", "list"),
        ("builtins", "list"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"forbidden global {module}.{name}")
        if module == "numpy.core.multiarray":
            module = "numpy._core.multiarray"
        if module == "scipy.sparse.csr":
            return sp.csr_matrix
        if module == "__builtin__":
            module = "builtins"
        return super().find_class(module, name)


def load_pickle(path: str | Path):
    """Load a Planetoid pickle through the restricted unpickler."""
    try:
        with open(path, "rb") as f:
            return _RestrictedUnpickler(f, encoding="latin1").load()
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError) as e:
        raise located(path, f"not a valid Planetoid pickle ({e})") from None


def _dense(x, path) -> np.ndarray:
    if isinstance(x, sp.csr_matrix):
        # rebuild from the raw arrays: the pickled object has old-scipy attributes
        d = vars(x)
        shape = d.get("_shape", d.get("shape"))
        x = sp.csr_matrix((d["data"], d["indices"], d["indptr"]), shape=shape)
        return np.asarray(x.todense(), dtype=np.float32)
    if isinstance(x, np.ndarray):
        return x
    raise located(path, f"unexpected object of type {type(x).__name__}")


def read_planetoid(prefix: str) -> RawGraph:
    """Read the Planetoid files ``<dir>/ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``.

    ``prefix`` is ``<dir>/ind.<name>`` (any of its files also works). Follows
    the usual processing (Kipf & Welling): test rows are put back at the
    positions listed in ``test.index``; test ids missing from the file (CiteSeer)
    get zero features and no label. When ``allx`` is missing (PubMed offline),
    only the labelled ``x`` and ``tx`` rows have features: features are
    returned as None and a note says so.
    """
    p = Path(prefix)
    if p.name.startswith("ind.") and p.name.count(".") >= 2:
        p = p.with_name(".".join(p.name.split(".")[:2]))
    name = p.name.split(".", 1)[1] if p.name.startswith("ind.") else p.name
    base = p.parent / f"ind.{name}"

    def f(ext):
        return Path(f"{base}.{ext}")

    graph = load_pickle(f("graph"))
    if not isinstance(graph, dict):
        raise located(f("graph"), "expected a dict of adjacency lists")
    test_path = f("test.index")
    try:
        test_idx = np.array([int(x) for x in test_path.read_text().split()], dtype=np.int64)
    except FileNotFoundError:
        raise UserError(f"{test_path}: file not found") from None
    except ValueError:
        raise located(test_path, "non-numeric test index") from None
    y = _dense(load_pickle(f("y")), f("y"))
    ty = _dense(load_pickle(f("ty")), f("ty"))
    has_allx = f("allx").exists()
    ally = _dense(load_pickle(f("ally")), f("ally"))
    n_train = y.shape[0]
    n_all = ally.shape[0]
    test_sorted = np.sort(test_idx)
    lo, hi = int(test_sorted[0]), int(test_sorted[-1])
    n = max(n_all + (hi - lo + 1), max(graph.keys()) + 1)

    labels = np.full(n, -1, dtype=np.int32)
    labels[:n_all] = np.where(ally.sum(1) > 0, ally.argmax(1), -1)
    ty_full = np.zeros((hi - lo + 1, ty.shape[1]), dtype=ty.dtype)
    ty_full[test_sorted - lo] = ty
    labels[lo:hi + 1] = np.where(ty_full.sum(1) > 0, ty_full.argmax(1), -1)
    labels[test_idx] = labels[test_sorted]  # undo the file's test ordering

    features = None
    notes = []
    tx = _dense(load_pickle(f("tx")), f("tx"))
    if has_allx:
        allx = _dense(load_pickle(f("allx")), f("allx"))
        features = np.zeros((n, allx.shape[1]), dtype=np.float32)
        features[:n_all] = allx
        tx_full = np.zeros((hi - lo + 1, tx.shape[1]), dtype=np.float32)
        tx_full[test_sorted - lo] = tx
        features[lo:hi + 1] = tx_full
        features[test_idx] = features[test_sorted]
    else:
        notes.append(f"{base}.allx is missing: only {n_train + tx.shape[0]} of {n} vertices have features; "
                     "use --features random:D")

    masks = {"train": np.zeros(n, bool), "val": np.zeros(n, bool), "test": np.zeros(n, bool)}
    masks["train"][:n_train] = True
    masks["val"][n_train:n_train + 500] = True
    masks["test"][test_idx] = True

    # the adjacency dict is Python objects by nature; flatten it at C speed
    keys = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
    lengths = np.fromiter(map(len, graph.values()), dtype=np.int64, count=len(graph))
    src = np.repeat(keys, lengths)
    dst = np.fromiter(itertools.chain.from_iterable(graph.values()), dtype=np.int64, count=int(lengths.sum()))
    if dst.size and (dst.min() < 0 or dst.max() >= n):
        raise located(f("graph"), f"neighbour id outside 0..{n - 1}")
    return RawGraph(src=src, dst=dst, n=n, directed=False, source=str(base), lines=int(src.size),
                    node_ids=np.arange(n, dtype=np.int64), features=features, labels=labels,
                    masks=masks, notes=notes)
