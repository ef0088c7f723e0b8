"""Planetoid datasets: the ``ind.<name>.*`` pickles of Yang et al., read
through a restricted unpickler so that a pickle from the internet cannot run
code, and processed as Kipf & Welling do (test rows put back in place,
missing test rows padded); read whole, in one task (:mod:`.whole`)."""

from __future__ import annotations

import importlib.util
import itertools
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError, located
from . import budget
from .base import RawSource, ReadOptions, Recognizes
from .records import NodeSource, ParsedChunk, RawGraph
from .whole import Whole, submit_whole

_MULTIARRAY = "numpy._core.multiarray" if importlib.util.find_spec("numpy._core") else "numpy.core.multiarray"


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
        if module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            module = _MULTIARRAY  # pickles name either; numpy 2 moved it
        if module == "scipy.sparse.csr":
            import scipy.sparse as sp  # scipy when a file is read: the registry lists this reader for --help

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
    except PermissionError:
        raise located(path, "permission denied: this user may not read the file (check its mode and owner)") \
            from None
    except Exception as e:  # noqa: BLE001 - untrusted bytes: any failure of the unpickler is a bad file
        why = " ".join(str(e).split())[:200]  # one line, whatever the exception says
        raise located(path, f"not a valid Planetoid pickle ({type(e).__name__}: {why})") from None


def _dense(x, path, limit: int | None = None) -> np.ndarray:
    import scipy.sparse as sp

    if isinstance(x, sp.csr_matrix):
        # rebuild from the raw arrays: the pickled object has old-scipy attributes
        d = vars(x)
        shape = d.get("_shape", d.get("shape"))
        if not (isinstance(shape, tuple) and len(shape) == 2 and all(isinstance(k, int) and k >= 0 for k in shape)):
            raise located(path, f"a sparse matrix with the shape {str(shape)[:60]}")
        budget.check(limit, 4 * shape[0] * shape[1], f"a sparse matrix of shape {shape[0]:,} x {shape[1]:,} "
                                                     "(dense, float32)", str(path))
        x = sp.csr_matrix((d["data"], d["indices"], d["indptr"]), shape=shape)
        return np.asarray(x.todense(), dtype=np.float32)
    if isinstance(x, np.ndarray):
        return x
    raise located(path, f"unexpected object of type {type(x).__name__}")


def files_base(prefix: str) -> Path:
    """``<dir>/ind.<name>``, the files' common start, of a prefix (or of any of its files)."""
    p = Path(prefix)
    if p.name.startswith("ind.") and p.name.count(".") >= 2:
        p = p.with_name(".".join(p.name.split(".")[:2]))
    name = p.name.split(".", 1)[1] if p.name.startswith("ind.") else p.name
    return p.parent / f"ind.{name}"


def read_planetoid(prefix: str, limit: int | None = None) -> RawGraph:
    """Read the Planetoid files ``<dir>/ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``.

    ``prefix`` is ``<dir>/ind.<name>`` (any of its files also works). Follows
    the usual processing (Kipf & Welling): test rows are put back at the
    positions listed in ``test.index``; test ids missing from the file (CiteSeer)
    get zero features and no label. When ``allx`` is missing (PubMed offline),
    only the labelled ``x`` and ``tx`` rows have features: features are
    returned as None and a note says so. Every size the files claim (the
    largest key, the test ids, a sparse matrix's shape) is checked against
    the memory budget ``limit`` (bytes; default: this machine's memory)
    before anything of that size is allocated.
    """
    limit = limit or budget.machine_memory()
    base = files_base(prefix)

    def f(ext):
        return Path(f"{base}.{ext}")

    graph = load_pickle(f("graph"))
    if not isinstance(graph, dict):
        raise located(f("graph"), "expected a dict of adjacency lists")
    test_idx = _test_index(f("test.index"))
    n_train = _dense(load_pickle(f("y")), f("y"), limit).shape[0]
    ally = _dense(load_pickle(f("ally")), f("ally"), limit)
    test_sorted = np.sort(test_idx)
    lo, hi = int(test_sorted[0]), int(test_sorted[-1])
    n = max(ally.shape[0] + (hi - lo + 1), max(graph.keys()) + 1)
    tx = _dense(load_pickle(f("tx")), f("tx"), limit)
    _check_sizes(base, graph, n, hi - lo + 1, tx.shape[1] if tx.ndim == 2 else 0, limit)
    labels = _labels(n, ally, _dense(load_pickle(f("ty")), f("ty"), limit), test_idx)
    features, notes = None, []
    if f("allx").exists():
        features = _features(n, _dense(load_pickle(f("allx")), f("allx"), limit), tx, test_idx)
    else:
        notes.append(f"{base}.allx is missing: only {n_train + tx.shape[0]} of {n} vertices have features; "
                     "use --features random:D")
    masks = {"train": np.zeros(n, bool), "val": np.zeros(n, bool), "test": np.zeros(n, bool)}
    masks["train"][:n_train] = True
    masks["val"][n_train:n_train + 500] = True
    masks["test"][test_idx] = True
    src, dst = _edges(graph, n, f("graph"))
    return RawGraph(src=src, dst=dst, n=n, directed=False, source=str(base), lines=int(src.size),
                    node_ids=np.arange(n, dtype=np.int64), features=features, labels=labels,
                    masks=masks, notes=notes)


def _check_sizes(base: Path, graph: dict, n: int, test_span: int, width: int, limit: int) -> None:
    """The vertex count the largest key and the test ids imply, the edges and
    the features, against the memory budget, before any (n,) array exists."""
    edges = sum(map(len, graph.values()))
    what = (f"the largest vertex id ({n - 1:,}, from ind.*.graph's keys or ind.*.test.index) implies {n:,} "
            f"vertices{f' ({width:,} features each)' if width else ''}: that graph")
    budget.check(limit, budget.graph_bytes(n, edges, width) + 8 * test_span * max(width, 1), what, f"{base}.graph")


def _test_index(path: Path) -> np.ndarray:
    try:
        return np.array([int(x) for x in path.read_text().split()], dtype=np.int64)
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except ValueError:
        raise located(path, "non-numeric test index") from None


def _labels(n: int, ally: np.ndarray, ty: np.ndarray, test_idx: np.ndarray) -> np.ndarray:
    """(n,) int32 class of every vertex (-1: none), test rows at their ids."""
    test_sorted = np.sort(test_idx)
    lo, hi = int(test_sorted[0]), int(test_sorted[-1])
    labels = np.full(n, -1, dtype=np.int32)
    labels[:ally.shape[0]] = np.where(ally.sum(1) > 0, ally.argmax(1), -1)
    ty_full = np.zeros((hi - lo + 1, ty.shape[1]), dtype=ty.dtype)
    ty_full[test_sorted - lo] = ty
    labels[lo:hi + 1] = np.where(ty_full.sum(1) > 0, ty_full.argmax(1), -1)
    labels[test_idx] = labels[test_sorted]  # undo the file's test ordering
    return labels


def _features(n: int, allx: np.ndarray, tx: np.ndarray, test_idx: np.ndarray) -> np.ndarray:
    """(n, d) float32 features, test rows at their ids (zero rows for missing test ids)."""
    test_sorted = np.sort(test_idx)
    lo, hi = int(test_sorted[0]), int(test_sorted[-1])
    features = np.zeros((n, allx.shape[1]), dtype=np.float32)
    features[:allx.shape[0]] = allx
    tx_full = np.zeros((hi - lo + 1, tx.shape[1]), dtype=np.float32)
    tx_full[test_sorted - lo] = tx
    features[lo:hi + 1] = tx_full
    features[test_idx] = features[test_sorted]
    return features


def _edges(graph: dict, n: int, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The adjacency dict (Python objects by nature) flattened at C speed."""
    keys = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
    lengths = np.fromiter(map(len, graph.values()), dtype=np.int64, count=len(graph))
    src = np.repeat(keys, lengths)
    dst = np.fromiter(itertools.chain.from_iterable(graph.values()), dtype=np.int64, count=int(lengths.sum()))
    if dst.size and (dst.min() < 0 or dst.max() >= n):
        raise located(path, f"neighbour id outside 0..{n - 1}")
    return src, dst


def read_planetoid_whole(prefix: str, limit: int | None = None) -> Whole:
    """``ingest-read`` task: :func:`read_planetoid`; a layout it does not know is one line naming the files."""
    try:
        raw = read_planetoid(prefix, limit)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
        raise located(prefix, f"not the Planetoid layout this reader knows ({type(e).__name__}: {e})") from None
    return Whole(ParsedChunk(raw.src, raw.dst, raw.lines), int(raw.n or 0), raw.directed, 0,
                 NodeSource(raw.features, raw.labels, raw.masks, roles=f"{raw.source}.y"), list(raw.notes))


@dataclass(frozen=True)
class Planetoid:
    """The Planetoid reader: the ``ind.NAME.*`` files read whole on a worker."""

    name: str = "planetoid"
    # ``ind.NAME.*`` files, and a directory no other reader claims
    recognizes: Recognizes = Recognizes(prefixes=("ind.",), directory=True)
    names_files: bool = True  # DIR/ind.cora names ind.cora.x, ind.cora.graph...

    def precheck(self, path: str, split_scheme: str | None = None) -> None:
        """The file a read opens first (``ind.NAME.graph``), named as the reader names it."""
        from .probe import readable

        graph = Path(f"{files_base(path)}.graph")
        if not graph.exists():
            raise UserError(f"{graph}: file not found")
        readable(graph)

    def submit(self, tasks, path: str, opts: ReadOptions) -> RawSource:
        return submit_whole(tasks, "ingest-read", path, read_planetoid_whole, path, opts.limit)


READER = Planetoid()
