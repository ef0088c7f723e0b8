"""What one rank's messages cost while the other ranks of its node send too
(issue 53): the per-rank terms of one stage of an exchange.

Each rank's time in a stage is its latencies plus its slowest bandwidth term
(the bytes overlap; the latencies add up):

- ``latency``: the messages' latency per path (intra- or inter-node): the
  path's ``alpha`` for the first and its per-message ``overhead`` for every
  further message the rank sends or receives (non-blocking messages in
  flight together; LogP's o on both ends), or ``alpha`` for each of
  ``max(sent, received)`` where the path gives no overhead
  (:meth:`~.machine.Channel.latency`);
- ``intra``: its intra-node bytes, the larger of out and in, at the intra
  path's rate (shared memory, full duplex);
- ``injection`` and ``ejection``: its inter-node bytes out and in at one
  rank's rate (``1 / inter.beta``: what ``osu_bw`` reaches with one pair);
- ``link_send`` and ``link_recv``: its inter-node bytes out (in) through its
  node's link while the node's other ranks also send (receive), at the share
  the contention model gives it (:data:`MODELS`), each rank capped at its
  injection (ejection) rate;
- ``bandwidth`` = the largest of those five, ``total`` = ``latency +
  bandwidth``.

The contention models (a machine's ``contention``; ``--machine
...,contention=NAME``):

``fluid`` (every preset's, and a machine's built in code)
    Every inter-node message is a flow through four limits: its sender's and
    receiver's own rates and its two nodes' adapters (out of one, into the
    other); flows progress at max-min fair rates, recomputed whenever flows
    finish (:mod:`.fluid`). Work-conserving and coupled: an adapter idle on
    one side gives its share to the flows that still run, and a message goes
    no faster than either end lets it. A rank's ``link_send`` (``link_recv``)
    is when its last message out (in) is through.
``maxmin``
    Max-min fair sharing (progressive filling) of each node's link, in each
    direction, among the node's ranks that have bytes on it, every rank
    capped at its own rate: all active ranks go at ``min(cap, L / n)``; when
    the smallest finishes, the others share what it leaves. A rank's time is
    when its last byte is through (:func:`maxmin_finish`). Work-conserving:
    the node's last byte is through at ``node bytes / L`` when the link binds.
    It shares each direction of each node on its own: it does not see that
    a message's receiving node may be busier than its sending one. Checked
    against ``fluid`` in benchmarks/RESULTS.md (issue 58).
``share``
    Each rank at its share while *all* of its node's active ranks send, for
    its whole transfer: ``bytes / min(cap, L / n)`` (:func:`share_finish`),
    the per-process bandwidth ``osu_mbw_mr`` measures with ``n`` pairs on a
    node. Not work-conserving: a rank does not speed up when the others are
    done, so it bounds ``maxmin`` from above: a named pessimistic bound,
    never a preset's default (the cited measurements contradict it: one pair
    alone gets the whole link, issue 58).
``aggregate``
    The node's link as one pipe (the max-rate model of Gropp, Olson and
    Samfass, EuroMPI 2016): every rank of a node waits for the node's bytes
    out or in, ``max(node out, node in) / L``, whatever its own. The model
    before issue 53; a :class:`~.machine.Machine` built in code without a
    ``contention`` gets it.

A stage's ``link_send`` of a rank with no inter-node bytes is 0 in
``maxmin`` and ``share``; in ``aggregate`` it is the node's.

:func:`recording` collects the terms of every stage the epoch model computes
inside it (``pipeline simulate --breakdown`` prints them per rank).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MODELS = ("fluid", "maxmin", "share", "aggregate")
DEFAULT = "fluid"  # work-conserving, coupled: every preset's, and a Machine's built in code without one
BANDWIDTH_TERMS = ("intra", "injection", "ejection", "link_send", "link_recv")
TERMS = ("latency", *BANDWIDTH_TERMS, "bandwidth", "total")


def _groups(node: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The senders with bytes, sorted by (node, bytes): their indices, their place in their node's order
    (0-based) and how many of their node have bytes."""
    idx = np.flatnonzero(nbytes > 0)
    order = idx[np.lexsort((nbytes[idx], node[idx]))]
    nd = node[order]
    start = np.r_[0, np.flatnonzero(np.diff(nd)) + 1] if order.size else np.zeros(0, np.int64)
    first = np.repeat(start, np.diff(np.r_[start, order.size]))
    count = np.repeat(np.diff(np.r_[start, order.size]), np.diff(np.r_[start, order.size]))
    return order, np.arange(order.size) - first, count


def maxmin_finish(nbytes, node, capacity, cap: float) -> np.ndarray:
    """When each sender's last byte is through its node's link under max-min fair sharing.

    ``nbytes`` (k,): each sender's bytes; ``node`` (k,): the link each one uses; ``capacity``: bytes/s of
    a link (a number, or (N,) per node); ``cap``: bytes/s one sender can go at most. Progressive filling: a
    node's senders sorted by bytes, b_1 <= ... <= b_n; while n - j + 1 are left, each goes at
    r_j = min(cap, capacity / (n - j + 1)); sender j is done at T_j = T_{j-1} + (b_j - b_{j-1}) / r_j. 0 for a
    sender without bytes.

    Two senders of b bytes on one link (cap >= capacity / 2): 2 b / capacity each.
    """
    b = np.asarray(nbytes, float)
    node = np.asarray(node, np.int64)
    out = np.zeros(b.size)
    order, j, n = _groups(node, b)
    if not order.size:
        return out
    bs = b[order]
    prev = np.where(j > 0, np.r_[0.0, bs[:-1]], 0.0)
    rate = np.minimum(float(cap), _per_node(capacity, node)[order] / (n - j))
    step = (bs - prev) / rate
    csum = np.cumsum(step)
    base = np.repeat(np.r_[0.0, csum][np.flatnonzero(j == 0)], np.diff(np.r_[np.flatnonzero(j == 0), order.size]))
    out[order] = csum - base
    return out


def share_finish(nbytes, node, capacity, cap: float) -> np.ndarray:
    """Each sender's bytes at its share while all its node's senders send: ``b / min(cap, capacity / n)``
    (``n``: the senders of its node with bytes). 0 for a sender without bytes."""
    b = np.asarray(nbytes, float)
    node = np.asarray(node, np.int64)
    active = np.bincount(node[b > 0], minlength=int(node.max()) + 1 if node.size else 0)
    n = np.maximum(active[node], 1) if node.size else np.zeros(0)
    return b / np.minimum(float(cap), _per_node(capacity, node) / n)


def aggregate_finish(nbytes, node, capacity, cap: float) -> np.ndarray:
    """Every rank of a node: the node's bytes at the link's rate, or its own at its cap if that is slower
    (the model before issue 53; a rank without bytes waits for its node too)."""
    b = np.asarray(nbytes, float)
    node = np.asarray(node, np.int64)
    per_node = np.bincount(node, weights=b) if node.size else np.zeros(0)
    return np.maximum(per_node[node] / _per_node(capacity, node), b / float(cap)) if node.size else np.zeros(0)


def _per_node(capacity, node: np.ndarray) -> np.ndarray:
    """(k,) the capacity of each sender's link: ``capacity`` a number (every link's) or (N,) per node."""
    c = np.asarray(capacity, float)
    return np.broadcast_to(c, node.shape) if c.ndim == 0 else c[node]


FINISH = {"maxmin": maxmin_finish, "share": share_finish, "aggregate": aggregate_finish}


WHAT = {"fluid": "fluid (work-conserving: every message a flow at its max-min fair rate through its two ranks' "
                  "rates and its nodes' adapters, recomputed as flows finish)",
        "maxmin": "maxmin (work-conserving max-min sharing of each node's link, each direction on its own)",
        "share": "share (a pessimistic bound, not work-conserving: each rank at its share of its node's link for "
                 "its whole transfer)",
        "aggregate": "aggregate (every rank of a node waits for the node's bytes through its link)"}


def describe(machine: Any) -> str:
    """How ``machine``'s network is modelled, in words: its contention model, link and message rate."""
    if not machine.link_rate:
        return "no shared link (each rank's bytes at its own rate; contention not modelled)"
    rate = getattr(machine, "message_rate", None)
    mr = f", an adapter's message rate {rate / 1e6:.1f} M/s" if rate else ", message rate not modelled"
    return (f"contention {WHAT[getattr(machine, 'contention', DEFAULT)]}, a node's link {machine.link_rate / 1e9:.2f} "
            f"GB/s{mr}")


def check_model(name: str) -> str:
    """``name`` when it is a contention model, else a :class:`~.errors.UserError` listing them."""
    from .errors import UserError

    if name not in MODELS:
        raise UserError(f"contention model {name!r}: choose from {', '.join(MODELS)}")
    return name


def stage_terms(msgs: Any, row_bytes: int, machine: Any, P: int,
                latency_msgs: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """(P,) seconds of each term (:data:`TERMS`) of every rank in one stage of messages (a
    :class:`~.exchanges.base.Messages`) on the :class:`~.machine.Machine`'s nodes (not the job's virtual ones;
    neither is imported here: both import this module). ``latency_msgs`` (P,): this many latencies of the job's flat path per rank
    instead of one per message (a collective's steps). Ranks with no message (and no ``latency_msgs``) are 0
    throughout."""
    k = machine.node_size(P)
    node = np.arange(P, dtype=np.int64) // k
    nbytes = (msgs.rows * int(row_bytes)).astype(float)
    inter = msgs.src // k != msgs.dst // k
    t: dict[str, np.ndarray] = {}
    lat = np.zeros(P)
    for sel, ch, name in ((~inter, machine.intra, "intra"), (inter, machine.inter, "inter")):
        out_b = np.bincount(msgs.src[sel], weights=nbytes[sel], minlength=P)
        in_b = np.bincount(msgs.dst[sel], weights=nbytes[sel], minlength=P)
        lat += ch.latency(np.bincount(msgs.src[sel], minlength=P), np.bincount(msgs.dst[sel], minlength=P))
        if name == "intra":
            t["intra"] = ch.beta * np.maximum(out_b, in_b)
        else:
            t["injection"], t["ejection"] = ch.beta * out_b, ch.beta * in_b
            inter_out, inter_in = out_b, in_b
    if latency_msgs is not None:
        lat = machine.flat_path(P).alpha * np.asarray(latency_msgs, float)
    if machine.link_rate and inter.any():
        model = getattr(machine, "contention", DEFAULT)
        cap = 1.0 / machine.inter.beta if machine.inter.beta > 0 else np.inf
        rate = getattr(machine, "message_rate", None)
        overhead = 1.0 / rate if rate else 0.0
        if model == "fluid":
            from .fluid import stage_finish

            t["link_send"], t["link_recv"] = stage_finish(msgs.src[inter], msgs.dst[inter], nbytes[inter],
                                                          np.ones(int(inter.sum())), node, cap=cap,
                                                          link_rate=machine.link_rate, overhead=overhead)
        else:
            finish = FINISH[model]
            for key, ranks, b in (("link_send", msgs.src, inter_out), ("link_recv", msgs.dst, inter_in)):
                t[key] = finish(b, node, _node_capacity(node, ranks[inter], nbytes[inter], machine.link_rate,
                                                        overhead), cap)
    else:  # no shared link: a rank's own rate is all there is
        t["link_send"], t["link_recv"] = t["injection"].copy(), t["ejection"].copy()
    busy = np.zeros(P, bool)
    busy[msgs.src] = True
    busy[msgs.dst] = True
    keep = busy | (latency_msgs is not None)
    t["latency"] = lat
    t["bandwidth"] = np.max([t[k] for k in BANDWIDTH_TERMS], axis=0)
    t["total"] = t["latency"] + t["bandwidth"]
    out = {k: np.where(keep, t[k], 0.0) for k in TERMS}
    _note(out)
    return out


def _node_capacity(node: np.ndarray, ranks: np.ndarray, nbytes: np.ndarray, link_rate: float, overhead: float):
    """The link rate each node's messages leave it in a stage (one direction): ``L B / (B + M L overhead)`` for
    its ``B`` bytes in ``M`` messages (``link_rate`` itself without a message overhead). ``ranks`` (m,), ``nbytes``
    (m,): the end of each inter-node message on this side, and its bytes."""
    if not overhead:
        return float(link_rate)
    N = int(node.max()) + 1
    b = np.bincount(node[ranks], weights=nbytes, minlength=N)
    m = np.bincount(node[ranks], minlength=N).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = link_rate * b / (b + m * link_rate * overhead)
    return np.where(b > 0, c, link_rate)


# ---------------------------------------------------------------- recording the terms of every stage


@dataclass
class Recorder:
    """The terms of every stage computed while it records, in order: ``stages`` (a list of dicts of (P,) arrays,
    :data:`TERMS`)."""

    stages: list[dict[str, np.ndarray]] = field(default_factory=list)

    def summed(self, P: int) -> dict[str, np.ndarray]:
        """Each term summed over the recorded stages, (P,) each (zeros when nothing was recorded)."""
        return {k: np.sum([s[k] for s in self.stages], axis=0) if self.stages else np.zeros(P) for k in TERMS}


_ACTIVE: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("shgcn_contention_recorder", default=None)


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    """Collect the terms of every stage :func:`stage_terms` computes inside the ``with`` block."""
    rec = Recorder()
    token = _ACTIVE.set(rec)
    try:
        yield rec
    finally:
        _ACTIVE.reset(token)


def _note(terms: dict[str, np.ndarray]) -> None:
    rec = _ACTIVE.get()
    if rec is not None:
        rec.stages.append(terms)
