"""Node data for the store: features, labels, train/val/test masks.

A dataset's own features and labels are used when it has them (``auto``);
otherwise, with a warning, or when asked, they are generated from the seed: ``--features random:D`` draws
standard normal float32 features, ``--labels random:C`` uniform classes, and
graphs without a split get a seeded random split.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from .errors import UserError
from .graph import Graph

log = logging.getLogger(__name__)

_FEATURE_SEED, _LABEL_SEED, _SPLIT_SEED = 1, 2, 3  # separate streams of the build seed
DEFAULT_DIM, DEFAULT_CLASSES = 64, 16


@dataclass
class NodeData:
    """Attributes: features (n, d) float32; labels (n,) int32, -1 unknown;
    train, val, test (n,) bool."""

    features: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    @property
    def classes(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0


def parse_generated(spec: str, what: str) -> int | None:
    """``random:D`` -> D; ``auto`` -> None."""
    if spec == "auto":
        return None
    kind, _, value = spec.partition(":")
    if kind != "random" or not value.isdigit() or int(value) < 1:
        extra = ", or a .npy file" if what == "features" else ""
        raise UserError(f"--{what} {spec!r}: expected 'auto' or 'random:N' with N >= 1{extra}")
    return int(value)


def load_features(path: str, n: int) -> np.ndarray:
    """(n, d) float32 features from a ``.npy`` file, one row per vertex in
    the graph's vertex order."""
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except ValueError as e:
        raise UserError(f"{path}: not a .npy array ({e})") from None
    if x.ndim != 2:
        raise UserError(f"{path}: features must be a 2-D array, got shape {x.shape}")
    if x.shape[0] != n:
        raise UserError(f"{path}: feature matrix has {x.shape[0]} rows but the graph has {n} vertices")
    return np.ascontiguousarray(x, dtype=np.float32)



FEATURE_NORMS = ("none", "row")


def normalize_features(x: np.ndarray, how: str) -> np.ndarray:
    """``row``: divide each row by its sum (Kipf & Welling's preprocessing;
    rows summing to zero are left alone). ``none``: unchanged."""
    if how == "none":
        return x
    if how != "row":
        raise UserError(f"--feature-norm {how!r}: choose from {', '.join(FEATURE_NORMS)}")
    s = x.sum(1, keepdims=True, dtype=np.float64)
    s[s == 0] = 1.0
    return (x / s).astype(np.float32)


def node_data(g: Graph, features: str, labels: str, split: tuple[float, float, float], seed: int,
              feature_norm: str = "none") -> NodeData:
    """Features, labels and masks for the ``n`` vertices of ``g`` (in its order).

    Parameters
    ----------
    features : ``auto``, ``random:D`` or a ``.npy`` path
    labels : ``auto`` or ``random:C``
    split : train, val, test fractions, for graphs without their own split
    feature_norm : ``none`` or ``row``
    """
    x = normalize_features(_features(g, features, seed), feature_norm)
    c = parse_generated(labels, "labels")
    if c is None and g.labels is None:
        log.warning("%s has no labels: generating random:%d (choose with --labels random:C)", g.source, DEFAULT_CLASSES)
        c = DEFAULT_CLASSES
    if c is not None:
        y = np.random.default_rng([seed, _LABEL_SEED]).integers(0, c, g.n).astype(np.int32)
        return NodeData(x, y, *random_split(g.n, split, seed))
    y = np.asarray(g.labels, dtype=np.int32)
    if y.shape[0] != g.n:
        raise UserError(f"{g.source}: {y.shape[0]} labels for {g.n} vertices")
    if g.masks is not None:
        return NodeData(x, y, g.masks["train"], g.masks["val"], g.masks["test"])
    return NodeData(x, y, *random_split(g.n, split, seed))


def _features(g: Graph, spec: str, seed: int) -> np.ndarray:
    if spec.endswith(".npy"):
        return load_features(spec, g.n)
    d = parse_generated(spec, "features")
    if d is None and g.features is not None:
        x = np.ascontiguousarray(g.features, dtype=np.float32)
        if x.shape[0] != g.n:
            raise UserError(f"{g.source}: feature matrix has {x.shape[0]} rows but the graph has {g.n} vertices")
        return x
    if d is None:
        note = "; ".join(g.notes) or f"{g.source} has no node features"
        log.warning("%s: generating random:%d features (choose with --features random:D)", note, DEFAULT_DIM)
        d = DEFAULT_DIM
    return np.random.default_rng([seed, _FEATURE_SEED]).standard_normal((g.n, d), dtype=np.float32)


def random_split(n: int, fractions: tuple[float, float, float], seed: int) -> tuple[np.ndarray, ...]:
    """Seeded disjoint train/val/test masks with the given fractions of n."""
    if len(fractions) != 3 or min(fractions) < 0 or sum(fractions) > 1 + 1e-9:
        raise UserError(f"--split {fractions}: need three non-negative fractions summing to at most 1")
    order = np.random.default_rng([seed, _SPLIT_SEED]).permutation(n)
    cuts = np.cumsum([0] + [int(round(f * n)) for f in fractions])
    masks = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        m = np.zeros(n, bool)
        m[order[a:min(b, n)]] = True
        masks.append(m)
    return tuple(masks)
