"""Typed containers passed between pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .tokens import ChunkError

if TYPE_CHECKING:  # an annotation only: reading the records needs no scipy (``pipeline build --help`` lists formats)
    import scipy.sparse as sp


@dataclass
class ParsedChunk:
    """Edges of one parse task, in file order.

    Attributes
    ----------
    a : (E,) int64 (int32 once relabelled), source vertex (pairs) or chunk-local vertex line (adjacency formats)
    b : (E,) int64 (int32 once relabelled), target vertex
    n_lines : int, lines owned by the chunk
    n_comments : int, comment lines among them
    error : the first problem found (chunk-local line; -1 for the whole file), or None
    """

    a: np.ndarray
    b: np.ndarray
    n_lines: int = 0
    n_comments: int = 0
    error: ChunkError | None = None


@dataclass
class NodeSource:
    """Node data that came with the graph (Planetoid, OGB, GraphSAINT,
    generators), in vertex order.

    Attributes: features (n, d) numbers, or None; labels (n,) int32, -1
    unknown, or (n, C) bool for multi-label targets (``label_kind``
    ``multi``), or None; masks dict of (n,) bool (train, val, test) or None;
    classes: the class count when the source knows it (else from the
    labels). Features and labels may be :class:`~.rowfiles.RowFile` views
    of arrays on disk: each row block reads only its rows, and nothing
    travels but the file's name. ``roles``: where the masks' training set
    came from (a file, or the API's parameter), named by the build's line
    when no training vertex has a label (None: the source's name).
    """

    features: Any = None
    labels: Any = None
    masks: dict[str, np.ndarray] | None = None
    classes: int | None = None
    label_kind: str = "single"
    roles: str | None = None


@dataclass
class RawGraph:
    """What a reader returns: edges as found in the file, plus node data.

    Attributes
    ----------
    src, dst : (E,) int64
        Edge endpoints. If ``n`` is set they are already 0-based ids below
        ``n``; otherwise they are the file's own labels and get relabelled.
    n : int or None
        Vertex count declared by the file (Matrix Market size line, METIS
        header, Planetoid node count), or None for plain edge lists.
    directed : bool or None
        What the file says about direction (None: the file does not say).
    source : str
        The file or dataset name, for messages.
    lines : int
        Edge entries read (before removing self loops and duplicates).
    node_ids : (n,) int64 or None
        File label of each vertex when ``n`` is declared.
    features : (n, d) float32 or None
    labels : (n,) int32 or None, -1 where unknown
    masks : dict of (n,) bool or None
        ``train``, ``val``, ``test`` split, when the dataset defines one.
    """

    src: np.ndarray
    dst: np.ndarray
    n: int | None
    directed: bool | None
    source: str
    lines: int
    node_ids: np.ndarray | None = None
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    masks: dict[str, np.ndarray] | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Graph:
    """A clean graph: 0..n-1 ids, no self loops, no duplicate edges.

    Attributes
    ----------
    adj : scipy.sparse.csr_matrix, (n, n), float32 ones
        Row i holds the out-neighbours of i (both directions if undirected).
        Column indices are sorted within each row.
    directed : bool
    node_ids : (n,) int64
        The label of each vertex in the input file.
    stats : dict
        Counts found while cleaning: lines, self_loops, duplicates.
    """

    adj: sp.csr_matrix
    directed: bool
    node_ids: np.ndarray
    source: str
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    masks: dict[str, np.ndarray] | None = None
    stats: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.adj.shape[0]

    @property
    def edges(self) -> int:
        """Edges as usually published: directed arcs, or undirected pairs."""
        return self.adj.nnz if self.directed else self.adj.nnz // 2
