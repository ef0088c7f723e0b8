"""Inclusion probabilities of a mini-batch sampler: P(v in V') for every
vertex and P(i in V', j in V') for every off-diagonal nonzero (i, j) of Â.

They are what the expected mini-batch volume depends on to first order: a
batch sends row j to part k only if j and a row of column j in part k are
both drawn. ``shp`` builds its deterministic surrogate hypergraph from them
(see :mod:`..stochastic`).

- ``node`` (B of n vertices, uniformly without replacement): exact,
  P(v) = B/n, P(i, j) = B(B-1) / (n(n-1)).
- ``edge`` (m = B // 2 entries of the graph drawn with replacement with
  GraphSAINT's P(u, v) ∝ 1/deg u + 1/deg v; the batch is their endpoints):
  exact. With π(T) the probability that one draw touches the vertex set T,
  P(T ∩ V' = ∅) = (1 - π(T))^m, so P(v) = 1 - (1 - π_v)^m and
  P(i, j) = 1 - (1-π_i)^m - (1-π_j)^m + (1 - π_i - π_j + p_ij)^m, where p_ij
  is the probability of the entries (i, j) and (j, i).
- ``rw`` (R = B // (L+1) independent walks of L steps from uniform roots):
  the per-walk probabilities r_v and r_ij (a walk visits v; visits both i and
  j) are estimated from walks of the BUILD stream, then combined over the R
  independent walks exactly as for the edge sampler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from shgcn.core.sample import BUILD, Sampler

WALKS_PER_VERTEX = 64  # rw: walks simulated per vertex of the graph for the estimate...
MIN_WALKS = 1 << 20  # ...and at least this many
_WALK_CHUNK = 1 << 20  # walks simulated at once (bounds the memory)
_WALK_OFFSET = 2_000_000  # rw estimates draw batch numbers from here on in the BUILD stream


@dataclass
class Inclusion:
    """Attributes
    ----------
    vertex : (n,) float64, P(v in V')
    rows, cols : (E,) int64, the off-diagonal nonzeros of Â in column order (CSC)
    pair : (E,) float64, P(rows[e] in V' and cols[e] in V')
    q : float or None; node sampler: P(i drawn | j drawn), the same for every pair
    curve : (cmax+1,) float64 or None; node sampler: P(one of c given other
        vertices is drawn | j drawn), exact (drawing without replacement)
    """

    vertex: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    pair: np.ndarray
    q: float | None = None
    curve: np.ndarray | None = None

    @property
    def uniform(self) -> bool:
        """Every vertex and pair equally likely (the node sampler)."""
        return self.q is not None and self.curve is not None


def off_diagonal(a: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) int64 of the off-diagonal nonzeros of ``a``, column by column."""
    csc = sp.csc_matrix(a)
    csc.sort_indices()
    cols = np.repeat(np.arange(csc.shape[1], dtype=np.int64), np.diff(csc.indptr))
    rows = csc.indices.astype(np.int64)
    off = rows != cols
    return rows[off], cols[off]


def _none_hit(x: np.ndarray, m: int) -> np.ndarray:
    """(1 - x)^m for probabilities x of one draw, computed stably."""
    return np.exp(m * np.log1p(-np.clip(x, 0.0, 1.0 - 1e-15)))


def _pair_from_single(r: np.ndarray, rows: np.ndarray, cols: np.ndarray, r_pair: np.ndarray, m: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """P(v) and P(i, j) over m independent draws from per-draw probabilities
    r (a draw touches v) and r_pair (a draw touches both i and j)."""
    none = _none_hit(r, m)
    both_missed = _none_hit(r[rows] + r[cols] - r_pair, m)
    return 1.0 - none, np.clip(1.0 - none[rows] - none[cols] + both_missed, 0.0, 1.0)


def _lookup(keys: np.ndarray, values: np.ndarray, want: np.ndarray) -> np.ndarray:
    """values[k] for each ``want`` found among ``keys`` (sorted, unique), else 0."""
    pos = np.minimum(np.searchsorted(keys, want), max(keys.size - 1, 0))
    hit = keys[pos] == want if keys.size else np.zeros(want.size, bool)
    return np.where(hit, values[pos] if keys.size else 0.0, 0.0)


def inclusion(a: sp.spmatrix, sampler: Sampler) -> Inclusion:
    """Inclusion probabilities of ``sampler``'s batches for Â = ``a`` (see
    the module doc); exact for node and edge, estimated for rw."""
    n = a.shape[0]
    rows, cols = off_diagonal(a)
    spec, size = sampler.cfg.spec, sampler.cfg.size
    if spec.closed_form or (spec.edge_weights and sampler.indices.size == 0):
        from ...metrics.batches import none_drawn

        pv = size / n
        q = (size - 1) / max(n - 1, 1)
        deg = np.bincount(cols, minlength=n)
        return Inclusion(np.full(n, pv), rows, cols, np.full(rows.size, pv * q), q,
                         1.0 - none_drawn(n, size, int(deg.max(initial=0))))
    if spec.edge_weights:
        er, ec, p = sampler.edge_probabilities()
        r = np.bincount(er, weights=p, minlength=n) + np.bincount(ec, weights=p, minlength=n)
        lo, hi = np.minimum(er, ec), np.maximum(er, ec)  # (u, v) and (v, u) touch the same pair
        keys, inv = np.unique(lo * n + hi, return_inverse=True)
        per_key = np.bincount(inv.ravel(), weights=p, minlength=keys.size)
        want = np.minimum(rows, cols) * n + np.maximum(rows, cols)
        pv, pair = _pair_from_single(r, rows, cols, _lookup(keys, per_key, want), sampler.edge_draws)
        return Inclusion(pv, rows, cols, pair)
    return _walk_inclusion(sampler, rows, cols, n)


def _walk_inclusion(sampler: Sampler, rows: np.ndarray, cols: np.ndarray, n: int) -> Inclusion:
    """rw: per-walk visit probabilities estimated from ``WALKS_PER_VERTEX * n``
    walks (BUILD stream), combined over the batch's independent walks."""
    L = sampler.cfg.walk_length
    roots_per_batch = max(1, sampler.cfg.size // (L + 1))
    want = np.minimum(rows, cols) * n + np.maximum(rows, cols)
    ukeys, to_entry = np.unique(want, return_inverse=True)
    visits = np.zeros(n, np.float64)
    pair_visits = np.zeros(ukeys.size, np.float64)
    total = max(WALKS_PER_VERTEX * n, MIN_WALKS)
    for c, lo in enumerate(range(0, total, _WALK_CHUNK)):  # a loop over chunks of walks, vectorized inside
        rng = np.random.default_rng([sampler.cfg.seed, BUILD, _WALK_OFFSET + c])
        w = sampler.walks(rng, rng.integers(0, n, min(_WALK_CHUNK, total - lo)))  # (L+1, W)
        first = np.ones(w.shape, bool)  # a walk counts a vertex once
        for t in range(1, L + 1):
            first[t] = ~(w[:t] == w[t]).any(0)
        visits += np.bincount(w[first], minlength=n)
        pairs = []
        for t in range(1, L + 1):  # pairs (s, t), s < t, of first visits: every pair of distinct vertices once
            for s in range(t):
                keep = first[s] & first[t]
                u, v = w[s][keep], w[t][keep]
                pairs.append(np.minimum(u, v) * n + np.maximum(u, v))
        k = np.concatenate(pairs)
        pos = np.minimum(np.searchsorted(ukeys, k), max(ukeys.size - 1, 0))
        hit = ukeys[pos] == k if ukeys.size else np.zeros(k.size, bool)
        pair_visits += np.bincount(pos[hit], minlength=ukeys.size)
    pv, pair = _pair_from_single(visits / total, rows, cols, pair_visits[to_entry.ravel()] / total, roots_per_batch)
    return Inclusion(pv, rows, cols, pair)
