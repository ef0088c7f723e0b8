"""A communication profile: a partition given by its ratios to a baseline's
volumes and messages, not by its part vector (issue 53).

A paper reports a partition by a row of ratios to the random partition's:
the average and the largest volume a processor sends, the average and the
largest number of messages it sends (the paper's Table 2). :func:`scaled`
turns the baseline's exact per-rank profile (its volume matrix, from a
store or a partition) into a :class:`~.partition.PartitionCost` whose
averages and maxima are those ratios times the baseline's, so that the epoch
model (:mod:`.epoch`) can predict the epoch of a partition known only by its
row.

How the baseline's profile is scaled (every step exact in whole rows and
messages; a row of ratios that cannot be met this way is a ``ValueError``):

1. Messages. The rank that sends the most messages keeps ``round(msgs_max x
   its count)``; every other rank's count is multiplied by one factor (capped
   as the volumes are, step 2), the counts rounded (largest remainder) so that they add up to
   ``round(msgs_avg x the baseline's total)``. A rank keeps its largest
   destinations (by rows; ties: the lower rank); a rank that needs more
   gains the lowest ranks it did not send to, each at its row's mean.
2. Volumes. The rank that sends the most rows sends ``round(volume_max x
   its rows)``; every other rank's rows are multiplied by one factor (a rank
   that would pass that maximum stays at it, the others share the rest),
   rounded (largest remainder) to add up to ``round(volume_avg x the
   baseline's total)``. Each rank's rows are spread over its destinations in
   proportion to what the baseline sent them (largest remainder; a message
   left with none takes one row from the largest), so the identity row of
   ratios gives back the baseline's volumes.
3. Compute: a balanced partition's. Every rank ``n / P`` rows and ``nnz /
   P`` nonzeros (the remainders one each to the first ranks), and the
   baseline's own-column nonzeros spread the same way.

The busiest ranks stay where the baseline has them (their node neighbours
are the baseline's). The profile has no part vector: only the flat
exchanges (p2p, alltoallv, bcast) can be predicted for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .partition import PartitionCost


@dataclass(frozen=True)
class Ratios:
    """A partition's volumes and messages as ratios to a baseline's (the paper's Table 2 row).

    Attributes: volume_avg, volume_max (rows a processor sends per SpMM, its average and the largest);
    msgs_avg, msgs_max (messages a processor sends); name (what the row is); epoch (the epoch ratio the
    source measured for it, NaN when none).
    """

    volume_avg: float
    volume_max: float
    msgs_avg: float
    msgs_max: float
    name: str = ""
    epoch: float = float("nan")


# The paper's Table 2 (Demirci, Haldar, Ferhatosmanoglu), soc-slashdot0902 at P = 512, each a ratio to RP
PAPER_SLASHDOT_512 = {
    "HP": Ratios(0.74, 0.69, 0.86, 0.92, "the paper's HP (PaToH), soc-slashdot0902, P = 512", 0.75),
    "GP": Ratios(0.85, 4.38, 0.93, 1.00, "the paper's GP (METIS), soc-slashdot0902, P = 512", 2.02),
}


def _spread(total: int, weights: np.ndarray) -> np.ndarray:
    """Whole numbers proportional to ``weights`` adding up to ``total`` exactly (largest remainder; ties: the
    lower index)."""
    w = np.asarray(weights, float)
    if total == 0 or w.size == 0:
        return np.zeros(w.size, np.int64)
    share = total * w / w.sum()
    out = np.floor(share).astype(np.int64)
    left = int(total - out.sum())
    if left:
        order = np.lexsort((np.arange(w.size), -(share - out)))
        out[order[:left]] += 1
    return out


def _capped_factor(rest: np.ndarray, target: float, cap: float) -> np.ndarray:
    """``min(w x rest, cap)`` with the one factor ``w`` that makes them add up to ``target`` (water-filling:
    ranks that would pass the cap stay at it, the others share the rest)."""
    r = np.asarray(rest, float)
    order = np.argsort(-r, kind="stable")
    out = np.zeros(r.size)
    left, remaining = float(target), r.sum()
    for i, k in enumerate(order):
        w = left / remaining if remaining > 0 else 0.0
        if w * r[k] <= cap:  # no larger one passes the cap: one factor for all that are left
            out[order[i:]] = w * r[order[i:]]
            return out
        out[k] = cap
        left -= cap
        remaining -= r[k]
    return out


def _scaled_counts(values: np.ndarray, avg: float, top: float, what: str) -> np.ndarray:
    """``values`` with its largest (the first such rank) times ``top`` and the others times one factor (capped
    at that largest), whole and adding up to ``round(avg x sum)``; a ``ValueError`` when that cannot hold."""
    v = np.asarray(values, np.int64)
    big = int(np.argmax(v))
    new_max = int(round(top * v[big]))
    total = int(round(avg * v.sum()))
    others = np.arange(v.size) != big
    rest = v[others]
    if not 0 <= total - new_max <= new_max * rest.size or (rest.sum() == 0 and total != new_max):
        raise ValueError(f"{what}: an average of {avg} and a maximum of {top} times the baseline's cannot both hold")
    out = np.empty_like(v)
    out[big] = new_max
    share = _capped_factor(rest, total - new_max, new_max) if rest.sum() else np.zeros(rest.size)
    whole = np.floor(share).astype(np.int64)
    short = int(total - new_max - whole.sum())
    room = whole < new_max  # the remainders go to the largest fractions that are below the cap
    order = np.lexsort((np.arange(share.size), -(share - whole)))
    whole[order[room[order]][:short]] += 1
    out[others] = whole
    return out


def _at_least_one(x: np.ndarray) -> np.ndarray:
    """``x`` with every 0 raised to 1, each taken from the largest entry (the lower index first); ``x.sum() >=
    x.size``."""
    x = x.copy()
    for i in np.flatnonzero(x == 0):
        x[int(np.argmax(x))] -= 1
        x[i] = 1
    return x


def _destinations(row: np.ndarray, me: int, count: int) -> np.ndarray:
    """The ``count`` destinations rank ``me`` keeps of its ``row`` (largest first, ties: the lower rank), and
    new ones (the lowest ranks it did not send to) when it needs more."""
    P = row.size
    used = np.flatnonzero(row > 0)
    if count <= used.size:
        order = used[np.lexsort((used, -row[used]))]
        return np.sort(order[:count])
    free = np.array([q for q in range(P) if q != me and row[q] == 0], np.int64)
    if count - used.size > free.size:
        raise ValueError(f"rank {me} would send {count} messages; there are {P - 1} other ranks")
    return np.sort(np.r_[used, free[:count - used.size]])


def scaled(base: PartitionCost, ratios: Ratios, model: str | None = None, n: int | None = None,
           nnz: int | None = None) -> PartitionCost:
    """The baseline's profile scaled to ``ratios`` (see the module's docstring), as a :class:`PartitionCost`
    named ``model`` (default: the ratios' name). ``n`` and ``nnz``: the graph's rows and nonzeros (default:
    the baseline's)."""
    v = np.asarray(base.volume, np.int64).copy()
    np.fill_diagonal(v, 0)
    P = v.shape[0]
    msgs = _scaled_counts((v > 0).sum(1), ratios.msgs_avg, ratios.msgs_max, "messages")
    send = _scaled_counts(v.sum(1), ratios.volume_avg, ratios.volume_max, "volume")
    out = np.zeros_like(v)
    for r in range(P):
        if msgs[r] == 0:
            if send[r]:
                raise ValueError(f"rank {r} would send {send[r]} rows in no message")
            continue
        if send[r] < msgs[r]:
            raise ValueError(f"rank {r} would send {send[r]} rows in {msgs[r]} messages (at least one row each)")
        dst = _destinations(v[r], r, int(msgs[r]))
        w = v[r, dst].astype(float)
        w[w == 0] = v[r, v[r] > 0].mean() if (v[r] > 0).any() else 1.0
        out[r, dst] = _at_least_one(_spread(int(send[r]), w))
    n = int(base.rows.sum()) if n is None else int(n)
    nnz = int(base.load.sum()) if nnz is None else int(nnz)
    own = int(base.own.sum()) if base.own is not None else None
    return PartitionCost(model=model or ratios.name, volume=out, load=_spread(nnz, np.ones(P)),
                         rows=_spread(n, np.ones(P)), own=_spread(own, np.ones(P)) if own is not None else None,
                         directed=base.directed)


def profile_of(cost: PartitionCost) -> dict[str, float]:
    """A partition's profile: ``volume_avg``, ``volume_max`` (rows a rank sends per SpMM), ``msgs_avg``,
    ``msgs_max`` (messages it sends)."""
    v = np.asarray(cost.volume, np.int64).copy()
    np.fill_diagonal(v, 0)
    send, msgs = v.sum(1), (v > 0).sum(1)
    return {"volume_avg": float(send.mean()), "volume_max": float(send.max()), "msgs_avg": float(msgs.mean()),
            "msgs_max": float(msgs.max())}


def ratios_of(cost: PartitionCost, base: PartitionCost, name: str = "") -> Ratios:
    """``cost``'s profile as :class:`Ratios` to ``base``'s."""
    a, b = profile_of(cost), profile_of(base)
    return Ratios(a["volume_avg"] / b["volume_avg"], a["volume_max"] / b["volume_max"], a["msgs_avg"] / b["msgs_avg"],
                  a["msgs_max"] / b["msgs_max"], name=name)
