"""The surrogate hypergraph of ``shp``: a deterministic hypergraph whose
connectivity-1 approximates the expected volume of a random mini-batch,
built from the sampler's inclusion probabilities (:mod:`.inclusion`).

Part k receives row j when j and one of the c_jk rows of column j in part k
are drawn: ``P(j) (1 - prod_i (1 - q_ij))`` with q_ij = P(i, j) / P(j), a
concave function of the rows' "hazard" x = sum -ln(1 - q_ij). Per column j
with d_j other rows, one net {j} ∪ rows of j weighted alpha_j and d_j
two-pin nets {j, i} weighted beta_ij give the cost alpha_j [c > 0] + sum
beta_ij: the chord of the cost through one typical row and through
ceil(d_j / 4) of them (:func:`chord_anchors`), or its tangent at a
partition's own counts (:func:`tangent_anchors`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from shgcn.core.sample import Sampler, SamplerConfig

from ...metrics.hypergraph import BatchNets, Hypergraph, merge_identical
from .inclusion import Inclusion, inclusion

SURROGATE_SCALE = 1000  # integer net weights: expected rows x 1000 (relative to the mean P(j))
CHORD_DIVISOR = 4  # the surrogate is exact at c = 1 and c = ceil(d / CHORD_DIVISOR)


def _hazards(inc: Inclusion) -> tuple[np.ndarray, np.ndarray]:
    """Per off-diagonal nonzero: q_ij = P(i | j) and its hazard -ln(1 - q_ij)."""
    if inc.uniform:
        q = np.full(inc.rows.size, inc.q)
    else:
        q = np.clip(inc.pair / np.maximum(inc.vertex[inc.cols], 1e-300), 0.0, 1.0 - 1e-12)
    return q, -np.log1p(-q)


def chord_anchors(inc: Inclusion, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column j: (alpha_j (n,), gamma_j (n,), d_j (n,)) of the chord of
    the cost given j drawn through one typical row of j (c = 1) and through
    c* = ceil(d_j / 4) of them; a row i then costs gamma_j h_ij / mean h."""
    d = np.bincount(inc.cols, minlength=n)
    cstar = np.minimum(d, np.maximum(2, -(-d // CHORD_DIVISOR)))
    if inc.q is not None and inc.curve is not None:  # exact (node): every row has the same q
        y1 = np.full(n, inc.q)
        ystar = inc.curve[np.minimum(cstar, inc.curve.size - 1)]
    else:
        _, h = _hazards(inc)
        hbar = np.bincount(inc.cols, weights=h, minlength=n) / np.maximum(d, 1)
        y1, ystar = -np.expm1(-hbar), -np.expm1(-cstar * hbar)
    gamma = np.where(d > 1, (ystar - y1) / np.maximum(cstar - 1, 1), y1)  # concave: alpha >= 0
    alpha = np.where(d > 1, y1 - gamma, 0.0)
    return alpha, gamma, d


def tangent_anchors(inc: Inclusion, n: int, part: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`chord_anchors`, but the tangent of the cost at the mean
    hazard of the column's rows in the parts that receive it under ``part``
    (the chord where no part does). For the node sampler (one q) the tangent
    lies above the concave cost and touches it at that count, so a partition
    that lowers the surrogate lowers the exact cost of those columns."""
    alpha, gamma, d = chord_anchors(inc, n)
    _, h = _hazards(inc)
    hbar = np.bincount(inc.cols, weights=h, minlength=n) / np.maximum(d, 1)
    other = part[inc.rows] != part[inc.cols]
    parts = int(part.max(initial=0)) + 1
    keys, inv = np.unique(inc.cols[other] * parts + part[inc.rows[other]], return_inverse=True)
    x_jk = np.bincount(inv.ravel(), weights=h[other], minlength=keys.size)  # hazard of part k's rows of column j
    col = keys // parts
    cut = np.bincount(col, minlength=n)
    xbar = np.bincount(col, weights=x_jk, minlength=n) / np.maximum(cut, 1)
    use = (cut > 0) & (d > 1)
    slope = np.exp(-xbar)  # d/dx (1 - e^-x)
    t_alpha = -np.expm1(-xbar) - xbar * slope  # >= 0: the tangent of a concave function through 0
    # per typical row (hazard hbar): gamma = slope * hbar
    return np.where(use, t_alpha, alpha), np.where(use, slope * hbar, gamma), d


def inclusion_surrogate(inc: Inclusion, weights: np.ndarray, anchors: tuple[np.ndarray, np.ndarray, np.ndarray]
                        ) -> Hypergraph:
    """Deterministic hypergraph whose connectivity-1 approximates the
    expected mini-batch volume: per column j, a net {j} ∪ rows of j weighted
    P(j) alpha_j, and per row i a two-pin net {j, i} weighted P(j) gamma_j
    h_ij / mean h (``anchors`` = (alpha, gamma, d) per column; a column with
    one row costs exactly P(i, j)); {j, i} and {i, j} merge. Weights are
    integers: ``SURROGATE_SCALE`` x the cost relative to the mean P(j)."""
    n = weights.size
    alpha, gamma, d = anchors
    j, i = inc.cols, inc.rows
    q, h = _hazards(inc)
    if inc.uniform:
        scale = np.full(n, float(SURROGATE_SCALE))
        rel = np.ones(j.size)
    else:
        scale = SURROGATE_SCALE * inc.vertex / max(float(inc.vertex.mean()), 1e-300)
        hbar = np.bincount(j, weights=h, minlength=n) / np.maximum(d, 1)
        rel = np.where(hbar[j] > 0, h / np.maximum(hbar[j], 1e-300), 1.0)
    beta = np.where(d[j] > 1, gamma[j] * rel, q) * scale[j]
    full = np.flatnonzero((d >= 2) & (alpha * scale >= 0.5))
    in_full = np.zeros(n, bool)
    in_full[full] = True
    # the full net of column j: j and its other rows, in row order (as the column of Â)
    sel = in_full[j]
    fc, fr = np.concatenate([full, j[sel]]), np.concatenate([full, i[sel]])
    order = np.lexsort((fr, fc))
    full_ptr = np.zeros(full.size + 1, np.int64)
    np.cumsum(d[full] + 1, out=full_ptr[1:])
    two = np.stack([np.minimum(j, i), np.maximum(j, i)], 1).ravel()  # {j, i} and {i, j} merge below
    nets = BatchNets(columns=np.concatenate([full, j]),
                     ptr=np.concatenate([full_ptr, full_ptr[-1] + np.arange(2, 2 * j.size + 1, 2)]),
                     pins=np.concatenate([fr[order], two]), total=0)
    w = np.concatenate([alpha[full] * scale[full], beta])
    ptr, pins, nw, first = merge_identical(nets, n, weights=w)
    keep = nw >= 1
    kept_sizes = np.diff(ptr)[keep]
    new_ptr = np.zeros(kept_sizes.size + 1, np.int64)
    np.cumsum(kept_sizes, out=new_ptr[1:])
    return Hypergraph(n_vertices=n, net_ptr=new_ptr, pins=pins[np.repeat(keep, np.diff(ptr))],
                      vertex_weights=weights.astype(np.int64), net_weights=nw[keep], net_ids=nets.columns[first[keep]])


def expected_surrogate(a: sp.csr_matrix, batch: int, weights: np.ndarray) -> Hypergraph:
    """The node sampler's surrogate (B = ``batch`` of n vertices): the chord
    surrogate of :func:`inclusion_surrogate` with its exact probabilities."""
    n = a.shape[0]
    sampler = Sampler(sp.csr_matrix((n, n)), SamplerConfig(kind="node", size=batch))
    inc = inclusion(a, sampler)
    return inclusion_surrogate(inc, weights, chord_anchors(inc, n))
