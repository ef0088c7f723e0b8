"""Node data for the store: features, labels, train/val/test masks, made
block by block on the workers.

A dataset's own features and labels are used when it has them (``auto``);
otherwise, with a warning, or when asked, they are generated from the seed:
``--features random:D`` draws standard normal float32 features, ``--labels
random:C`` uniform classes, and graphs without a split get a seeded random
split. ``--features file.npy`` reads an (n, D) array, memory-mapped, one row
range per block. Generated values depend on (seed, vertex) only, never on how
the rows are cut into blocks: random rows come in fixed chunks of
:data:`NODE_CHUNK` vertices, each drawn from its own seed stream.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from dask.sizeof import sizeof

from .errors import UserError, option, quoted
from .sources.records import NodeSource

log = logging.getLogger(__name__)

_FEATURE_SEED, _LABEL_SEED, _SPLIT_SEED = 1, 2, 3  # separate streams of the build seed
DEFAULT_DIM, DEFAULT_CLASSES = 64, 16
NODE_CHUNK = 65536
FEATURE_NORMS = ("none", "row")
FEATURE_DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class NodeSpec:
    """What the user asked for: ``features`` (auto, random:D, or an (n, D)
    .npy file), ``labels`` (auto or random:C), ``split`` (train, val, test
    fractions for graphs without a split), ``feature_norm`` (none or row)."""

    features: str = "auto"
    labels: str = "auto"
    split: tuple[float, float, float] = (0.6, 0.2, 0.2)
    seed: int = 0
    feature_norm: str = "none"
    feature_dtype: str = "float32"  # what the store holds; float16 halves it (the trainer computes in float32)

    def check(self) -> None:
        if not self.features.endswith(".npy"):
            parse_generated(self.features, "features")
        parse_generated(self.labels, "labels")
        if self.feature_dtype not in FEATURE_DTYPES:
            raise UserError(f"{quoted('--feature-dtype', self.feature_dtype)}: choose from {', '.join(FEATURE_DTYPES)}")
        if self.feature_norm not in FEATURE_NORMS:
            raise UserError(f"{quoted('--feature-norm', self.feature_norm)}: choose from {', '.join(FEATURE_NORMS)}")
        f = self.split
        if len(f) != 3 or not all(math.isfinite(x) for x in f) or min(f) < 0 or sum(f) > 1 + 1e-9:
            raise UserError(f"{_split(f)}: need three finite, non-negative fractions "
                            "summing to at most 1")
        if f[0] <= 0:
            raise UserError(f"{_split(f)}: the train fraction is 0, so no vertex would train "
                            f"(e.g. {option('--split', (0.6, 0.2, 0.2), '0.6,0.2,0.2')})")

    def check_split(self, n: int) -> None:
        """A random split of ``n`` vertices must give at least one training vertex."""
        if int(round(self.split[0] * n)) < 1:
            raise UserError(f"{_split(self.split)}: a train fraction of {self.split[0]} of the "
                            f"{n:,} vertices is no vertex at all")


def _split(f: tuple[float, ...]) -> str:
    """The split as the caller wrote it: ``--split 0.6,0.2,0.2`` or ``split=(0.6, 0.2, 0.2)``."""
    return option("--split", tuple(f), ",".join(map(str, f)))


@dataclass
class NodeData:
    """Node data of all n vertices (in-memory path and tests).

    Attributes: features (n, d) float32; labels (n,) int32, -1 unknown, or
    (n, C) bool (multi-label); train, val, test (n,) bool."""

    features: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    @property
    def classes(self) -> int:
        if self.labels.ndim == 2:
            return int(self.labels.shape[1])
        return int(self.labels.max()) + 1 if self.labels.size else 0


@dataclass
class NodeBlock:
    """Node data of rows ``lo..hi-1``; ``bad`` is the first non-finite
    feature as (vertex, column), or None."""

    lo: int
    hi: int
    features: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    bad: tuple[int, int] | None = None


@sizeof.register(NodeBlock)
def _sizeof_nodes(b: NodeBlock) -> int:
    return int(b.features.nbytes + b.labels.nbytes + 3 * b.train.nbytes)


@dataclass(frozen=True)
class NodePlan:
    """Decisions taken once, on the client, from small facts: the feature
    width, the class count, and where each piece comes from."""

    dim: int
    classes: int
    features_from: str  # "source", "file", "random"
    labels_from: str  # "source", "random"
    split_from: str  # "source", "random"
    label_kind: str = "single"  # "multi": (n, C) bool targets (a sigmoid per class)


def parse_generated(spec: str, what: str) -> int | None:
    """``random:D`` -> D (``random:1e3`` is 1000); ``auto`` -> None."""
    if spec == "auto":
        return None
    kind, _, value = spec.partition(":")
    m = re.fullmatch(r"([0-9]{1,30})(?:[eE]\+?([0-9]{1,3}))?", value)
    number = int(m.group(1)) * 10 ** int(m.group(2) or 0) if m else 0
    if kind != "random" or number < 1:
        extra = ", or a .npy file" if what == "features" else ""
        raise UserError(f"{option('--' + what, spec, repr(spec))}: expected 'auto' or 'random:N' with N >= 1{extra}")
    return number


def check_generated(spec: NodeSpec, n: int, limit: int | None) -> None:
    """Generated features must fit the memory budget (``n`` rows of float32),
    checked before any row is drawn."""
    from .sources import budget

    dim = None if spec.features.endswith(".npy") else parse_generated(spec.features, "features")
    if dim is not None:
        what = f"{n:,} vertices x {dim:,} features (float32)" if n > 1 else f"{dim:,} features (float32) even for one vertex"
        budget.check(limit, 4 * n * dim, f"{option('--features', spec.features)}: {what}")


Facts = tuple[int | None, int | None, bool, int | None, str]


def source_facts(src: NodeSource | None) -> Facts:
    """(feature width, class count, has masks, rows, label kind) of a source
    (a small task); rows is -1 when the arrays disagree about it."""
    if src is None:
        return None, None, False, None, "single"
    if src.features is not None and np.dtype(src.features.dtype).kind not in "fiub":
        raise UserError(f"the node features are {np.dtype(src.features.dtype)}: they must be real numbers "
                        "(complex values would lose their imaginary part)")
    dim = None if src.features is None else int(src.features.shape[1])
    classes = src.classes
    if classes is None and src.labels is not None:
        classes = int(src.labels.shape[1]) if src.label_kind == "multi" else int(np.max(src.labels, initial=-1)) + 1
    lengths = {a.shape[0] for a in (src.features, src.labels, *(src.masks or {}).values()) if a is not None}
    rows = lengths.pop() if len(lengths) == 1 else -1
    return dim, classes, src.masks is not None, rows, src.label_kind


def npy_shape(path: str) -> tuple[tuple[int, ...], str]:
    """Shape and dtype of a .npy file without reading it (a small task)."""
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except PermissionError:
        raise UserError(f"{path}: permission denied: this user may not read the file") from None
    except (ValueError, OSError) as e:
        raise UserError(f"{path}: not a .npy array ({e})") from None
    return tuple(x.shape), x.dtype.str


def check_features_file(path: str, c: Any) -> None:
    """A ``--features`` file the build would refuse (truncated, not 2-D numbers, another row count than the
    graph's exact vertex count; ``c`` the plan's :class:`~.sources.counts.Counts`): its one line, before a plan
    says fits."""
    shape, dtype = npy_shape(path)
    if len(shape) != 2 or np.dtype(dtype).kind not in "fiub":
        raise UserError(f"{path}: features must be a 2-D array of numbers, got shape {shape} of {np.dtype(dtype)}")
    if not c.estimated and "expected" not in c.how and shape[0] != c.n:
        raise UserError(f"{path}: feature matrix has {shape[0]} rows but the graph has {c.n} vertices")


def plan(spec: NodeSpec, n: int, name: str, facts: Facts, npy: tuple[tuple[int, ...], str] | None,
         notes: list[str]) -> NodePlan:
    """Choose the sources of features, labels and split; warn about generated ones."""
    dim_src, classes_src, masks_src, rows_src, kind = facts
    if rows_src is not None and rows_src != n:
        raise UserError(f"{name}: the node data has {'arrays of different lengths' if rows_src < 0 else rows_src} "
                        f"rows, the graph has {n} vertices")
    if spec.features.endswith(".npy"):
        if npy is None:
            raise UserError(f"{spec.features}: not read")
        shape, dtype = npy
        if len(shape) != 2:
            raise UserError(f"{spec.features}: features must be a 2-D array, got shape {shape}")
        if shape[0] != n:
            raise UserError(f"{spec.features}: feature matrix has {shape[0]} rows but the graph has {n} vertices")
        if np.dtype(dtype).kind not in "fiub":
            raise UserError(f"{spec.features}: features must be numbers, got dtype {np.dtype(dtype)}")
        dim, features_from = shape[1], "file"
    elif (d := parse_generated(spec.features, "features")) is not None:
        dim, features_from = d, "random"
    elif dim_src is not None:
        dim, features_from = dim_src, "source"
    else:
        note = "; ".join(notes) or f"{name} has no node features"
        log.warning("%s: generating random:%d features (choose with %s)", note, DEFAULT_DIM,
                    option("--features", "random:D"))
        dim, features_from = DEFAULT_DIM, "random"
    c = parse_generated(spec.labels, "labels")
    if c is not None and c > max(n, 2):
        raise UserError(f"{option('--labels', spec.labels)}: {c:,} classes for {n:,} vertices (at most one class per vertex)")
    if c is None and classes_src is None:
        log.warning("%s has no labels: generating random:%d (choose with %s)", name, DEFAULT_CLASSES,
                    option("--labels", "random:C"))
        c = DEFAULT_CLASSES
    if c is None and kind == "single":
        if not classes_src:
            raise UserError(f"{name}: the labels give 0 classes for {n:,} vertices (no vertex has a class)")
        if classes_src > max(n, 2):
            raise UserError(f"{name}: the labels give {classes_src:,} classes for {n:,} vertices (class ids must be "
                            "below the number of vertices)")
    out = NodePlan(dim, c, features_from, "random", "random") if c is not None else \
        NodePlan(dim, int(classes_src or 0), features_from, "source", "source" if masks_src else "random", kind)
    if out.split_from == "random":
        spec.check_split(n)
    return out


def split_codes(n: int, fractions: tuple[float, float, float], seed: int) -> np.ndarray:
    """(n,) int8: 1 train, 2 val, 3 test, 0 none; seeded, exact counts."""
    order = np.random.default_rng([seed, _SPLIT_SEED]).permutation(n)
    cuts = np.cumsum([0] + [int(round(f * n)) for f in fractions])
    codes = np.zeros(n, np.int8)
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:]), start=1):
        codes[order[a:min(b, n)]] = k
    return codes


def _chunked(lo: int, hi: int, draw) -> np.ndarray:
    """Rows lo..hi-1 of a generated array whose chunk c is ``draw(c, size)``."""
    parts = []
    for c in range(lo // NODE_CHUNK, (hi - 1) // NODE_CHUNK + 1):  # a loop over 64k-row chunks
        start = c * NODE_CHUNK
        block = draw(c, NODE_CHUNK)
        parts.append(block[max(lo, start) - start:min(hi, start + NODE_CHUNK) - start])
    return np.concatenate(parts)


def normalize_features(x: np.ndarray, how: str) -> np.ndarray:
    """``row``: divide each row by its sum (Kipf & Welling's preprocessing;
    rows summing to zero are left alone). ``none``: unchanged."""
    if how == "none":
        return x
    if how != "row":
        raise UserError(f"{quoted('--feature-norm', how)}: choose from {', '.join(FEATURE_NORMS)}")
    s = x.sum(1, keepdims=True, dtype=np.float64)
    s[s == 0] = 1.0
    return (x / s).astype(np.float32)


def node_block(lo: int, hi: int, spec: NodeSpec, np_: NodePlan, source: NodeSource | None,
               codes: np.ndarray | None) -> NodeBlock:
    """The ``nodes`` task of one row block."""
    seed = spec.seed
    if np_.features_from == "file":
        with np.errstate(over="ignore"):  # a value beyond float32's range becomes inf: refused below, in one line
            x = np.asarray(np.load(spec.features, mmap_mode="r", allow_pickle=False)[lo:hi], dtype=np.float32)
    elif np_.features_from == "source" and source is not None and source.features is not None:
        with np.errstate(over="ignore"):
            x = np.ascontiguousarray(source.features[lo:hi], dtype=np.float32)
    else:
        x = _chunked(lo, hi, lambda c, k: np.random.default_rng([seed, _FEATURE_SEED, c])
                     .standard_normal((k, np_.dim), dtype=np.float32))
    with np.errstate(over="ignore"):
        x = normalize_features(x, spec.feature_norm).astype(spec.feature_dtype, copy=False)
    bad = None
    finite = np.isfinite(x)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        bad = (lo + int(r), int(c))
    if np_.labels_from == "source" and source is not None and source.labels is not None:
        y = np.asarray(source.labels[lo:hi], bool if np_.label_kind == "multi" else np.int32)
    else:
        y = _chunked(lo, hi, lambda c, k: np.random.default_rng([seed, _LABEL_SEED, c])
                     .integers(0, np_.classes, k).astype(np.int32))
    if np_.split_from == "source" and source is not None and source.masks is not None:
        m = source.masks
        train, val, test = (np.asarray(m[k][lo:hi], bool) for k in ("train", "val", "test"))
    elif codes is not None:
        cc = codes[lo:hi]
        train, val, test = cc == 1, cc == 2, cc == 3
    else:
        raise ValueError("a random split needs its codes")
    return NodeBlock(lo, hi, x, y, train, val, test, bad)


Check = tuple[tuple[int, int] | None, int, int]


def block_check(lo: int, hi: int, spec: NodeSpec, np_: NodePlan, source: NodeSource | None,
                codes: np.ndarray | None) -> Check:
    """The ``nodes-check`` task: :func:`node_block`'s first non-finite
    feature (or None), its training vertices and those of them with a label
    (what the trainer trains on), the block itself let go."""
    b = node_block(lo, hi, spec, np_, source, codes)
    return b.bad, int(np.count_nonzero(b.train)), int(np.count_nonzero(b.train & labelled(b.labels)))


def labelled(labels: np.ndarray) -> np.ndarray:
    """(k,) bool: the rows with a label as the trainer reads them (:mod:`shgcn.trainer.targets`): a class id
    >= 0; every multi-label row (a row of zeros says no class applies)."""
    return np.ones(labels.shape[0], bool) if labels.ndim == 2 else labels >= 0


def check_trainable(checks: list[Check], spec: NodeSpec, np_: NodePlan, name: str, roles: str | None) -> None:
    """Refuse, in one line naming the file the training set came from (``roles``; else the graph ``name``), a
    build with no labelled training vertex: the trainer would refuse the store (``checks``: every block's
    :func:`block_check`)."""
    trained, known = sum(c[1] for c in checks), sum(c[2] for c in checks)
    if known:
        return
    if np_.split_from == "source":
        where = roles or name
        why = ("the training split holds no vertex" if not trained else
               f"none of the {trained:,} training vertices has a label")
    else:
        where = name
        why = f"none of the {trained:,} training vertices of the random split ({_split(spec.split)}) has a label"
    raise UserError(f"{where}: {why}: nothing to train on")
