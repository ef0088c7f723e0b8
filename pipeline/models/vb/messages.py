"""Messages of a row partition of Â, kept up to date move by move for the
volume balancing (:mod:`..vb`, ``--vb-messages``).

Part p sends a message to part q when it owns a net (column of Â) with a
pin in q; the pair count ``M[p, q]`` is the number of rows p sends to q (the
volume matrix of :mod:`...metrics.volume`), and the messages of a part are the
nonzeros of its row (sent) and of its column (received) of M.

Moving vertex v from part a to part b changes M in two ways:

- for every other net j of v (owner o = part[j]): when v was the last pin of
  j in a, ``M[o, a]`` loses one; when b held no pin of j, ``M[o, b]`` gains one;
- net v changes owner: every part k it touched before (k != a) loses the row
  from a (``M[a, k] - 1``), and every part it touches after (k != b) gets it
  from b (``M[b, k] + 1``).

:func:`pair_changes` lists these unit changes (before the move is applied to
the pin counts); :func:`apply_pairs` applies them to M and to the message
counts, :func:`message_deltas` evaluates them without changing anything.
The kernels take ``msg = (M, sent, received)`` ((P, P) int32, (P,) int64,
(P,) int64), ``buf = (bp, bq, bd)`` (scratch for the unit changes, long
enough for :func:`buffer_size`) and ``mscr = (dsent, drecv, mark,
touched)`` ((P,) scratch, like the volume's).
"""

from __future__ import annotations

import numpy as np

from ..pins import PinCounts, count, jit, touch


def pair_counts(pc: PinCounts) -> np.ndarray:
    """(P, P) int32 ``M[p, q]``: rows part p sends to part q (zero diagonal), from the pin counts."""
    parts, n = pc.parts, pc.part.size
    net = np.repeat(np.arange(n, dtype=np.int64), pc.lam)
    first = np.repeat(np.cumsum(pc.lam) - pc.lam, pc.lam)
    k = pc.spart[pc.sptr[net] + np.arange(net.size, dtype=np.int64) - first]
    o = pc.part[net]
    keep = k != o
    return np.bincount(o[keep] * parts + k[keep], minlength=parts * parts).astype(np.int32).reshape(parts, parts)


def messages(pc: PinCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``msg = (M, sent, received)`` of the partition held by ``pc`` (module docstring)."""
    m = pair_counts(pc)
    nz = m > 0
    return m, nz.sum(1).astype(np.int64), nz.sum(0).astype(np.int64)


def buffer_size(pc: PinCounts) -> int:
    """Length of the unit-change buffers that no move overflows: two per net of
    the vertex, and two per part of its own net."""
    deg = int(np.diff(pc.indptr).max()) if pc.part.size else 0
    return 2 * deg + 2 * pc.parts + 2


def scratch(pc: PinCounts) -> tuple[tuple, tuple]:
    """Fresh ``(buf, mscr)`` for the kernels."""
    size, parts = buffer_size(pc), pc.parts
    buf = (np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64))
    mscr = (np.zeros(parts, np.int64), np.zeros(parts, np.int64), np.zeros(parts, np.int8),
            np.empty(parts, np.int64))
    return buf, mscr


@jit
def _put(buf, n, p, q, d):
    buf[0][n] = p
    buf[1][n] = q
    buf[2][n] = d
    return n + 1


@jit
def pair_changes(v, b, g, pc, part, buf):
    """The unit changes of M when v moves to b, into ``buf``; returns their count.
    Reads the pin counts before the move; none when v is in b already."""
    indptr, indices = g[0], g[1]
    spart, scnt, sptr, lam = pc
    a = part[v]
    n = 0
    if a == b:
        return 0
    for p in range(indptr[v], indptr[v + 1]):
        j = indices[p]
        if j == v:
            continue
        o = part[j]
        if count(pc, j, a) == 1:  # a leaves net j (a != o: j itself is in o)
            n = _put(buf, n, o, a, -1)
        if count(pc, j, b) == 0:  # b joins net j
            n = _put(buf, n, o, b, 1)
    for s in range(sptr[v], sptr[v] + lam[v]):  # net v: owner a -> b
        k = spart[s]
        if k != a:
            n = _put(buf, n, a, k, -1)
        if k != b and not (k == a and scnt[s] == 1):
            n = _put(buf, n, b, k, 1)
    return n


@jit
def apply_pairs(v, b, g, pc, part, work):
    """Apply v's move to b to ``msg`` (call before the pin counts change);
    ``work = (msg, buf)``."""
    msg, buf = work
    m, sent, received = msg
    n = pair_changes(v, b, g, pc, part, buf)
    bp, bq, bd = buf
    for i in range(n):
        p, q = bp[i], bq[i]
        old = m[p, q]
        m[p, q] = old + bd[i]
        if old == 0:
            sent[p] += 1
            received[q] += 1
        elif old + bd[i] == 0:
            sent[p] -= 1
            received[q] -= 1


@jit
def message_deltas(v, b, g, pc, part, work):
    """Add the change of every part's sent (``dsent``) and received
    (``drecv``) messages caused by moving v to b; the parts changed are
    listed in ``touched`` (and marked); ``work = (msg, buf, mscr)``. M is
    left as it was. Returns their count."""
    msg, buf, mscr = work
    m = msg[0]
    dsent, drecv, mark, touched = mscr
    n = pair_changes(v, b, g, pc, part, buf)
    bp, bq, bd = buf
    nt = 0
    for i in range(n):
        p, q = bp[i], bq[i]
        old = m[p, q]
        m[p, q] = old + bd[i]
        if old == 0 or old + bd[i] == 0:
            d = 1 if old == 0 else -1
            nt = touch(mark, touched, touch(mark, touched, nt, p), q)
            dsent[p] += d
            drecv[q] += d
    for i in range(n - 1, -1, -1):
        m[bp[i], bq[i]] -= bd[i]
    return nt


class MessagePrice:
    """The message counts of a partition and their price, as
    :func:`.search.one_pass` takes them (``mc``); ``weight`` 0: not
    priced, and the arrays are one-element placeholders that nothing reads."""

    def __init__(self, pc: PinCounts, weight: float):
        self.weight = weight
        if weight > 0:
            self.msg = messages(pc)
            self.buf, self.mscr = scratch(pc)
        else:
            one = np.zeros(1, np.int64)
            self.msg = (np.zeros((1, 1), np.int32), one, one)
            self.buf, self.mscr = (one, one, one), (one, one, np.zeros(1, np.int8), one)
        self.mstate = np.array([self.msg[1].max(), self.msg[2].max()], np.int64)

    def psi(self, power: float) -> float:
        """Ψ (:mod:`.search`) with τm the mean count now; 0 when not priced."""
        if self.weight <= 0:
            return 0.0
        taum = self.msg[1].mean()
        return float((np.maximum(self.msg[1] - taum, 0) ** power).sum()
                     + (np.maximum(self.msg[2] - taum, 0) ** power).sum()) + 1e-12

    def context(self, power: float, marginal: float) -> tuple:
        """``mc`` of one pass. ν = ``weight`` times the volume's mean marginal Φ
        (``marginal``, at least that of an excess of 1) over the mean marginal
        Ψ of the parts above τm: a message at such a part is worth ``weight``
        rows at a part above the average volume."""
        nu, taum = 0.0, float(self.msg[1].mean())
        ex = np.concatenate([self.msg[1], self.msg[2]]) - taum
        if self.weight > 0 and (ex > 0).any():
            nu = self.weight * max(marginal, power) / (power * float((ex[ex > 0] ** (power - 1)).mean()))
        return nu, self.msg, self.mstate, taum, self.buf, self.mscr
