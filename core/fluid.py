"""A fluid model of one exchange stage's inter-node messages (issue 58): every
message is a flow that progresses at its max-min fair rate under every limit
it crosses, the rates recomputed whenever flows finish.

The limits (resources) a flow from rank ``s`` on node ``a`` to rank ``d`` on
node ``b`` crosses:

- ``s``'s own injection rate and ``d``'s own ejection rate (``cap`` bytes/s
  each: what ``osu_bw`` reaches with one pair);
- node ``a``'s adapter out and node ``b``'s adapter in: each is busy
  ``1 / link_rate`` seconds per byte plus ``overhead`` seconds per message
  (the adapter's message rate, ``1 / overhead`` messages per second: small
  messages are limited by it, not by the bandwidth); a flow of ``B`` bytes in
  ``m`` messages going at ``r`` bytes/s keeps the adapter busy a fraction
  ``r (1 / link_rate + m overhead / B)`` of the time.

Max-min fairness by progressive filling: every unfrozen flow's rate rises
together until a resource is full; the flows crossing it freeze at that rate;
repeat until every flow is frozen. The flows then run at those rates until the
first finishes; what it held is shared again (the adapters serve the queues
that have work: work-conserving). A rank's sending (receiving) is done when
its last flow out (in) is.

The model is exact for the fluid it describes; one approximation makes it
fast, and it is bounded: flows whose finish times at the current rates are
within ``tol`` (relative) of the first are finished together, at their own
finish times (what they would have left to the others for that last fraction
is not given back).

The closed form ``maxmin`` of :mod:`.contention` shares each node's link in
each direction independently; this module couples the two ends of every
message (a flow's rate is the smallest its four limits allow).
"""

from __future__ import annotations

import heapq

import numba
import numpy as np

TOL = 1e-3  # flow by flow: flows finishing within 0.1% of the first are finished together
BUNDLE_TOL = 1e-4  # bundles: within 0.01% (each finish time within about twice that of the exact one)


def maxmin_rates(res: np.ndarray, weight: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of flows sharing resources (progressive filling).

    Parameters
    ----------
    res : (F, K) int64
        The K resources each flow crosses (indices into ``capacity``; a flow may name a resource once).
    weight : (F, K) float
        What one unit of a flow's rate uses of each of its resources (>= 0).
    capacity : (R,) float
        Each resource's capacity (> 0; ``inf``: no limit).

    Returns
    -------
    (F,) float: each flow's rate; ``sum_f rate_f weight_fk <= capacity`` for every resource, and every flow
    crosses a resource that is full, on which no flow has a higher rate (max-min fairness). ``inf`` for a flow
    that crosses no finite resource.
    """
    F, K = res.shape
    R = capacity.size
    rate = np.full(F, np.inf)
    if F == 0:
        return rate
    used = np.zeros(R)
    live = np.arange(F)
    r_live = res.copy()
    w_live = weight.copy()
    finite = np.isfinite(capacity)
    while live.size:
        demand = np.bincount(r_live.ravel(), weights=w_live.ravel(), minlength=R)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where((demand > 0) & finite, (capacity - used) / demand, np.inf)
        t = float(level.min())
        if not np.isfinite(t):
            break  # the remaining flows cross no finite resource in use
        t = max(t, 0.0)
        full = level <= t * (1 + 1e-12)
        hit = full[r_live].any(1)
        rate[live[hit]] = t
        used += np.bincount(r_live[hit].ravel(), weights=(w_live[hit] * t).ravel(), minlength=R)
        keep = ~hit
        live, r_live, w_live = live[keep], r_live[keep], w_live[keep]
    return rate


def stage_finish(src, dst, nbytes, msgs, node, *, cap: float, link_rate: float | None, overhead: float = 0.0,
                 tol: float = TOL) -> tuple[np.ndarray, np.ndarray]:
    """When each rank's last byte out and in is through, under the fluid model of one stage.

    Parameters
    ----------
    src, dst : (F,) int
        Sender and receiver rank of each flow (inter-node messages).
    nbytes : (F,) float
        Bytes of each flow (> 0).
    msgs : (F,) float
        Messages each flow is made of (its share of the adapter's message rate).
    node : (P,) int
        The node of every rank.
    cap : float
        One rank's injection (and ejection) rate, bytes/s (``inf``: none).
    link_rate : float or None
        A node adapter's rate, bytes/s, each direction (None: no shared adapter).
    overhead : float
        Seconds of the node adapter per message (1 / its message rate; 0: not modelled).
    tol : float
        Flow by flow (a rank's own rate may bind): flows whose finish times at the current rates are within
        this fraction of the first one's (from the stage's start) are finished together, each at its own time.
        Bundles: :data:`BUNDLE_TOL`.

    Returns
    -------
    send, recv : (P,) float
        Seconds until each rank's last flow out (in) is done; 0 for a rank without one.
    """
    node = np.asarray(node, np.int64)
    P = node.size
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    b = np.asarray(nbytes, float)
    send, recv = np.zeros(P), np.zeros(P)
    if src.size == 0:
        return send, recv
    if link_rate and cap >= link_rate:
        # a rank's flows go through its node's adapter, which carries at most link_rate bytes/s: a rank's own
        # rate cannot bind, and every flow between the same two nodes has the same rate (max-min gives flows
        # on the same resources the same rate): the nodes' flows in bundles, exactly
        end = node_pair_finish(node[src], node[dst], b, msgs, float(link_rate), overhead=overhead, tol=BUNDLE_TOL)
    else:
        res, weight, capacity = resources(src, dst, b, msgs, node, cap=cap, link_rate=link_rate, overhead=overhead)
        if not np.isfinite(capacity).any():
            raise ValueError("the flows cross no finite limit: give the ranks a rate (cap) or the nodes a link")
        end = finish_times(res, weight, capacity, b, tol)
    np.maximum.at(send, src, end)
    np.maximum.at(recv, dst, end)
    return send, recv


def node_pair_finish(a: np.ndarray, b: np.ndarray, nbytes: np.ndarray, msgs, link_rate: float, *,
                     overhead: float = 0.0, tol: float = 0.0) -> np.ndarray:
    """(F,) seconds until each flow from node ``a`` to node ``b`` (F,) is through, when only the nodes'
    adapters limit them (each ``link_rate`` bytes/s and ``overhead`` s a message, each direction).

    The flows between two nodes are a bundle: max-min gives them one rate, so they finish in the order of
    their bytes; the bundles' rates are max-min fair (progressive filling, :func:`maxmin_rates`) with each
    bundle's weight the sum of its running flows' (adapter seconds per byte), recomputed whenever a flow
    finishes. Exact (``tol`` 0) up to rounding: as many rate computations as distinct (bundle, bytes)."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    nbytes = np.asarray(nbytes, float)
    F = nbytes.size
    if F == 0:
        return np.zeros(0)
    w = adapter_per_byte(nbytes, msgs, link_rate, overhead)
    N = int(max(a.max(), b.max())) + 1
    key = a * N + b
    order = np.lexsort((nbytes, key))
    k = key[order]
    first = np.r_[0, np.flatnonzero(np.diff(k)) + 1, F].astype(np.int64)
    head = k[first[:-1]]
    res = np.stack([head // N, N + head % N], 1).astype(np.int64)  # adapter out of a, in of b
    end_sorted = _simulate_bundles(first, res, nbytes[order], w[order], np.ones(2 * N), float(tol))
    end = np.empty(F)
    end[order] = end_sorted
    return end


def adapter_per_byte(nbytes: np.ndarray, msgs, link_rate: float, overhead: float) -> np.ndarray:
    """(F,) seconds of a node's adapter per byte of each flow: its bytes' ``1 / link_rate`` plus its messages'
    ``overhead`` spread over its bytes."""
    return 1.0 / float(link_rate) + overhead * np.broadcast_to(np.asarray(msgs, float), nbytes.shape) / nbytes


def resources(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, msgs, node: np.ndarray, *, cap: float,
              link_rate: float | None, overhead: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The resources of :func:`stage_finish`'s flows: ``res`` (F, K) and ``weight`` (F, K) as
    :func:`maxmin_rates` takes them, ``capacity`` (R,): rank ``r`` sending is resource ``r``, receiving
    ``P + r``; node ``a``'s adapter out ``2P + a``, in ``2P + N + a`` (K = 4 with a link, 2 without)."""
    P = node.size
    N = int(node.max()) + 1
    cols = [src, P + dst]
    ones = np.ones(src.size)
    wts = [ones, ones]
    capacity = [np.full(2 * P, float(cap))]
    if link_rate:
        per_byte = adapter_per_byte(nbytes, msgs, link_rate, overhead)
        cols += [2 * P + node[src], 2 * P + N + node[dst]]
        wts += [per_byte, per_byte]
        capacity.append(np.ones(2 * N))
    return np.stack(cols, 1), np.stack(wts, 1), np.concatenate(capacity)


def finish_times(res: np.ndarray, weight: np.ndarray, capacity: np.ndarray, nbytes: np.ndarray,
                 tol: float = TOL) -> np.ndarray:
    """(F,) seconds until each flow of ``nbytes`` (F,) bytes is through, its rate max-min fair
    (:func:`maxmin_rates`) among the flows still running, recomputed whenever flows finish."""
    return _simulate(np.ascontiguousarray(res, np.int64), np.ascontiguousarray(weight, np.float64),
                     np.ascontiguousarray(capacity, np.float64), np.ascontiguousarray(nbytes, np.float64),
                     float(tol))


@numba.njit(cache=True)
def _fill(res, weight, capacity, live, rate):  # pragma: no cover - compiled
    """Progressive filling of the flows ``live`` (indices) into ``rate``: a heap of the resources' levels
    (the rate at which each would be full). A level only rises as flows on it freeze elsewhere, so a popped
    entry is a lower bound: it is recomputed, and pushed back when it rose."""
    F, K = res.shape
    R = capacity.size
    demand = np.zeros(R)
    count = np.zeros(R + 1, np.int64)
    for f in live:
        for k in range(K):
            demand[res[f, k]] += weight[f, k]
            count[res[f, k] + 1] += 1
    start = np.cumsum(count)
    fill = start[:-1].copy()
    members = np.empty(start[-1], np.int64)
    for f in live:
        for k in range(K):
            j = res[f, k]
            members[fill[j]] = f
            fill[j] += 1
    used = np.zeros(R)
    frozen = np.zeros(F, np.bool_)
    level = np.full(R, np.inf)
    heap = [(np.inf, np.int64(-1))]
    heap.pop()
    for j in range(R):
        if demand[j] > 0 and np.isfinite(capacity[j]):
            level[j] = capacity[j] / demand[j]
            heapq.heappush(heap, (level[j], np.int64(j)))
    t = 0.0
    left = live.size
    while heap and left:
        lv, j = heapq.heappop(heap)
        if count[j + 1] == 0 or not np.isfinite(level[j]):
            continue  # no running flow left on it, or already full
        now_level = max((capacity[j] - used[j]) / demand[j], t)
        if now_level > lv * (1 + 1e-12):
            level[j] = now_level  # it rose since it was pushed (flows on it froze elsewhere): look again later
            heapq.heappush(heap, (now_level, j))
            continue
        t = max(t, now_level)
        for i in range(start[j], start[j + 1]):
            f = members[i]
            if frozen[f]:
                continue
            frozen[f] = True
            left -= 1
            rate[f] = t
            for k in range(K):
                q = res[f, k]
                used[q] += weight[f, k] * t
                demand[q] -= weight[f, k]
                count[q + 1] -= 1  # (start is already built: count now holds the unfrozen flows on each)
        level[j] = np.inf
    for f in live:
        if not frozen[f]:
            rate[f] = np.inf


@numba.njit(cache=True)
def _simulate(res, weight, capacity, nbytes, tol):  # pragma: no cover - compiled
    F = nbytes.size
    rem = nbytes.copy()
    end = np.zeros(F)
    rate = np.zeros(F)
    live = np.arange(F)
    now = 0.0
    while live.size:
        _fill(res, weight, capacity, live, rate)
        first = np.inf
        for f in live:
            first = min(first, rem[f] / rate[f])
        if not np.isfinite(first):
            raise ValueError("a flow crosses no finite limit")
        horizon = max((now + first) * (1 + tol), now + first)
        keep = np.empty(live.size, np.int64)
        n = 0
        for f in live:
            t_f = now + rem[f] / rate[f]
            if t_f <= horizon:
                end[f] = t_f
            else:
                rem[f] -= rate[f] * first
                keep[n] = f
                n += 1
        now += first
        live = keep[:n]
    return end


@numba.njit(cache=True)
def _simulate_bundles(first, res, size, w, capacity, tol):  # pragma: no cover - compiled
    """Bundles ``g`` of flows ``first[g] .. first[g + 1]`` (sorted by bytes ``size``, adapter seconds per
    byte ``w``) on the resources ``res[g]``: the end time of every flow."""
    G = first.size - 1
    F = size.size
    end = np.zeros(F)
    done = np.zeros(G, np.float64)  # bytes every running flow of a bundle has sent
    ptr = first[:-1].copy()
    load = np.zeros(G)
    for g in range(G):
        for i in range(first[g], first[g + 1]):
            load[g] += w[i]
    weight = np.empty((G, 2))
    rate = np.zeros(G)
    now = 0.0
    live = np.arange(G)
    while live.size:
        for g in live:
            weight[g, 0] = load[g]
            weight[g, 1] = load[g]
        _fill(res, weight, capacity, live, rate)
        step = np.inf
        for g in live:
            step = min(step, (size[ptr[g]] - done[g]) / rate[g])
        horizon = (now + step) * (1 + tol)
        keep = np.empty(live.size, np.int64)
        n = 0
        for g in live:
            done[g] += rate[g] * step
            while ptr[g] < first[g + 1]:
                i = ptr[g]
                t_i = now + step + (size[i] - done[g]) / rate[g]
                if size[i] <= done[g] * (1 + 1e-12) or t_i <= horizon:
                    end[i] = max(t_i, now + step) if size[i] > done[g] else now + step
                    load[g] -= w[i]
                    ptr[g] += 1
                else:
                    break
            if ptr[g] < first[g + 1]:
                keep[n] = g
                n += 1
        now += step
        live = keep[:n]
    return end
