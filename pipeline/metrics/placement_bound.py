"""A lower bound on the rows that cross between nodes under ANY placement of
a partition's P parts on nodes of k (``pipeline build --ranks-per-node k``):
what no placement, however good, goes below (:mod:`..placement`).

A placement puts at most k parts on a node (exactly k on all but the last).
A row's part set S (its owner and the parts needing it, ``s = |S| >= 2``,
:class:`.internode.Nets`) costs ``λ(S) - 1`` rows across, λ the nodes it
spans. Three bounds, each valid for every placement; :attr:`PlacementBound.rows`
is their maximum.

Span. A node holds at most k of S's parts: ``λ >= ceil(s / k)``.

Owner coverage. A row costs 0 only if all of S sits on its owner p's node,
else at least 1 (and never less than its span). Besides p, p's node holds a
set C of at most k - 1 parts. A row with ``Q = S - {p}``, ``|Q| <= k - 1`` is
covered only if ``Q ⊆ C``, and ``[Q ⊆ C] <= |Q ∩ C| / |Q|``: so the rows of p
that are covered weigh at most ``Σ_{q in C} a_q`` with
``a_q = Σ_{rows of p, q in Q, |Q| <= k-1} w / |Q|``, at most the k - 1
largest a_q. Rows with ``s > k`` are never covered. So p's rows cost at least
``Σ w max(ceil(s/k) - 1, 1) - top_{k-1}(a)``; every row has one owner, so the
sum over the owners is a bound.

Relaxation. Let ``y[v, u] = 1`` when parts u != v share a node: every row of y
sums to at most k - 1, so y lies in the convex set
``Y = {0 <= y <= 1, y[v, v] = 0, Σ_u y[v, u] <= k - 1}``. For a row's set S
and a part v in S let ``x_v = Σ_{u in S} y[v, u]`` (the other parts of S on
v's node). Then exactly ``λ = Σ_{v in S} 1 / (1 + x_v)``, and with φ the
piecewise-linear interpolation of ``1 / (1 + t)`` at the integers (convex,
equal to it at integers) and three facts that hold for every placement:

    λ - 1 = Σ_v φ(x_v) - 1,   λ - 1 >= ceil(s/k) - 1,
    λ - 1 >= 1 - x_v / (s - 1) for every v in S

(the last: if x_v = s - 1 the row is on one node and both sides are 0; else
λ >= 2). So the rows across are at least ``F(y) = Σ_rows w max(...)`` of those
three, a convex function of y. Every placement's y is also symmetric: it lies
in ``Y = {0 <= y <= 1, y = yᵀ, y[v, v] = 0, Σ_u y[v, u] <= k - 1}``, convex.
So the rows across are >= min_Y F >= ``F(ŷ) + min_{z in Y} <g, z - ŷ>`` for
ANY ŷ in Y and subgradient g of F at ŷ (convexity). With ``h = g + gᵀ`` over
the pairs u < v, ``<g, z> = Σ h_uv z_uv``, and for any π >= 0 (P,) and z in Y

    -h_uv z_uv <= (π_u + π_v) z_uv + max(0, -h_uv - π_u - π_v)   (0 <= z <= 1)

and ``Σ_{u<v} (π_u + π_v) z_uv = Σ_u π_u Σ_v z_uv <= (k - 1) Σ π``: so
``min_Y <g, z> >= -(k - 1) Σ π - Σ_{u<v} max(0, -h_uv - π_u - π_v)`` (weak
LP duality), whatever π is; π is the LP's dual (HiGHS), and the LP's z is
the next step. ŷ runs Frank-Wolfe from a placement (block, or one given)
for a fixed number of steps; the best bound of those steps is kept
(deterministic, no seed). What the relaxation gives up: that sharing a node
is transitive (the nodes are cliques), so at many parts a node (P = 512,
k = 48) it is weak.

Every bound is a float rounded up to the integer above it less 1e-6
relative (the rows across are an integer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .internode import Nets

_TOL = 1e-6


@dataclass(frozen=True)
class PlacementBound:
    """No placement of the parts on nodes of ``k`` sends fewer rows across than ``rows``.

    Attributes
    ----------
    span, owner, relaxed : int
        The three bounds of the module docstring (the rows across of one node-aware expand).
    """

    span: int
    owner: int
    relaxed: int

    @property
    def rows(self) -> int:
        return max(self.span, self.owner, self.relaxed)


def _up(x: float) -> int:
    return max(0, int(np.ceil(x - _TOL * max(1.0, abs(x)))))


def _incidence(nets: Nets, parts: int) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """(m,) set sizes, (pins,) the set of every pin, (m, parts) 0/1 incidence."""
    s = np.diff(nets.ptr)
    net = np.repeat(np.arange(nets.count), s)
    inc = sp.csr_matrix((np.ones(net.size), (net, nets.pins)), shape=(nets.count, parts))
    return s, net, inc


def _top_sum(m: np.ndarray, r: int) -> float:
    """Σ over the rows of (P, P) ``m`` of each row's r largest entries (0 when r = 0)."""
    if r <= 0:
        return 0.0
    r = min(r, m.shape[1])
    return float(np.partition(m, m.shape[1] - r, axis=1)[:, m.shape[1] - r:].sum())


def owner_bound(nets: Nets, parts: int, k: int) -> float:
    """The owner-coverage bound (module docstring) before rounding."""
    s, _, inc = _incidence(nets, parts)
    w = nets.weights.astype(np.float64)
    base = float((w * np.maximum(np.ceil(s / k) - 1, 1)).sum())
    small = np.flatnonzero(s <= k)
    own = sp.csr_matrix((w[small] / (s[small] - 1), (nets.owner[small], np.arange(small.size))),
                        shape=(parts, small.size))
    a = (own @ inc[small]).toarray()  # (P, P): a[p, q], the owner itself on the diagonal
    np.fill_diagonal(a, 0.0)
    return base - _top_sum(a, k - 1)


def _objective(nets: Nets, k: int, y: np.ndarray, inc: tuple[np.ndarray, np.ndarray, sp.csr_matrix]
               ) -> tuple[float, np.ndarray]:
    """F(y) (module docstring) and a subgradient (P, P) at y (``inc``: :func:`_incidence`)."""
    s, net, a = inc
    parts = y.shape[0]
    x = np.empty(net.size)
    step = max(1, 2_000_000 // max(parts, 1))  # nets a chunk: (chunk, P) floats at a time
    for lo in range(0, nets.count, step):
        hi = min(lo + step, nets.count)
        d = np.asarray(a[lo:hi] @ y.T)  # y[v, v] = 0: x counts the others
        p0, p1 = nets.ptr[lo], nets.ptr[hi]
        x[p0:p1] = d[net[p0:p1] - lo, nets.pins[p0:p1]]
    f = np.floor(x)
    slope = 1 / (2 + f) - 1 / (1 + f)
    phi = np.bincount(net, 1 / (1 + f) + (x - f) * slope, nets.count) - 1
    rel = x / (s[net] - 1)
    least = np.lexsort((rel, net))[nets.ptr[:-1]]  # the pin of each set with the smallest x / (s - 1)
    terms = np.stack([np.ceil(s / k) - 1, phi, 1 - rel[least]])
    which = terms.argmax(0)
    w = nets.weights.astype(np.float64)
    gx = np.where(which[net] == 1, w[net] * slope, 0.0)
    cov = which == 2
    np.add.at(gx, least[cov], -w[cov] / (s[cov] - 1))
    g = (sp.csr_matrix((gx, (nets.pins, net)), shape=(parts, nets.count)) @ a).toarray()
    np.fill_diagonal(g, 0.0)
    return float((w * terms.max(0)).sum()), g


def _vertex(g: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """A point z of Y (module docstring) near the minimum of <g, z> (the LP's), and a lower bound on
    that minimum (weak duality, valid whatever the LP solver returns)."""
    from scipy.optimize import linprog

    parts = g.shape[0]
    u, v = np.triu_indices(parts, 1)
    h = g[u, v] + g[v, u]
    e = np.arange(u.size)
    a = sp.csr_matrix((np.ones(2 * u.size), (np.r_[u, v], np.r_[e, e])), shape=(parts, u.size))
    res = linprog(h, A_ub=a, b_ub=np.full(parts, k - 1.0), bounds=(0, 1), method="highs")
    if res.status != 0:
        raise RuntimeError(f"placement bound: the LP stopped ({res.message})")
    pi = np.maximum(0.0, -np.asarray(res.ineqlin.marginals, np.float64))
    low = -(k - 1) * float(pi.sum()) - float(np.maximum(0.0, -h - pi[u] - pi[v]).sum())
    z = np.zeros_like(g)
    z[u, v] = np.clip(res.x, 0.0, 1.0)
    return z + z.T, low


def relaxed_bound(nets: Nets, parts: int, k: int, node_of_part: np.ndarray | None = None, steps: int = 20) -> float:
    """The relaxation bound (module docstring) before rounding: the best of ``steps`` Frank-Wolfe
    linearizations from the placement ``node_of_part`` (P,) (None: block placement)."""
    node = np.arange(parts) // k if node_of_part is None else np.asarray(node_of_part, np.int64)
    y = (node[:, None] == node[None, :]).astype(np.float64)
    np.fill_diagonal(y, 0.0)
    inc = _incidence(nets, parts)
    best = 0.0
    for t in range(steps):
        f, g = _objective(nets, k, y, inc)
        z, low = _vertex(g, k)
        best = max(best, f + low - float((g * y).sum()))
        y += 2.0 / (t + 2.0) * (z - y)
    return best


def placement_bound(nets: Nets, parts: int, k: int, node_of_part: np.ndarray | None = None,
                    steps: int = 20) -> PlacementBound:
    """No placement of ``parts`` parts on nodes of ``k`` (at most k a node) sends fewer node-aware rows
    across than ``.rows`` (module docstring); ``node_of_part`` (P,): where the relaxation starts."""
    if parts < 1 or k < 1:
        raise ValueError(f"placement bound: parts {parts} and k {k} must be at least 1")
    if not nets.count or k >= parts:
        return PlacementBound(0, 0, 0)
    s = np.diff(nets.ptr)
    span = _up(float((nets.weights * (np.ceil(s / k) - 1)).sum()))
    return PlacementBound(span, _up(owner_bound(nets, parts, k)),
                          _up(relaxed_bound(nets, parts, k, node_of_part, steps)))
