"""Exact pin counts of the column-net hypergraph of Â under a row partition,
kept up to date move by move (numba kernels), and the per-part send and
receive volumes and loads that follow from them.

Net j (column j of Â) has as pins the rows with a nonzero in column j; its
owner is part[j] (Â has a nonzero diagonal, so the owner always holds a
pin). With λ_j the number of parts holding a pin, part[j] sends row j of H to
the λ_j - 1 other parts. For every net the counts keep the exact number of
pins in each part that holds one (a sorted list of (part, count) slots per
net, at most min(P, pins) long).

The kernels take their arrays in tuples, so that a kernel's signature
says what it reads:

- ``g = (indptr, indices, cptr, cidx, w)``: Â's rows (a vertex's nets), Â's
  columns (a net's pins) and the vertex weights;
- ``pc = (spart, scnt, sptr, lam)``: the pin-count slots;
- ``vol = (part, send, recv, load)``: the partition and its per-part volumes
  and loads;
- ``scr = (ds, dr, mark, touched)``: (P,) scratch of a move's evaluation
  (changes of send and receive volume, and the parts they touch).

Compiled with numba (serial, so results do not depend on threads).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from ..errors import UserError

jit = numba.njit(cache=True, nogil=True)


@jit
def _find(pc, j, k):
    """Slot index of part k among net j's parts (sorted), or -1."""
    spart, _, sptr, lam = pc
    lo = sptr[j]
    hi = lo + lam[j]
    while lo < hi:
        mid = (lo + hi) >> 1
        pk = spart[mid]
        if pk < k:
            lo = mid + 1
        elif pk > k:
            hi = mid
        else:
            return mid
    return -1


@jit
def count(pc, j, k):
    """Pins of net j in part k."""
    i = _find(pc, j, k)
    return 0 if i < 0 else pc[1][i]


@jit
def _add_pin(pc, j, k):
    """One more pin of net j in part k; True when k is new to the net."""
    spart, scnt, sptr, lam = pc
    lo = sptr[j]
    hi = lo + lam[j]
    pos = lo
    while pos < hi and spart[pos] < k:
        pos += 1
    if pos < hi and spart[pos] == k:
        scnt[pos] += 1
        return False
    for i in range(hi, pos, -1):  # shift right to keep the slots sorted
        spart[i] = spart[i - 1]
        scnt[i] = scnt[i - 1]
    spart[pos] = k
    scnt[pos] = 1
    lam[j] += 1
    return True


@jit
def _remove_pin(pc, j, k):
    """One pin of net j fewer in part k; True when k leaves the net."""
    spart, scnt, sptr, lam = pc
    i = _find(pc, j, k)
    scnt[i] -= 1
    if scnt[i] > 0:
        return False
    hi = sptr[j] + lam[j]
    for t in range(i, hi - 1):
        spart[t] = spart[t + 1]
        scnt[t] = scnt[t + 1]
    lam[j] -= 1
    return True


@jit
def best_target(scr, nt, counts, a, wv, bound):
    """(gain, part) of the best move of a vertex of weight ``wv`` out of part a to one of the ``nt`` parts in
    ``scr = (acc, touched)`` (-1: none within the bound): with ``counts = (only, deg)`` the gain to b is
    ``only - (deg - acc[b])`` (what leaves a, less the nets b joins: those with no pin in b); ``bound = (load,
    lmax)``; a tie goes to the move that lightens a, then to the lighter part. Clears ``acc`` of the touched
    parts."""
    acc, touched = scr
    only, deg = counts
    load, lmax = bound
    best_b, best_g = -1, 0
    for t in range(nt):
        b = touched[t]
        gain = only - (deg - acc[b])
        acc[b] = 0
        if load[b] + wv > lmax:
            continue
        lighter = load[b] + wv < load[a] and (best_b < 0 or load[b] < load[best_b])
        if gain > best_g or (gain == best_g and lighter):
            best_b, best_g = b, gain
    return best_g, best_b


@jit
def touch(mark, touched, nt, k):
    """Append part k to ``touched`` unless it is marked already; returns the new length."""
    if mark[k] == 0:
        mark[k] = 1
        touched[nt] = k
        nt += 1
    return nt


@jit
def move_deltas(v, b, g, pc, part, scr):
    """Add the change of every part's send (``ds``) and receive (``dr``)
    volume caused by moving v to part b; the parts changed are listed in
    ``touched`` (and marked). Returns their count and the change of the total
    volume."""
    indptr, indices = g[0], g[1]
    lam = pc[3]
    ds, dr, mark, touched = scr
    a = part[v]
    nt = 0
    dtot = 0
    for p in range(indptr[v], indptr[v + 1]):
        j = indices[p]
        if j == v:
            continue
        o = part[j]
        if count(pc, j, a) == 1:  # a leaves net j (a != o: j itself is in o)
            nt = touch(mark, touched, touch(mark, touched, nt, a), o)
            dr[a] -= 1
            ds[o] -= 1
            dtot -= 1
        if count(pc, j, b) == 0:  # b joins net j
            nt = touch(mark, touched, touch(mark, touched, nt, b), o)
            dr[b] += 1
            ds[o] += 1
            dtot += 1
    # net v changes owner from a to b
    lv = lam[v]
    ca = count(pc, v, a)
    cb = count(pc, v, b)
    lnew = lv - (1 if ca == 1 else 0) + (1 if cb == 0 else 0)
    nt = touch(mark, touched, touch(mark, touched, nt, a), b)
    ds[a] -= lv - 1
    ds[b] += lnew - 1
    dtot += lnew - lv
    if cb > 0:
        dr[b] -= 1  # b held a pin of v: it received row v, now owns it
    if ca >= 2:
        dr[a] += 1  # a keeps a pin of v: it now receives row v
    return nt, dtot


@jit
def apply_move(v, b, g, pc, vol):
    """Move v to part b, updating pin counts, volumes and loads exactly.
    Returns the change of the total volume."""
    indptr, indices, w = g[0], g[1], g[4]
    lam = pc[3]
    part, send, recv, load = vol
    a = part[v]
    dtot = 0
    for p in range(indptr[v], indptr[v + 1]):
        j = indices[p]
        if j == v:
            continue
        o = part[j]
        if _remove_pin(pc, j, a):
            recv[a] -= 1
            send[o] -= 1
            dtot -= 1
        if _add_pin(pc, j, b):
            recv[b] += 1
            send[o] += 1
            dtot += 1
    lv = lam[v]
    cb = count(pc, v, b)
    send[a] -= lv - 1
    _remove_pin(pc, v, a)
    _add_pin(pc, v, b)
    send[b] += lam[v] - 1
    dtot += lam[v] - lv
    if cb > 0:
        recv[b] -= 1
    if count(pc, v, a) > 0:
        recv[a] += 1
    part[v] = b
    load[a] -= w[v]
    load[b] += w[v]
    return dtot


def slots(nets: np.ndarray, pin_parts: np.ndarray, n_nets: int, parts: int) -> tuple[tuple, np.ndarray, np.ndarray]:
    """The pin-count slots of pins given by their net and their part.

    Parameters
    ----------
    nets, pin_parts : (pins,) int64, each pin's net and the part of its vertex
    n_nets, parts : int

    Returns
    -------
    pc : (spart, scnt, sptr, lam): net j's parts, sorted, in ``spart[sptr[j] : sptr[j] + lam[j]]`` and their
        pins in ``scnt`` (capacity ``min(P, pins of j)``); sptr (n_nets+1,), lam (n_nets,) int64
    net, part : (used slots,) the net and part of every used slot, sorted by net then part
    """
    pairs, cnt = np.unique(nets * parts + pin_parts, return_counts=True)
    net, prt = np.divmod(pairs, parts)
    sptr = np.zeros(n_nets + 1, np.int64)
    np.cumsum(np.minimum(np.bincount(nets, minlength=n_nets), parts), out=sptr[1:])
    lam = np.bincount(net, minlength=n_nets).astype(np.int64)
    first = np.zeros(n_nets + 1, np.int64)
    np.cumsum(lam, out=first[1:])
    slot = sptr[net] + (np.arange(pairs.size) - first[net])
    spart, scnt = np.zeros(sptr[-1], np.int64), np.zeros(sptr[-1], np.int64)
    spart[slot], scnt[slot] = prt, cnt
    return (spart, scnt, sptr, lam), net, prt


class PinCounts:
    """Exact pins of each net (column of Â) per part, and the per-part send
    and receive volumes and loads that follow from them.

    Attributes
    ----------
    sptr : (n+1,) int64
        Net j's slots are ``sptr[j] : sptr[j] + lam[j]`` (capacity
        ``min(P, pins of j)``).
    spart, scnt : (sptr[-1],) int64
        Part and pin count of each used slot, sorted by part within a net.
    lam : (n,) int64
        Connectivity λ_j of each net.
    send, recv, load : (P,) int64
    total : int
    """

    def __init__(self, a: sp.csr_matrix, part: np.ndarray, parts: int, weights: np.ndarray | None = None):
        a = check_matrix(a)
        n = a.shape[0]
        self.parts = parts
        self.indptr = a.indptr.astype(np.int64)
        self.indices = a.indices.astype(np.int64)
        self.w = np.diff(self.indptr) if weights is None else np.asarray(weights, np.int64)
        csc = sp.csc_matrix(a)
        self.cptr = csc.indptr.astype(np.int64)  # pins of net j: cidx[cptr[j]:cptr[j+1]]
        self.cidx = csc.indices.astype(np.int64)
        self.part = np.array(part, dtype=np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.indptr))
        (self.spart, self.scnt, self.sptr, self.lam), net, prt = slots(self.indices, self.part[rows], n, parts)
        self.send = np.bincount(self.part, weights=self.lam - 1, minlength=parts).astype(np.int64)
        self.recv = np.bincount(prt[prt != self.part[net]], minlength=parts).astype(np.int64)
        self.load = np.bincount(self.part, weights=self.w, minlength=parts).astype(np.int64)
        self.total = int(self.send.sum())

    @property
    def g(self) -> tuple:
        return self.indptr, self.indices, self.cptr, self.cidx, self.w

    @property
    def pc(self) -> tuple:
        return self.spart, self.scnt, self.sptr, self.lam

    @property
    def vol(self) -> tuple:
        return self.part, self.send, self.recv, self.load

    def counts(self, j: int) -> dict[int, int]:
        """{part: pins of net j in it}."""
        s = slice(self.sptr[j], self.sptr[j] + self.lam[j])
        return dict(zip(self.spart[s].tolist(), self.scnt[s].tolist()))

    def move(self, v: int, b: int) -> int:
        """Move vertex v to part b; returns the change of the total volume."""
        if not 0 <= b < self.parts:
            raise UserError(f"part {b} out of range 0..{self.parts - 1}")
        if self.part[v] == b:
            return 0
        d = int(apply_move(v, b, self.g, self.pc, self.vol))
        self.total += d
        return d

    def deltas(self, v: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """(P,) changes of send and receive volume if v moved to b (nothing is moved)."""
        p = self.parts
        ds, dr = np.zeros(p, np.int64), np.zeros(p, np.int64)
        if self.part[v] == b:
            return ds, dr
        move_deltas(v, b, self.g, self.pc, self.part, (ds, dr, np.zeros(p, np.int8), np.empty(p, np.int64)))
        return ds, dr


def check_matrix(a) -> sp.csr_matrix:
    """Â as a csr_matrix; :class:`UserError` unless square with a nonzero diagonal."""
    if not sp.issparse(a) or a.shape[0] != a.shape[1]:
        raise UserError("volume balancing needs a square sparse matrix Â")
    a = sp.csr_matrix(a)
    if np.any(a.diagonal() == 0):
        raise UserError("volume balancing needs Â with a nonzero diagonal (every vertex is a pin of its own net)")
    return a
