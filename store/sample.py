"""Mini-batch samplers over a graph, seeded per batch.

Batch k of stream s is drawn from ``numpy.random.default_rng([seed, s, k])``
alone, so any Dask worker or MPI rank can re-draw it from its number. Stream
:data:`BUILD` feeds the stochastic hypergraph; :data:`HELDOUT` is reserved for
evaluating partitions on batches that were not used to build them; the
trainer uses :data:`TRAIN`.

Every sampler returns the sorted vertex ids of the batch; the batch's
subgraph is the one induced on them. ``size`` is the target number of
vertices: exact for ``node``; ``edge`` samples ``size // 2`` edges;
``rw`` starts ``size // (walk_length + 1)`` walks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import UserError

BUILD, HELDOUT, TRAIN, NORM = 0, 1, 2, 3  # seed streams
SAMPLERS = ("node", "edge", "rw")


@dataclass(frozen=True)
class SamplerConfig:
    """Attributes: kind (node, edge, rw); size (target vertices per batch);
    walk_length (rw); seed."""

    kind: str = "node"
    size: int = 0
    walk_length: int = 2
    seed: int = 0

    def check(self, n: int) -> None:
        if self.kind not in SAMPLERS:
            raise UserError(f"--sampler {self.kind!r}: choose from {', '.join(SAMPLERS)}")
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
        if cfg.kind == "edge":
            deg = np.maximum(np.diff(self.indptr), 1).astype(np.float64)
            rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
            w = 1.0 / deg[rows] + 1.0 / deg[self.indices]  # GraphSAINT: P(u, v) ∝ 1/deg u + 1/deg v
            self._cum = np.cumsum(w)
            self._rows = rows

    def batch(self, k: int, stream: int = BUILD) -> np.ndarray:
        """(B,) int64 sorted vertex ids of batch ``k`` of ``stream``."""
        rng = np.random.default_rng([self.cfg.seed, stream, k])
        kind = self.cfg.kind
        if kind == "node":
            return np.sort(rng.choice(self.n, size=self.cfg.size, replace=False)).astype(np.int64)
        if kind == "edge":
            if self._cum.size == 0:
                return np.sort(rng.choice(self.n, size=self.cfg.size, replace=False)).astype(np.int64)
            e = np.searchsorted(self._cum, rng.random(max(1, self.cfg.size // 2)) * self._cum[-1], side="right")
            e = np.minimum(e, self._cum.size - 1)
            return np.unique(np.concatenate([self._rows[e], self.indices[e]]))
        roots = rng.integers(0, self.n, max(1, self.cfg.size // (self.cfg.walk_length + 1)))
        visited = [roots]
        cur = roots
        for _ in range(self.cfg.walk_length):  # a loop over steps, vectorized over walks
            deg = self.indptr[cur + 1] - self.indptr[cur]
            step = (rng.random(cur.size) * deg).astype(np.int64)
            nxt = self.indices[np.minimum(self.indptr[cur] + step, max(self.indices.size - 1, 0))] \
                if self.indices.size else cur
            cur = np.where(deg > 0, nxt, cur)  # a vertex without out-neighbours ends its walk in place
            visited.append(cur)
        return np.unique(np.concatenate(visited))

    def batches(self, ks, stream: int = BUILD) -> list[np.ndarray]:
        return [self.batch(int(k), stream) for k in ks]
