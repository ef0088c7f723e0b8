"""Volume balancing: lower the busiest rank's send and receive volume of any
row partition of Â by moving boundary vertices.

The slowest rank sets the epoch time, and a partitioner that minimizes the
total volume (connectivity-1) leaves some parts sending or receiving far more
than the average. This refinement takes any partition (``hp``, ``gp``, ...)
and moves single vertices so that the maximum per-part send volume and the
maximum per-part receive volume go down, while

- the total volume stays within ``max_total_increase`` of its start,
- the load imbalance (load = nonzeros of Â in a part's rows; max/mean - 1)
  stays within ``eps`` (or, if the start already exceeds it, is not made
  worse), and
- neither maximum ever goes up (every accepted move keeps every part's send
  volume at most the current maximum send, and the same for receive).

Exact bookkeeping. Net j (column j of Â) has as pins the rows with a nonzero
in column j; its owner is part[j] (Â has a nonzero diagonal, so the owner
always holds a pin). With λ_j the number of parts holding a pin, part[j]
sends row j of H to the λ_j - 1 other parts. For every net the refinement
keeps the exact number of pins in each part that holds one (a sorted list of
(part, count) slots per net, at most min(P, pins) long), and updates it, the
per-part send and receive volumes, the total and the loads on every move.
The gain of a candidate move is computed exactly from those counts.

Search. Passes over the boundary vertices in a seeded random order (so the
result is deterministic for a seed). For a vertex, the candidate targets are
the parts that already hold pins of its nets (ranked by how many of its nets
they touch) and the currently lightest senders and receivers (for the owners
of high-connectivity nets, whose ownership is worth moving anywhere). Each
target's move is scored by

    score = -ΔΦ - μ Δtotal,   Φ = Σ_k max(0, send_k - τ)^γ + max(0, recv_k - τ)^γ,

τ = the average volume per part (total / P) at the start of the pass, γ =
``power`` (3). Φ only sees parts above average, and steeply, so the top parts
dominate: a row taken off the busiest sender is worth more than volume
shuffled between average parts. μ prices a row added to the total at
``total_weight`` times the mean marginal Φ of the parts above τ, divided by
the fraction of the total budget still left (spent budget makes the next row
dearer, so the budget goes to the best moves rather than the first ones).
The best target is applied when its score is positive and no bound is
broken.

Pair moves. Partitioners fill parts up to the load bound, so the move that
would help most is often forbidden by its target's load. For a vertex of a
busy part (send or receive volume in the upper half between the mean and the
maximum), the best such blocked move is applied tentatively, and a few
vertices of the target that share a small net with it are tried as a second
move (back to the first vertex's part, or to the lightest part); the pair is
kept when its summed score is positive and every bound holds, else the first
move is undone exactly. On soc-slashdot0902 (p = 16) this takes the maximum
send from 0.81x to 0.80x METIS's and the maximum receive from 0.93x to 0.88x.

Measured limits (benchmarks/RESULTS.md): on power-law graphs the maximum
send volume drops 15-25%, mostly bounded by the total-volume budget
(``max_total_increase``); on meshes (delaunay, road networks) almost no
single move lowers a part's send volume (moving a boundary vertex out of a
part makes its inner neighbours boundary vertices), so the result there is
close to the start.

The kernels are compiled with numba (serial, so results do not depend on
threads).
"""

from __future__ import annotations

import logging
import time

import numba
import numpy as np
import scipy.sparse as sp

from .errors import UserError

log = logging.getLogger(__name__)

_jit = numba.njit(cache=True, nogil=True)


# ----------------------------------------------------------------- pin counts

@_jit
def _find(spart, sptr, lam, j, k):
    """Slot index of part k among net j's parts (sorted), or -1."""
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


@_jit
def _count(spart, scnt, sptr, lam, j, k):
    i = _find(spart, sptr, lam, j, k)
    return 0 if i < 0 else scnt[i]


@_jit
def _add_pin(spart, scnt, sptr, lam, j, k):
    """One more pin of net j in part k; True when k is new to the net."""
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


@_jit
def _remove_pin(spart, scnt, sptr, lam, j, k):
    """One pin of net j fewer in part k; True when k leaves the net."""
    i = _find(spart, sptr, lam, j, k)
    scnt[i] -= 1
    if scnt[i] > 0:
        return False
    hi = sptr[j] + lam[j]
    for t in range(i, hi - 1):
        spart[t] = spart[t + 1]
        scnt[t] = scnt[t + 1]
    lam[j] -= 1
    return True


# ---------------------------------------------------------------- one move

@_jit
def _move_deltas(v, b, indptr, indices, part, spart, scnt, sptr, lam, ds, dr, mark, touched, nt):
    """Add the change of every part's send (``ds``) and receive (``dr``)
    volume caused by moving v to part b; new parts are appended to
    ``touched``. Returns the new length of ``touched`` and the change of the
    total volume."""
    a = part[v]
    dtot = 0
    for p in range(indptr[v], indptr[v + 1]):
        j = indices[p]
        if j == v:
            continue
        o = part[j]
        if _count(spart, scnt, sptr, lam, j, a) == 1:  # a leaves net j (a != o: j itself is in o)
            for k in (a, o):
                if mark[k] == 0:
                    mark[k] = 1
                    touched[nt] = k
                    nt += 1
            dr[a] -= 1
            ds[o] -= 1
            dtot -= 1
        if _count(spart, scnt, sptr, lam, j, b) == 0:  # b joins net j
            for k in (b, o):
                if mark[k] == 0:
                    mark[k] = 1
                    touched[nt] = k
                    nt += 1
            dr[b] += 1
            ds[o] += 1
            dtot += 1
    # net v changes owner from a to b
    lv = lam[v]
    ca = _count(spart, scnt, sptr, lam, v, a)
    cb = _count(spart, scnt, sptr, lam, v, b)
    lnew = lv - (1 if ca == 1 else 0) + (1 if cb == 0 else 0)
    for k in (a, b):
        if mark[k] == 0:
            mark[k] = 1
            touched[nt] = k
            nt += 1
    ds[a] -= lv - 1
    ds[b] += lnew - 1
    dtot += lnew - lv
    if cb > 0:
        dr[b] -= 1  # b held a pin of v: it received row v, now owns it
    if ca >= 2:
        dr[a] += 1  # a keeps a pin of v: it now receives row v
    return nt, dtot


@_jit
def _apply_move(v, b, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv, load):
    """Move v to part b, updating pin counts, volumes and loads exactly.
    Returns the change of the total volume."""
    a = part[v]
    dtot = 0
    for p in range(indptr[v], indptr[v + 1]):
        j = indices[p]
        if j == v:
            continue
        o = part[j]
        if _remove_pin(spart, scnt, sptr, lam, j, a):
            recv[a] -= 1
            send[o] -= 1
            dtot -= 1
        if _add_pin(spart, scnt, sptr, lam, j, b):
            recv[b] += 1
            send[o] += 1
            dtot += 1
    lv = lam[v]
    cb = _count(spart, scnt, sptr, lam, v, b)
    send[a] -= lv - 1
    _remove_pin(spart, scnt, sptr, lam, v, a)
    _add_pin(spart, scnt, sptr, lam, v, b)
    send[b] += lam[v] - 1
    dtot += lam[v] - lv
    if cb > 0:
        recv[b] -= 1
    if _count(spart, scnt, sptr, lam, v, a) > 0:
        recv[a] += 1
    part[v] = b
    load[a] -= w[v]
    load[b] += w[v]
    return dtot


@_jit
def _pen(x, tau, power):
    e = x - tau
    return e**power if e > 0 else 0.0


# ------------------------------------------------------------------ a pass

@_jit
def _targets(v, a, indptr, indices, spart, sptr, lam, cap, max_targets, extra, score_of, cand):
    """Candidate target parts of v (in part a) into ``cand``: the parts holding
    pins of v's nets (nets with at most ``cap`` parts), most shared nets
    first, at most ``max_targets``, then the parts in ``extra``. Returns
    (count, whether v is on the boundary)."""
    parts = score_of.size
    nc = 0
    cut = lam[v] > 1
    for p in range(indptr[v], indptr[v + 1]):
        j = indices[p]
        if lam[j] < 2:
            continue
        cut = True
        if lam[j] > cap:
            continue
        for s in range(sptr[j], sptr[j] + lam[j]):
            k = spart[s]
            if k == a:
                continue
            if score_of[k] == 0:
                cand[nc] = k
                nc += 1
            score_of[k] += 1
    if nc > max_targets:
        top = 0
        for i in range(nc):
            top = max(top, score_of[cand[i]])
        keys = np.empty(nc, np.int64)
        for i in range(nc):
            keys[i] = (top - score_of[cand[i]]) * parts + cand[i]  # most shared nets first, ties by part id
            score_of[cand[i]] = 0
        keys.sort()
        for i in range(max_targets):
            cand[i] = keys[i] % parts
        nc = max_targets
    else:
        for i in range(nc):
            score_of[cand[i]] = 0
    for t in range(extra.size):
        k = extra[t]
        if k == a:
            continue
        dup = False
        for i in range(nc):
            if cand[i] == k:
                dup = True
                break
        if not dup:
            cand[nc] = k
            nc += 1
    return nc, cut


@_jit
def _best_target(v, cand, nc, floor, blocked, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv, load,
                 state, lmax, tbound, tau, mu_eff, power, ds, dr, mark, touched):
    """Best move of v among ``cand[:nc]`` by score (above ``floor``) that keeps
    the maxima, the total bound and the load bound; with ``blocked``, instead
    the best one (score above 0) among those that only the load bound of
    their target forbids.
    Returns (part, score); -1 for none."""
    best_b, best = -1, floor
    wv = w[v]
    for i in range(nc):
        b = cand[i]
        if (load[b] + wv > lmax) != blocked:
            continue
        nt, dtot = _move_deltas(v, b, indptr, indices, part, spart, scnt, sptr, lam, ds, dr, mark, touched, 0)
        ok = state[0] + dtot <= tbound
        dphi = 0.0
        for t in range(nt):
            k = touched[t]
            if ok:
                ns = send[k] + ds[k]
                nr = recv[k] + dr[k]
                if (ds[k] > 0 and ns > state[1]) or (dr[k] > 0 and nr > state[2]):
                    ok = False
                dphi += _pen(ns, tau, power) - _pen(send[k], tau, power) + _pen(nr, tau, power) - _pen(recv[k], tau, power)
            ds[k] = 0
            dr[k] = 0
            mark[k] = 0
        if not ok:
            continue
        score = -dphi - mu_eff * dtot
        if score > best:
            best, best_b = score, b
    return best_b, best


@_jit
def _pass(order, indptr, indices, cptr, cidx, part, w, spart, scnt, sptr, lam, send, recv, load, state,
          lmax, tbound, tau, mu, cap, max_targets, extra, total0, power, swap_tries):
    """One pass over ``order``; ``state`` = [total, smax, rmax] (int64, updated).

    A vertex of a busy part (send or receive volume in the upper half between
    the mean and the maximum) whose best move is forbidden only by its target's load bound may
    still move if a vertex of that target sharing one of its nets (at most
    ``swap_tries`` are tried) can then leave it, the pair scoring above 0;
    otherwise the first move is undone (exactly, by the reverse move). The
    second vertex goes to v's old part or to the lightest part.
    Returns the number of moves applied."""
    parts = send.size
    ds = np.zeros(parts, np.int64)
    dr = np.zeros(parts, np.int64)
    mark = np.zeros(parts, np.int8)
    touched = np.empty(parts, np.int64)
    score_of = np.zeros(parts, np.int64)
    cand = np.empty(parts, np.int64)
    cand2 = np.empty(parts, np.int64)
    moves = 0
    for v in order:
        a = part[v]
        nc, cut = _targets(v, a, indptr, indices, spart, sptr, lam, cap, max_targets, extra, score_of, cand)
        if not cut:  # interior vertex: every move only adds volume
            continue
        # the price of total volume rises as the budget is spent, so that it goes to the best moves
        left = (tbound - state[0]) / max(tbound - total0, 1)
        mu_eff = mu / max(left, 0.05)
        b, _ = _best_target(v, cand, nc, 0.0, False, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv,
                            load, state, lmax, tbound, tau, mu_eff, power, ds, dr, mark, touched)
        if b >= 0:
            state[0] += _apply_move(v, b, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv, load)
            moves += 1
            # the maxima never rise; they fall when the last part at the maximum drops
            state[1] = send.max()
            state[2] = recv.max()
            continue
        # pair moves only from the parts whose volume is in the upper half between the mean and the maximum
        hot = 2 * send[a] >= tau + state[1] or 2 * recv[a] >= tau + state[2]
        if swap_tries == 0 or not hot:
            continue
        bb, bsc = _best_target(v, cand, nc, 0.0, True, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv,
                               load, state, lmax, tbound, tau, mu_eff, power, ds, dr, mark, touched)
        if bb < 0:
            continue
        # make room in bb: move v there, then the best vertex of bb next to v out of it
        state[0] += _apply_move(v, bb, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv, load)
        state[1] = send.max()
        state[2] = recv.max()
        best_u, best_c, best2 = -1, -1, -np.inf
        tried = 0
        lightest_load = np.argmin(load)
        scanned = 0
        for p in range(indptr[v], indptr[v + 1]):
            j = indices[p]
            if cptr[j + 1] - cptr[j] > 4 * cap:  # a hub's pins would make this a scan of the graph
                continue
            for q in range(cptr[j], cptr[j + 1]):
                u = cidx[q]
                scanned += 1
                if u == v or part[u] != bb or load[bb] - w[u] > lmax or tried >= swap_tries:
                    continue
                tried += 1
                # u goes where v came from (a swap) or to the lightest part: two exact evaluations, not a search
                cand2[0] = a
                nc2 = 1
                if lightest_load != a and lightest_load != bb:
                    cand2[1] = lightest_load
                    nc2 = 2
                c, sc2 = _best_target(u, cand2, nc2, -np.inf, False, indptr, indices, part, w, spart, scnt, sptr,
                                      lam, send, recv, load, state, lmax, tbound, tau, mu_eff, power, ds, dr, mark,
                                      touched)
                if c >= 0 and sc2 > best2:
                    best_u, best_c, best2 = u, c, sc2
            if tried >= swap_tries or scanned > 32 * swap_tries:
                break
        if best_u >= 0 and bsc + best2 > 0:
            state[0] += _apply_move(best_u, best_c, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv,
                                    load)
            moves += 2
        else:
            state[0] += _apply_move(v, a, indptr, indices, part, w, spart, scnt, sptr, lam, send, recv, load)
        state[1] = send.max()
        state[2] = recv.max()
    return moves


# --------------------------------------------------------- public interface

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

    def __init__(self, a: sp.csr_matrix, part: np.ndarray, parts: int):
        a = _check_matrix(a)
        n = a.shape[0]
        self.parts = parts
        self.indptr = a.indptr.astype(np.int64)
        self.indices = a.indices.astype(np.int64)
        self.w = np.diff(self.indptr)
        csc = sp.csc_matrix(a)
        self.cptr = csc.indptr.astype(np.int64)  # pins of net j: cidx[cptr[j]:cptr[j+1]]
        self.cidx = csc.indices.astype(np.int64)
        self.part = np.array(part, dtype=np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), self.w)
        pairs = np.unique(self.indices * parts + self.part[rows])  # (net, part), sorted by net then part
        net, prt = np.divmod(pairs, parts)
        cnt = np.bincount(np.searchsorted(pairs, self.indices * parts + self.part[rows]), minlength=pairs.size)
        size = np.bincount(self.indices, minlength=n)
        self.sptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.minimum(size, parts), out=self.sptr[1:])
        self.lam = np.bincount(net, minlength=n).astype(np.int64)
        first = np.zeros(n + 1, np.int64)
        np.cumsum(self.lam, out=first[1:])
        slot = self.sptr[net] + (np.arange(pairs.size) - first[net])
        self.spart = np.zeros(self.sptr[-1], np.int64)
        self.scnt = np.zeros(self.sptr[-1], np.int64)
        self.spart[slot] = prt
        self.scnt[slot] = cnt
        self.send = np.bincount(self.part, weights=self.lam - 1, minlength=parts).astype(np.int64)
        self.recv = np.bincount(prt[prt != self.part[net]], minlength=parts).astype(np.int64)
        self.load = np.bincount(self.part, weights=self.w, minlength=parts).astype(np.int64)
        self.total = int(self.send.sum())

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
        d = int(_apply_move(v, b, self.indptr, self.indices, self.part, self.w, self.spart, self.scnt, self.sptr,
                            self.lam, self.send, self.recv, self.load))
        self.total += d
        return d

    def deltas(self, v: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """(P,) changes of send and receive volume if v moved to b (nothing is moved)."""
        p = self.parts
        ds, dr = np.zeros(p, np.int64), np.zeros(p, np.int64)
        if self.part[v] == b:
            return ds, dr
        _move_deltas(v, b, self.indptr, self.indices, self.part, self.spart, self.scnt, self.sptr, self.lam, ds, dr,
                     np.zeros(p, np.int8), np.empty(p, np.int64), 0)
        return ds, dr


def _check_matrix(a) -> sp.csr_matrix:
    if not sp.issparse(a) or a.shape[0] != a.shape[1]:
        raise UserError("volume balancing needs a square sparse matrix Â")
    a = sp.csr_matrix(a)
    if np.any(a.diagonal() == 0):
        raise UserError("volume balancing needs Â with a nonzero diagonal (every vertex is a pin of its own net)")
    return a


def volume_balance(a: sp.csr_matrix, part: np.ndarray, parts: int, eps: float = 0.03,
                   max_total_increase: float = 0.02, seed: int = 0, max_passes: int = 40, min_gain: float = 1e-3,
                   total_weight: float = 0.1, power: float = 3.0, cap: int = 32, max_targets: int = 8,
                   swap_tries: int = 8, time_limit: float | None = None,
                   ) -> tuple[np.ndarray, dict]:
    """Lower the maximum send and receive volume of a row partition of Â.

    Parameters
    ----------
    a : (n, n) csr_matrix
        Â, with a nonzero diagonal; row v's nonzeros are the nets v is a pin of.
    part : (n,) int
        Part of every row, in 0..parts-1.
    parts : int
    eps : float
        Allowed load imbalance (max/mean - 1). If ``part`` already exceeds it,
        its own imbalance is the bound.
    max_total_increase : float
        The total volume stays at most ``(1 + max_total_increase)`` times its start.
    seed : int
        Seeds the order in which vertices are visited.
    max_passes : int
        Passes over the boundary vertices, at most.
    min_gain : float
        Stop when a pass lowers Φ (see the module docstring) by less than this
        fraction.
    total_weight : float
        Cost of one row added to the total, relative to the mean excess of the
        parts above the average (μ in the module docstring).
    cap : int
        Nets with more parts than this do not propose target parts (a hub's
        net touches nearly every part; it would make every part a candidate).
    max_targets : int
        Targets evaluated per vertex, besides the lightest parts.
    swap_tries : int
        When a vertex's best move is forbidden only by the load of its
        target, up to this many vertices of that target that share a net
        with it are tried as the second half of a pair move that frees the
        load (0: single moves only).
    time_limit : float or None
        Stop after the pass that crosses this many seconds.

    Returns
    -------
    part : (n,) int32
        The refined partition.
    info : dict
        ``start`` and ``end`` metrics (max_send, max_recv, total_volume,
        imbalance), ``moves``, ``passes``, ``seconds``.
    """
    t0 = time.perf_counter()
    a = _check_matrix(a)
    part = np.asarray(part)
    n = a.shape[0]
    if part.shape != (n,):
        raise UserError(f"partition has shape {part.shape}, expected ({n},)")
    if parts < 1 or (n and (part.min() < 0 or part.max() >= parts)):
        raise UserError(f"partition entries must lie in 0..{parts - 1}")
    if eps <= 0 or max_total_increase < 0:
        raise UserError(f"need eps > 0 and max_total_increase >= 0 (got {eps}, {max_total_increase})")
    pc = PinCounts(a, part, parts)
    start = _metrics(pc)
    info: dict = {"start": start, "moves": 0, "passes": 0}
    if parts == 1 or pc.total == 0:
        info.update(end=start, seconds=time.perf_counter() - t0)
        return pc.part.astype(np.int32), info
    mean_load = pc.load.sum() / parts
    lmax = max(int(np.floor((1 + eps) * mean_load)), int(pc.load.max()))  # never worse than the start
    tbound = int(np.floor(pc.total * (1 + max_total_increase)))
    state = np.array([pc.total, pc.send.max(), pc.recv.max()], np.int64)
    rng = np.random.default_rng([seed, 0x5642])

    def one_pass() -> int:
        tau = pc.total / parts
        ex = np.concatenate([pc.send - tau, pc.recv - tau])
        mu = total_weight * power * float((ex[ex > 0] ** (power - 1)).mean()) if (ex > 0).any() else 0.0
        lightest = np.unique(np.concatenate([np.argsort(pc.send, kind="stable")[:4],
                                             np.argsort(pc.recv, kind="stable")[:4]])).astype(np.int64)
        order = rng.permutation(n).astype(np.int64)
        moves = _pass(order, pc.indptr, pc.indices, pc.cptr, pc.cidx, pc.part, pc.w, pc.spart, pc.scnt, pc.sptr,
                      pc.lam, pc.send, pc.recv, pc.load, state, lmax, tbound, tau, mu, cap, max_targets, lightest,
                      start["total_volume"], float(power), swap_tries)
        pc.total = int(state[0])
        info["moves"] += int(moves)
        info["passes"] += 1
        log.debug("pass %d: %d moves, max send %d, max recv %d, total %d, max load %d", info["passes"], moves,
                  pc.send.max(), pc.recv.max(), pc.total, pc.load.max())
        return int(moves)

    phi = _phi(pc, power)
    for _ in range(max_passes):
        moves = one_pass()
        new_phi = _phi(pc, power)
        if moves == 0 or phi - new_phi < min_gain * phi:
            break
        phi = new_phi
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
    info["end"] = _metrics(pc)
    info["seconds"] = time.perf_counter() - t0
    log.info("volume balance p=%d: max send %d -> %d, max recv %d -> %d, total %d -> %d, %d moves, %.2f s", parts,
             start["max_send"], info["end"]["max_send"], start["max_recv"], info["end"]["max_recv"],
             start["total_volume"], info["end"]["total_volume"], info["moves"], info["seconds"])
    return pc.part.astype(np.int32), info


def _phi(pc: PinCounts, power: float) -> float:
    tau = pc.total / pc.parts
    return float((np.maximum(pc.send - tau, 0) ** power).sum() + (np.maximum(pc.recv - tau, 0) ** power).sum()) + 1e-12


def _metrics(pc: PinCounts) -> dict:
    mean = pc.load.mean()
    return {"max_send": int(pc.send.max()), "max_recv": int(pc.recv.max()), "total_volume": int(pc.total),
            "imbalance": float(pc.load.max() / mean - 1) if mean > 0 else 0.0}


# ------------------------------------------------------------ registered models

def _refined(base: str):
    """The ``<base>-vb`` model: ``base``'s partition (the build's, or computed
    here when the build has none) refined by :func:`volume_balance`."""

    def run(inputs, cfg) -> tuple[np.ndarray, dict]:
        import time

        from .partition import REGISTRY

        info: dict = {"base": base}
        start = inputs.starts.get(base)
        if start is None:
            t0 = time.perf_counter()
            start, base_info = REGISTRY[base].run(inputs, cfg)
            info["base_seconds"] = round(time.perf_counter() - t0, 3)
            if base_info:
                info["base_info"] = base_info
        t0 = time.perf_counter()
        part, stats = volume_balance(inputs.a, start, cfg.parts, eps=cfg.eps,
                                     max_total_increase=cfg.max_total_increase, seed=cfg.seed)
        info["refine_seconds"] = round(time.perf_counter() - t0, 3)
        info["refine"] = {k: (float(v) if isinstance(v, (int, float, np.number)) else v) for k, v in stats.items()
                          if isinstance(v, (int, float, str, np.number))}
        return part, info

    return run


def _needs_base(base: str):
    """The refinement releases the GIL (numba, nogil); the base partitioner,
    when it must run too, may not: then the model runs in a child process."""

    def child(inputs) -> bool:
        return base not in inputs.starts

    return child


def _register() -> None:
    from .partition import Partitioner, register

    for base, what in (("hp", "hp"), ("gp", "METIS's"), ("shp", "shp's")):
        register(Partitioner(
            f"{base}-vb", _refined(base),
            f"{what} partition with boundary vertices moved to lower the maximum send and receive volume "
            "(total within --max-total-increase, load within eps)",
            child=_needs_base(base), starts_from=(base,), needs_graph=base == "shp"))


_register()
