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

Exact bookkeeping (:mod:`..pins`): the pins of every net in every part, and
the per-part send and receive volumes, the total and the loads, updated on
every move; the gain of a candidate move is computed exactly from them.

Search. Passes over the boundary vertices in a seeded random order (so the
result is deterministic for a seed). For a vertex, the candidate targets are
the parts that already hold pins of its nets (ranked by how many of its nets
they touch) and the currently lightest senders and receivers (for the owners
of high-connectivity nets, whose ownership is worth moving anywhere). Each
target's move is scored by

    score = -ΔΦ - μ Δtotal,   Φ = Σ_k max(0, send_k - τ)^γ + max(0, recv_k - τ)^γ,

τ = the average volume per part (total / P) at the start of the pass, γ =
``power`` (5; against 3, it lowered the larger of max send and max receive
on 5 of 6 cases of soc-slashdot0902 and ca-astroph at p = 16, 64, 512, by up
to 4%). Φ only sees parts above average, and steeply, so the top parts
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

Messages (``--vb-messages on``, the default). At many parts the busiest
rank's number of messages (the parts it sends to, or receives from) sets the
latency of an exchange, and the volume passes do not see it (soc-slashdot0902,
P = 512: 0.96x METIS's before and after them). When the volume passes stop,
more passes run with the same score plus ``ν ΔΨ``, Ψ the same penalty over
each part's sent and received message counts (:mod:`.search`,
:mod:`.messages`: the (P, P) pair counts, kept move by move), on what is
left of the total's budget; a move that gives a part more messages than the
current maximum is refused, so the message passes never raise the maximum
send, receive or messages the volume passes reached. ν makes one message at a
part above the mean count worth ``Search.messages`` (20) rows at a part
above the average volume. Measured (issue 31, hp-vb at P = 512): max messages
0.957x -> 0.891x METIS's on soc-slashdot0902 and 0.862x -> 0.742x on
ca-astroph, max send and receive no higher, total 1-3% higher. Where every
part already sends to every other (p = 16, 64 on these graphs), nothing
changes but a few more volume moves.

Measured limits (benchmarks/RESULTS.md): on power-law graphs the maximum
send volume drops 15-25%, mostly bounded by the total-volume budget
(``max_total_increase``); on meshes (delaunay, road networks) almost no
single move lowers a part's send volume (moving a boundary vertex out of a
part makes its inner neighbours boundary vertices), so the result there is
close to the start. Two floors no search passes (issue 31,
benchmarks/partitioning/vb_targets.py):

- **The total.** On soc-slashdot0902 at p = 16 the result is flat (max /
  mean send 1.004, receive 1.006): the maxima sit at total / P, and only a
  start with a lower total lowers them further. Hence ``--hp-preset
  quality`` under ``hp-vb`` gives lower maxima where it flattens (ca-astroph:
  max send 0.69-0.73x METIS's, max receive 0.78-0.79x).
- **A hub.** The part holding a hub whose row is about as heavy as a part
  receives nearly all of its columns (:mod:`...metrics.bounds`): at P = 512 on
  soc-slashdot0902 no partition within eps 0.01 receives fewer than 2,426
  rows at its busiest part (METIS 2,445; hp-vb 2,438).

The search (:mod:`.search`) is compiled with numba (serial, so results
do not depend on threads).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import UserError, option
from ..base import Assignment, Inputs, Model, Option, PartitionConfig, Partitioner

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ...sources.counts import Counts

log = logging.getLogger(__name__)

MAX_TOTAL_INCREASE = Option(
    "--max-total-increase", 0.3, "the -vb models: the total volume may grow by at most this fraction while the "
    "maximum send and receive volume fall", type=float)
MESSAGES = Option(
    "--vb-messages", "on", "the -vb models: after lowering the maximum send and receive volume, also lower the "
    "maximum number of messages a rank sends or receives (within --max-total-increase)", choices=("on", "off"))
MESSAGE_WEIGHT = 20.0  # Search.messages under --vb-messages on


@dataclass(frozen=True)
class Search:
    """How the refinement searches (see :func:`volume_balance`)."""

    max_passes: int = 40
    min_gain: float = 1e-3
    total_weight: float = 0.1
    power: float = 5.0
    cap: int = 32
    max_targets: int = 8
    swap_tries: int = 8
    time_limit: float | None = None
    messages: float = 0.0


def volume_balance(a: sp.csr_matrix, part: np.ndarray, parts: int, eps: float = 0.03,
                   max_total_increase: float = 0.02, seed: int = 0, *, search: Search = Search(),
                   weights: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Lower the maximum send and receive volume of a row partition of Â.

    Parameters
    ----------
    a : (n, n) csr_matrix
        Â, with a nonzero diagonal; row v's nonzeros are the nets v is a pin of.
    part : (n,) int
        Part of every row, in 0..parts-1.
    parts : int
    eps : float
        Allowed load imbalance (max/mean - 1) of the vertex weights. If
        ``part`` already exceeds it, its own imbalance is the bound.
    max_total_increase : float
        The total volume stays at most ``(1 + max_total_increase)`` times its start.
    seed : int
        Seeds the order in which vertices are visited.
    search : Search
        ``max_passes`` over the boundary vertices at most; stop when a pass
        lowers Φ (module docstring) by less than the fraction ``min_gain``;
        ``total_weight``: cost of one row added to the total, relative to the
        mean excess of the parts above the average (μ); ``cap``: nets with
        more parts do not propose target parts (a hub's net touches nearly
        every part); ``max_targets``: targets evaluated per vertex besides the
        lightest parts; ``swap_tries``: vertices tried as the second half of
        a pair move (0: single moves only); ``time_limit``: stop after the
        pass that crosses this many seconds; ``messages``: rows a message
        is worth (0: not priced; :class:`.messages.MessagePrice`).
    weights : (n,) int, optional
        Vertex weights (the load each row gives its part); default: the
        nonzeros of the row of Â.

    Returns
    -------
    part : (n,) int32
        The refined partition.
    info : dict
        ``start`` and ``end`` metrics (max_send, max_recv, total_volume,
        imbalance), ``moves``, ``passes``, ``seconds``.
    """
    from ..pins import PinCounts, check_matrix

    t0 = time.perf_counter()
    a = check_matrix(a)
    _check_arguments(a, part, parts, eps, max_total_increase)
    pc = PinCounts(a, np.asarray(part), parts, weights)
    start = _metrics(pc)
    info: dict = {"start": start, "moves": 0, "passes": 0}
    if parts > 1 and pc.total > 0:
        info["moves"], info["passes"] = _refine(pc, eps, max_total_increase, seed, search, t0)
    info["end"] = _metrics(pc)
    info["seconds"] = time.perf_counter() - t0
    if info["passes"]:
        log.info("volume balance p=%d: max send %d -> %d, max recv %d -> %d, total %d -> %d, %d moves, %.2f s",
                 parts, start["max_send"], info["end"]["max_send"], start["max_recv"], info["end"]["max_recv"],
                 start["total_volume"], info["end"]["total_volume"], info["moves"], info["seconds"])
    return pc.part.astype(np.int32), info


def _check_arguments(a: sp.csr_matrix, part: np.ndarray, parts: int, eps: float, max_total_increase: float) -> None:
    part = np.asarray(part)
    n = a.shape[0]
    if part.shape != (n,):
        raise UserError(f"partition has shape {part.shape}, expected ({n},)")
    if parts < 1 or (n and (part.min() < 0 or part.max() >= parts)):
        raise UserError(f"partition entries must lie in 0..{parts - 1}")
    if eps <= 0 or max_total_increase < 0:
        raise UserError(f"need eps > 0 and max_total_increase >= 0 (got {eps}, {max_total_increase})")


def _refine(pc, eps: float, max_total_increase: float, seed: int, search: Search, t0: float) -> tuple[int, int]:
    """The passes without messages; then, when ``search.messages`` prices
    them and some part has more than the mean, the passes with them, on
    what is left of the total's budget. Returns (moves, passes)."""
    from dataclasses import replace

    bound = pc.total * (1 + max_total_increase)
    moves, passes = _passes(pc, eps, max_total_increase, seed, replace(search, messages=0.0), t0)
    if search.messages > 0:
        from .messages import messages

        _, sent, received = messages(pc)
        if max(sent.max(), received.max()) > sent.mean():
            more = _passes(pc, eps, max(bound / pc.total - 1, 0.0), seed, search, t0)
            moves, passes = moves + more[0], passes + more[1]
    return moves, passes


def _passes(pc, eps: float, max_total_increase: float, seed: int, search: Search, t0: float) -> tuple[int, int]:
    """Passes until Φ (and Ψ, when messages are priced) stop falling, the
    budget or the time runs out (``t0``: when the refinement started);
    returns (moves, passes)."""
    from .messages import MessagePrice
    from .search import one_pass

    parts, n = pc.parts, pc.part.size
    mean_load = pc.load.sum() / parts
    lmax = max(int(np.floor((1 + eps) * mean_load)), int(pc.load.max()))  # never worse than the start
    tbound = int(np.floor(pc.total * (1 + max_total_increase)))
    total0 = pc.total
    state = np.array([pc.total, pc.send.max(), pc.recv.max()], np.int64)
    rng = np.random.default_rng([seed, 0x5642])
    power = search.power
    msgs = MessagePrice(pc, search.messages)
    phi, psi = _phi(pc, power), msgs.psi(power)
    total_moves = passes = 0
    for _ in range(search.max_passes):
        tau = pc.total / parts
        ex = np.concatenate([pc.send - tau, pc.recv - tau])
        mean_ex = float((ex[ex > 0] ** (power - 1)).mean()) if (ex > 0).any() else 0.0
        mu = search.total_weight * power * mean_ex  # the price of a row added to the total
        lightest = np.unique(np.concatenate([np.argsort(pc.send, kind="stable")[:4],
                                             np.argsort(pc.recv, kind="stable")[:4]])).astype(np.int64)
        order = rng.permutation(n).astype(np.int64)
        moves = int(one_pass(order, (pc.g, pc.pc, pc.vol, state),
                             (lmax, tbound, tau, mu, float(power), total0),
                             (search.cap, search.max_targets, search.swap_tries), lightest,
                             msgs.context(power, power * mean_ex)))
        pc.total = int(state[0])
        total_moves += moves
        passes += 1
        log.debug("pass %d: %d moves, max send %d, max recv %d, total %d, max load %d", passes, moves,
                  pc.send.max(), pc.recv.max(), pc.total, pc.load.max())
        new_phi, new_psi = _phi(pc, power), msgs.psi(power)
        stalled = phi - new_phi < search.min_gain * phi
        if moves == 0 or (stalled and (search.messages <= 0 or psi - new_psi < search.min_gain * psi)):
            break
        phi, psi = new_phi, new_psi
        if search.time_limit is not None and time.perf_counter() - t0 > search.time_limit:
            break
    return total_moves, passes


def _phi(pc, power: float) -> float:
    tau = pc.total / pc.parts
    return float((np.maximum(pc.send - tau, 0) ** power).sum() + (np.maximum(pc.recv - tau, 0) ** power).sum()) + 1e-12


def _metrics(pc) -> dict:
    mean = pc.load.mean()
    return {"max_send": int(pc.send.max()), "max_recv": int(pc.recv.max()), "total_volume": int(pc.total),
            "imbalance": float(pc.load.max() / mean - 1) if mean > 0 else 0.0}


# ------------------------------------------------------------ the models

@dataclass(frozen=True)
class VolumeBalanced(Model):
    """``<base>-vb``: the ``base`` model's partition (the build's, or computed
    here when the build has none) refined by :func:`volume_balance`. The
    model holds its base (given by :func:`refined`): it never looks it up."""

    base: Partitioner | None = None

    @property
    def base_model(self) -> Partitioner:
        if self.base is None:
            raise ValueError(f"{self.name}: no base model (make it with refined(base))")
        return self.base

    def advice(self, counts: Counts, options: Mapping[str, Any]) -> str:
        return self.base_model.advice(counts, options)  # its child computes the base when the build has none

    def in_child(self, inputs: Inputs, cfg: PartitionConfig) -> bool:
        # the refinement releases the GIL (numba, nogil); the base partitioner, when it must run too, may not
        return self.base_model.name not in inputs.starts

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        base = self.base_model
        info: dict = {"base": base.name}
        start = inputs.starts.get(base.name)
        if start is None:
            t0 = time.perf_counter()
            res = base.run(inputs, cfg)
            start = res.part
            info["base_seconds"] = round(time.perf_counter() - t0, 3)
            if res.info:
                info["base_info"] = res.info
        t0 = time.perf_counter()
        search = Search(messages=MESSAGE_WEIGHT if cfg.option(MESSAGES) == "on" else 0.0)
        part, stats = volume_balance(inputs.a, start, cfg.parts, eps=cfg.eps,
                                     max_total_increase=cfg.option(MAX_TOTAL_INCREASE), seed=cfg.seed,
                                     search=search, weights=inputs.vertex_weights())
        info["refine_seconds"] = round(time.perf_counter() - t0, 3)
        info["refine"] = {k: (float(v) if isinstance(v, (int, float, np.number)) else v) for k, v in stats.items()
                          if isinstance(v, (int, float, str, np.number))}
        return Assignment(part, info)

    def check(self, cfg: PartitionConfig) -> None:
        import math

        self.base_model.check(cfg)  # the base's options, when the model computes the base itself
        value = cfg.option(MAX_TOTAL_INCREASE)
        if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value < 10):
            raise UserError(f"{option('--max-total-increase', value)}: a finite fraction >= 0 (e.g. 0.02)")
        super().check(cfg)  # --vb-messages among its choices


def refined(base: Partitioner) -> VolumeBalanced:
    """The ``-vb`` model of ``base`` (a model: its name, options and needs carry over)."""
    what = {"gp": "METIS's", "hp": "hp's", "shp": "shp's"}.get(base.name, f"{base.name}'s")
    return VolumeBalanced(
        f"{base.name}-vb", f"{what} partition with boundary vertices moved to lower the maximum send and receive "
        "volume (total within --max-total-increase, load within eps)",
        options=(MAX_TOTAL_INCREASE, MESSAGES), needs=base.needs, starts_from=(base.name,), base=base,
        runs_in_child=True, resembles=base.name)
