"""The search of the volume balancing (:mod:`..vb`): one pass over the
boundary vertices, scoring each candidate move by its exact effect on every
part's send and receive volume (numba kernels; the argument tuples ``g``,
``pc`` and ``vol`` are those of :mod:`..pins`).

Bounds and prices travel as ``lim = (lmax, tbound, tau, mu, power)``: the
load bound, the total-volume bound, the average volume per part at the start
of the pass, the price of a row added to the total, and the penalty's power;
scratch arrays as ``scr = (ds, dr, mark, touched)`` (:func:`..pins.move_deltas`'s).
A move is judged in ``ctx = (g, pc, vol, state, lim, scr, mc)``, ``state``
being the running [total, max send, max receive].

Messages (``--vb-messages``, :mod:`.messages`) travel as ``mc = (nu, msg,
mstate, taum, buf, mscr)``: with ``nu > 0`` a move's score also loses ``nu
ΔΨ``, Ψ = Σ_k max(0, sent_k - τm)^γ + max(0, received_k - τm)^γ over the
messages each part sends and receives (τm their mean at the start of the
pass), and a move that gives a part more messages than the running maxima
``mstate`` = [max sent, max received] is refused. With ``nu == 0`` the
message arrays are neither read nor updated.
"""

from __future__ import annotations

import numpy as np

from ..pins import apply_move, jit, move_deltas
from .messages import apply_pairs, message_deltas


@jit
def _pen(x, tau, power):
    e = x - tau
    return e**power if e > 0 else 0.0


@jit
def _targets(v, a, g, pc, pick, slots):
    """Candidate target parts of v (in part a) into ``cand``: the parts holding
    pins of v's nets (nets with at most ``cap`` parts), most shared nets
    first, at most ``max_targets``, then the parts in ``extra``; ``pick =
    (cap, max_targets, extra)``, ``slots = (score_of, cand)``: (P,) scratch.
    Returns (count, whether v is on the boundary)."""
    indptr, indices = g[0], g[1]
    spart, _, sptr, lam = pc
    cap, max_targets, extra = pick
    score_of, cand = slots
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


@jit
def best_target(v, cand, nc, floor, blocked, ctx):
    """Best move of v among ``cand[:nc]`` by score (above ``floor``) that keeps
    the maxima, the total bound and the load bound; with ``blocked``, instead
    the best one (score above 0) among those that only the load bound of
    their target forbids. Returns (part, score); -1 for none."""
    g, pc, vol, state, lim, scr, mc = ctx
    part, send, recv, load = vol
    lmax, tbound, tau, mu, power = lim
    best_b, best = -1, floor
    wv = g[4][v]
    for i in range(nc):
        b = cand[i]
        if (load[b] + wv > lmax) != blocked:
            continue
        nt, dtot = move_deltas(v, b, g, pc, part, scr)
        keeps, dphi = _priced(nt, scr, (send, recv), (state[1], state[2]), (tau, power))
        if not keeps or state[0] + dtot > tbound:
            continue
        score = -dphi - mu * dtot
        if mc[0] > 0:
            ok, dpsi = _message_cost(v, b, ctx)
            if not ok:
                continue
            score -= mc[0] * dpsi
        if score > best:
            best, best_b = score, b
    return best_b, best


@jit
def _message_cost(v, b, ctx):
    """(whether v's move to b keeps the message maxima, its ΔΨ) (module docstring)."""
    g, pc, vol, _, lim, _, mc = ctx
    _, msg, mstate, taum, buf, mscr = mc
    _, sent, received = msg
    nt = message_deltas(v, b, g, pc, vol[0], (msg, buf, mscr))
    return _priced(nt, mscr, (sent, received), (mstate[0], mstate[1]), (taum, lim[4]))


@jit
def _priced(nt, scr, now, caps, price):
    """Whether the changes ``scr = (d_out, d_in, mark, touched)`` of the
    ``nt`` touched parts keep every part within ``caps`` = (max out, max in)
    where they grow, and the change of the penalty (``price`` = (τ, γ):
    Σ_k max(0, x - τ)^γ over both counts ``now`` = (out, in)); the scratch
    is cleared for the next move. Volume (rows) and messages alike."""
    d_out, d_in, mark, touched = scr
    out, inn = now
    tau, power = price
    ok = True
    dpen = 0.0
    for t in range(nt):
        k = touched[t]
        no = out[k] + d_out[k]
        ni = inn[k] + d_in[k]
        if (d_out[k] > 0 and no > caps[0]) or (d_in[k] > 0 and ni > caps[1]):
            ok = False
        dpen += _pen(no, tau, power) - _pen(out[k], tau, power) + _pen(ni, tau, power) - _pen(inn[k], tau, power)
        d_out[k] = 0
        d_in[k] = 0
        mark[k] = 0
    return ok, dpen


@jit
def _apply(v, b, ctx):
    """Apply a move and update ``state`` = [total, max send, max receive]
    (the maxima never rise; they fall when the last part at the maximum
    drops), and the messages when they are priced."""
    g, pc, vol, state, _, _, mc = ctx
    if mc[0] > 0:
        msg, mstate = mc[1], mc[2]
        apply_pairs(v, b, g, pc, vol[0], (msg, mc[4]))
        mstate[0] = msg[1].max()
        mstate[1] = msg[2].max()
    state[0] += apply_move(v, b, g, pc, vol)
    state[1] = vol[1].max()
    state[2] = vol[2].max()


@jit
def _pair_move(v, a, bb, bsc, ctx, pair):
    """v's best move to ``bb`` is forbidden only by bb's load: move v there,
    then the best vertex of bb sharing a small net with v out of it (to v's
    old part or the lightest part). Keeps the pair when its summed score is
    positive, else undoes the first move exactly; ``pair = (cap, swap_tries,
    cand2)``, cand2 (P,) scratch. Returns the moves applied."""
    g, pc, vol, state, lim, _, _ = ctx
    cap, swap_tries, cand2 = pair
    indptr, indices, cptr, cidx, w = g
    part, _, _, load = vol
    _apply(v, bb, ctx)
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
            if u == v or part[u] != bb or load[bb] - w[u] > lim[0] or tried >= swap_tries:
                continue
            tried += 1
            # u goes where v came from (a swap) or to the lightest part: two exact evaluations, not a search
            cand2[0] = a
            nc2 = 1
            if lightest_load != a and lightest_load != bb:
                cand2[1] = lightest_load
                nc2 = 2
            c, sc2 = best_target(u, cand2, nc2, -np.inf, False, ctx)
            if c >= 0 and sc2 > best2:
                best_u, best_c, best2 = u, c, sc2
        if tried >= swap_tries or scanned > 32 * swap_tries:
            break
    if best_u >= 0 and bsc + best2 > 0:
        _apply(best_u, best_c, ctx)
        return 2
    _apply(v, a, ctx)
    return 0


@jit
def one_pass(order, h, bounds, search, extra, mc):
    """One pass over ``order``; ``h = (g, pc, vol, state)``, ``state`` =
    [total, smax, rmax] (int64, updated); ``bounds`` = (lmax, tbound, tau, mu,
    power, total0); ``search`` = (cap, max_targets, swap_tries); ``extra``:
    parts every vertex may also move to; ``mc``: the messages' price and
    counts (module docstring; ``nu == 0``: not priced).

    A vertex of a busy part (send or receive volume in the upper half between
    the mean and the maximum; with messages priced, also its sent or
    received messages) whose best move is forbidden only by its
    target's load bound may still move as a pair (:func:`_pair_move`).
    Returns the number of moves applied."""
    g, pc, vol, state = h
    lmax, tbound, tau, mu, power, total0 = bounds
    cap, max_targets, swap_tries = search
    part, send, recv, _ = vol
    parts = send.size
    scr = (np.zeros(parts, np.int64), np.zeros(parts, np.int64), np.zeros(parts, np.int8), np.empty(parts, np.int64))
    cand = np.empty(parts, np.int64)
    pick, slots = (cap, max_targets, extra), (np.zeros(parts, np.int64), cand)
    pair = (cap, swap_tries, np.empty(parts, np.int64))
    moves = 0
    for v in order:
        a = part[v]
        nc, cut = _targets(v, a, g, pc, pick, slots)
        if not cut:  # interior vertex: every move only adds volume
            continue
        # the price of total volume rises as the budget is spent, so that it goes to the best moves
        left = (tbound - state[0]) / max(tbound - total0, 1)
        ctx = (g, pc, vol, state, (lmax, tbound, tau, mu / max(left, 0.05), power), scr, mc)
        b, _ = best_target(v, cand, nc, 0.0, False, ctx)
        if b >= 0:
            _apply(v, b, ctx)
            moves += 1
            continue
        # pair moves only from the parts whose volume is in the upper half between the mean and the maximum
        hot = 2 * send[a] >= tau + state[1] or 2 * recv[a] >= tau + state[2] or (
            mc[0] > 0 and (2 * mc[1][1][a] >= mc[3] + mc[2][0] or 2 * mc[1][2][a] >= mc[3] + mc[2][1]))
        if swap_tries == 0 or not hot:
            continue
        bb, bsc = best_target(v, cand, nc, 0.0, True, ctx)
        if bb >= 0:
            moves += _pair_move(v, a, bb, bsc, ctx, pair)
    return moves
