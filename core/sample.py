"""Mini-batch samplers over a graph, seeded per batch.

Batch k of stream s is drawn from ``numpy.random.default_rng([seed, s, k])``
alone, so any Dask worker or MPI rank can re-draw it from its number. The
streams (:data:`STREAMS`):

- :data:`BUILD` (0): what ``shp`` builds from (sampled nets, estimates of
  inclusion probabilities) and the Hoeffding convergence record;
- :data:`HELDOUT` (1): the reported mini-batch volume of every model; never
  used to build or to choose anything;
- :data:`TRAIN` (2): the trainer's batches; :data:`NORM` (3): the trainer's
  pre-sampled GraphSAINT normalization counts;
- :data:`VALIDATION` (4): what ``shp`` chooses among its steps with (edge and
  rw samplers; the node sampler has an exact closed form instead).

Distinct streams differ in the second word of the seed sequence, so their
generators are independent whatever the batch numbers.

Every sampler returns the sorted vertex ids of the batch; the batch's
subgraph is the one induced on them. ``size`` is the target number of
vertices: exact for ``node``; ``edge`` samples ``size // 2`` edges;
``rw`` starts ``size // (walk_length + 1)`` walks.

The samplers are declared (:data:`SAMPLERS`, a
:class:`~shgcn.core.registry.Registry` of :class:`SamplerSpec`) with their
capabilities: whether they draw on the graph, whether their inclusion
probabilities have a closed form, whether GraphSAINT's normalisation is on by
default, whether they draw edges by GraphSAINT's weights or walk. Nothing
outside this module compares a sampler's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import UserError
from .options import Option
from .registry import Registry

if TYPE_CHECKING:
    import scipy.sparse as sp

BUILD, HELDOUT, TRAIN, NORM, VALIDATION = 0, 1, 2, 3, 4  # seed streams
STREAMS = {"build": BUILD, "heldout": HELDOUT, "train": TRAIN, "norm": NORM, "validation": VALIDATION}


@dataclass(frozen=True)
class SamplerSpec:
    """A mini-batch sampler (``--sampler``): its name, how it draws a batch, and what it can do.

    Attributes
    ----------
    draw : ``(sampler, rng) -> (B,) int64`` sorted vertex ids of one batch (``sampler``: a :class:`Sampler`)
    needs_graph : it draws on the graph's edges (the trainer and the build read the graph for it)
    closed_form : its inclusion probabilities have an exact closed form (uniform vertices): no validation
        batches, and shp builds from columns
    saint : GraphSAINT's aggregator and loss normalisation on by default (``--saint auto``)
    edge_weights : it draws edges by GraphSAINT's weights 1/deg u + 1/deg v (the sampler keeps their running sum)
    walks : it walks ``walk_length`` steps from uniform roots (a batch row's fan-in follows the walk)
    """

    name: str
    description: str
    draw: Callable[[Sampler, np.random.Generator], np.ndarray]
    needs_graph: bool = True
    closed_form: bool = False
    saint: bool = True
    edge_weights: bool = False
    walks: bool = False
    options: tuple[Option, ...] = ()


def _node(s: Sampler, rng: np.random.Generator) -> np.ndarray:
    return sorted_distinct(rng.choice(s.n, size=s.cfg.size, replace=False), s.n)


def sorted_distinct(ids: np.ndarray, n: int) -> np.ndarray:
    """(B,) int64: distinct ``ids`` in [0, n) sorted; by a mask over the n vertices (n bytes written and
    scanned) where that is cheaper than a comparison sort of the B ids (up to n = 32 B: a batch of 10% of a
    graph's vertices), else sorted. The same array either way."""
    if n <= 32 * ids.size:
        mask = np.zeros(n, bool)
        mask[ids] = True
        return np.flatnonzero(mask).astype(np.int64, copy=False)
    return np.sort(ids).astype(np.int64, copy=False)


def _edge(s: Sampler, rng: np.random.Generator) -> np.ndarray:
    if s._cum.size == 0:
        return _node(s, rng)
    e = np.searchsorted(s._cum, rng.random(max(1, s.cfg.size // 2)) * s._cum[-1], side="right")
    e = np.minimum(e, s._cum.size - 1)
    return np.unique(np.concatenate([s._rows[e], s.indices[e]]))


def _rw(s: Sampler, rng: np.random.Generator) -> np.ndarray:
    roots = rng.integers(0, s.n, max(1, s.cfg.size // (s.cfg.walk_length + 1)))
    return np.unique(s.walks(rng, roots))


SAMPLERS: Registry[SamplerSpec] = Registry.of(
    "--sampler",
    SamplerSpec("node", "uniform vertices", _node, needs_graph=False, closed_form=True, saint=False),
    SamplerSpec("edge", "GraphSAINT's edge sampler (P(u, v) ∝ 1/deg u + 1/deg v)", _edge, edge_weights=True),
    SamplerSpec("rw", "GraphSAINT's random walks (--walk-length steps from uniform roots)", _rw, walks=True),
)


@dataclass(frozen=True)
class SamplerConfig:
    """Attributes: kind (node, edge, rw); size (target vertices per batch);
    walk_length (rw); seed."""

    kind: str = "node"
    size: int = 0
    walk_length: int = 2
    seed: int = 0

    @property
    def spec(self) -> SamplerSpec:
        """The sampler's declaration; a :class:`UserError` listing the samplers for an unknown one."""
        return SAMPLERS.get_spec(self.kind)

    def check(self, n: int) -> None:
        self.spec  # noqa: B018 - an unknown sampler: one line listing the known ones
        if not 1 <= self.size <= n:
            raise UserError(f"--batch-size {self.size}: must be between 1 and the {n} vertices")
        if self.walk_length < 1:
            raise UserError("--walk-length must be >= 1")


class Sampler:
    """Draws batches of one kind over ``adj`` (CSR pattern without self loops;
    the walks and edge probabilities use it as stored)."""

    def __init__(self, adj: sp.csr_matrix, cfg: SamplerConfig):
        cfg.check(adj.shape[0])
        self.cfg = cfg
        self.n = adj.shape[0]
        self.indptr = adj.indptr.astype(np.int64)
        self.indices = adj.indices.astype(np.int64)
        self.spec = cfg.spec
        if self.spec.edge_weights:
            deg = np.maximum(np.diff(self.indptr), 1).astype(np.float64)
            rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
            w = 1.0 / deg[rows] + 1.0 / deg[self.indices]  # GraphSAINT: P(u, v) ∝ 1/deg u + 1/deg v
            self._cum = np.cumsum(w)
            self._rows = rows

    def batch(self, k: int, stream: int = BUILD) -> np.ndarray:
        """(B,) int64 sorted vertex ids of batch ``k`` of ``stream``."""
        return self.spec.draw(self, np.random.default_rng([self.cfg.seed, stream, k]))

    def walks(self, rng: np.random.Generator, roots: np.ndarray) -> np.ndarray:
        """(walk_length + 1, R) int64: the vertex of every walk at every step
        (the rw sampler's walks from ``roots``; a vertex without out-neighbours
        ends its walk in place)."""
        visited = [roots]
        cur = roots
        for _ in range(self.cfg.walk_length):  # a loop over steps, vectorized over walks
            deg = self.indptr[cur + 1] - self.indptr[cur]
            step = (rng.random(cur.size) * deg).astype(np.int64)
            nxt = self.indices[np.minimum(self.indptr[cur] + step, max(self.indices.size - 1, 0))] \
                if self.indices.size else cur
            cur = np.where(deg > 0, nxt, cur)
            visited.append(cur)
        return np.stack(visited)

    @property
    def edge_draws(self) -> int:
        """Edges (entries of ``adj``) the edge sampler draws, with replacement."""
        return max(1, self.cfg.size // 2)

    def edge_probabilities(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The edge sampler's distribution: ``(rows, cols, p)``, one (E,) array
        each over the entries of ``adj``; p sums to 1 (GraphSAINT's
        P(u, v) ∝ 1/deg u + 1/deg v)."""
        if not self.spec.edge_weights:
            raise ValueError("edge_probabilities needs a sampler that draws edges by weight (edge)")
        w = np.diff(self._cum, prepend=0.0)
        return self._rows, self.indices, w / max(float(self._cum[-1]), 1e-300) if w.size else w

    def batches(self, ks, stream: int = BUILD) -> list[np.ndarray]:
        return [self.batch(int(k), stream) for k in ks]
