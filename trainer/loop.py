"""The training loop: full-batch and mini-batch epochs, evaluation,
checkpoints and the run log (rank 0), over a :class:`~.context.Context`."""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from shgcn.core import runlog
from shgcn.core.algorithms import ALGORITHMS
from shgcn.core.memory import peak_resident, resident_anon

from . import checkpoint, summary, watchdog
from .backends import Dropped, Noise
from .context import BatchContext, Context, versions
from .minibatch import Batches, BatchView, PlanAhead
from .outofcore import OutOfCoreBatches
from .phases import Phases, kernel_time


class Diverged(RuntimeError):
    """The loss became NaN or infinite. Every rank sees the same (allreduced) loss, so every rank raises it at the
    same step."""


@dataclass
class StepStats:
    """One mini-batch step as seen by one rank."""

    step: int
    vertices: int
    train_vertices: int
    loss: float
    bytes_sent: int
    msgs_sent: int
    wait: float  # s this rank waited on communication in the step
    calls: list[int]  # bytes sent by each exchange of the step
    path_bytes: dict[str, int]  # bytes sent within the node and to other nodes
    path_msgs: dict[str, int]
    phases: dict[str, float] = field(default_factory=dict)  # s per phase of the step (.phases.Phases)
    kernels: dict[str, float] = field(default_factory=dict)  # s per backend kernel in the step
    anon: int = 0  # RssAnon at the step's end, bytes


@dataclass
class EpochResult:
    """Mean loss and training accuracy of an epoch, and its steps (mini-batch)."""

    loss: float
    train_acc: float
    steps: list[StepStats] = field(default_factory=list)
    anon: int = 0  # the largest RssAnon at a step's end (mini-batch), bytes


def train(ctx: Context, comm) -> list[runlog.Epoch]:
    """Train from ``ctx.start`` to ``cfg.epochs``; rank 0 writes the run log
    and returns the epoch records (other ranks return an empty list)."""
    cfg = ctx.cfg
    totals = _global_counts(ctx, comm)
    root = comm.rank == 0
    density = totals["feature_nnz"] / max(1, totals["feature_values"])
    log = _open_log(ctx, comm, totals["train"], density) if root and cfg.log else None
    if ctx.start and root and not cfg.quiet:
        print(f"resumed at epoch {ctx.start} from {checkpoint.path(cfg)}", flush=True)
    records = []
    plans = PlanAhead(ctx.batches, threaded=cfg.plan_thread) if ctx.batches is not None else None
    kernel_time(ctx.backend)  # the setup's calls are no epoch's
    try:
        for epoch in range(ctx.start, cfg.epochs):
            watchdog.tick()
            if cfg.fail_at is not None and cfg.fail_at == (comm.rank, epoch):
                raise RuntimeError(f"injected failure at epoch {epoch}")
            t0 = time.perf_counter()
            if not isinstance(ctx, BatchContext) or ctx.batches is None:
                res = full_batch_epoch(ctx, comm, epoch, totals["train"])
            else:
                res = minibatch_epoch(ctx, plans or PlanAhead(ctx.batches, threaded=False), comm, epoch,
                                      totals["train"])
            if not math.isfinite(res.loss):
                raise Diverged(f"the training loss became {res.loss} at epoch {epoch}; "
                               "lower --lr or check the features")
            train_comm = {**ctx.counters.reset(), "kernel_time": kernel_time(ctx.backend), "peak": peak_resident(),
                          "anon": res.anon}
            epoch_time = time.perf_counter() - t0
            accs = None
            if (epoch + 1) % cfg.eval_every == 0 or epoch == cfg.epochs - 1:
                accs = evaluate(ctx, comm, totals)
                watchdog.tick()
            eval_comm, _ = ctx.counters.reset(), kernel_time(ctx.backend)  # evaluation's kernels are not training's
            per_rank = comm.gather((epoch_time, train_comm, eval_comm["bytes_sent"], res.steps), root=0)
            if cfg.debug_every and (epoch + 1) % cfg.debug_every == 0:
                check_weights_agree(ctx, comm, epoch)
            if cfg.checkpoint and root and ((epoch + 1) % cfg.checkpoint_every == 0 or epoch == cfg.epochs - 1):
                checkpoint.save(cfg, epoch, ctx.model, ctx.opt, ctx.identity)
            if root:
                rec = _records(ctx, epoch, res, accs, per_rank, log)
                records.append(rec)
                _print_progress(cfg, rec)
        end = summary.summary(records, **summary.end_options(ctx, totals)) if root else None
        if root and end and not cfg.quiet:
            print(end, flush=True)
    finally:
        if log is not None:
            log.close()
        if plans is not None:
            plans.close()
    return records


def full_batch_epoch(ctx: Context, comm, epoch: int, train_total: int) -> EpochResult:
    """One optimizer step on all own rows."""
    d = ctx.data
    from mpi4py import MPI

    noise = _noise(ctx, epoch)
    logits, cache = ctx.model.forward(d.x, ctx.graph, noise)
    loss_sum, g, counts = ctx.targets.loss(logits, d.labels, d.train, train_total)
    grads = ctx.model.backward(cache, g, ctx.graph)
    _, l2, _ = _reduce_and_step(ctx, comm, grads, [])
    stats = ctx.backend.host_values([loss_sum, *counts])  # float64: exact counts (float32 is not, past 2^24)
    stats *= ctx.primary  # a 1.5D or 2D row's replicas computed the same: its first rank counts for the row
    comm.Allreduce(MPI.IN_PLACE, stats, op=MPI.SUM)
    total = max(train_total, 1)
    return EpochResult(float(stats[0]) / total + l2, ctx.targets.score(stats[1:]))


def minibatch_epoch(ctx: BatchContext, plans: PlanAhead, comm, epoch: int, train_total: int) -> EpochResult:
    """``mb.steps`` optimizer steps, each on batch (seed, epoch, step), re-drawn by every rank; the exchange runs
    on the batch's plan.

    One collective per step besides the SpMMs' exchanges (one per layer and direction): the weight gradients
    travel with the step's loss and the targets' counts (training vertices, correct...) in one buffer, one
    non-blocking allreduce, while which the next batch's plan (:class:`.minibatch.PlanAhead`) and dropped input
    are made. Gradients are summed unnormalized and divided by the global count after the allreduce."""
    mb: Batches = plans.mb
    steps: list[StepStats] = []
    seen = np.zeros(ctx.targets.width)
    view, x_in = plans.get(epoch, 0), None
    for step in range(mb.steps):
        nxt = (epoch, step + 1) if step + 1 < mb.steps else None
        if nxt is not None:
            plans.ahead(*nxt)
        elif epoch + 1 < ctx.cfg.epochs:
            plans.ahead(epoch + 1, 0)

        def meanwhile(at=nxt):  # the next step's plan and dropped input, while this step's allreduce completes
            if at is None:
                return None
            v = plans.get(*at)
            return v, batch_input(ctx, v, mb.batch_number(*at))

        st, counts, ready = _minibatch_step(ctx, comm, Batch(view, x_in, mb.batch_number(epoch, step), step),
                                            train_total, meanwhile)
        if ready is not None:
            view, x_in = ready
        seen += counts
        steps.append(st)
        watchdog.tick()
    losses = [st.loss for st in steps]
    return EpochResult(float(np.mean(losses)) if losses else 0.0, ctx.targets.score(seen), steps, max(s.anon for s in steps))


def batch_input(ctx: Context, v, key: int) -> Dropped:
    """Batch view ``v``'s first-layer input with its dropout applied (it depends on no weight)."""
    d = ctx.data
    x, _ = ctx.backend.act_dropout(d.x[v.rows], "none", _noise(ctx, key), 0, d.gids[v.rows])
    return Dropped(x)


def _noise(ctx: Context, key: int) -> Noise | None:
    cfg = ctx.cfg
    attn = ctx.model.attn_rate(cfg.dropout)
    if cfg.dropout == 0 and attn == 0:
        return None
    return Noise(cfg.dropout, cfg.seed, key, attn)


@dataclass(frozen=True)
class Batch:
    """One step's batch: its view (plan, rows, matrix), its first-layer input made ahead (or None), the
    number its masks are keyed by, and the step's number in the epoch."""

    view: BatchView
    x_in: Any
    key: int
    step: int


def _minibatch_step(ctx: BatchContext, comm, batch: Batch, train_total: int, meanwhile):
    """One optimizer step on ``batch``: forward and backward with the batch's plan, one
    allreduce of [gradients, loss, the targets' counts] while ``meanwhile()``
    runs, Adam. Returns (StepStats, the summed counts, what meanwhile returned)."""
    model, d, ex = ctx.model, ctx.data, ctx.exchange
    v, x_in, key, step = batch.view, batch.x_in, batch.key, batch.step
    rows = v.rows
    train_b = d.train[rows]
    loss_weight = ctx.batches.loss_weight if ctx.batches is not None else None
    weights = np.asarray(loss_weight[rows]) if loss_weight is not None else None
    before = (ex.counters.bytes_sent, ex.counters.msgs_sent, ex.counters.comm_time, len(ex.counters.calls))
    paths = (dict(ex.counters.paths), dict(ex.counters.path_msgs))
    ph = Phases()
    with ex.using(v.cp):
        graph = ctx.batch_graph(v)
        logits, cache = model.forward(x_in if x_in is not None else d.x[rows], graph, _noise(ctx, key))
        ph.mark("forward")
        loss_sum, g, counts = ctx.targets.loss(logits, d.labels[rows], train_b, 1, weights)  # sums
        ph.mark("loss")
        grads = model.backward(cache, g, graph)
        ph.mark("backward")
    ph.add("exchange_wait", ex.counters.comm_time - before[2])
    sent = (ex.counters.bytes_sent - before[0], ex.counters.msgs_sent - before[1])
    calls = ex.counters.calls[before[3]:]
    w = ctx.targets.width  # counts: [training rows, the score's counts...]

    def total_of(flat: np.ndarray) -> float:  # GraphSAINT normalizes by all training vertices, else the batch's
        return float(max(train_total if weights is not None else int(round(float(flat[-w]))), 1))

    flat, l2, ready = _reduce_and_step(ctx, comm, grads, [loss_sum, *counts], total_of, meanwhile, phases=ph)
    loss_sum, counts = float(flat[-w - 1]), np.round(flat[-w:].astype(np.float64))
    total = total_of(flat)
    wait = ex.counters.comm_time - before[2]
    by_path = ({k: ex.counters.paths[k] - paths[0][k] for k in paths[0]},
               {k: ex.counters.path_msgs[k] - paths[1][k] for k in paths[1]})
    return StepStats(step, v.vertices, int(counts[0]), loss_sum / total + l2, *sent, wait, calls, *by_path,
                     ph.rounded(), kernel_time(ctx.backend), resident_anon()), counts, ready


def evaluate(ctx: Context, comm, totals: dict[str, int]) -> tuple[float, float]:
    """Validation and test accuracy of a full-batch forward pass (no dropout)."""
    from mpi4py import MPI

    d, t = ctx.data, ctx.targets
    if isinstance(ctx.batches, OutOfCoreBatches):  # out of core: on batches, not the whole graph
        counts = ctx.batches.eval_counts(ctx)
    else:
        logits, _ = ctx.model.forward(d.x, ctx.graph, None)
        counts = np.concatenate([t.counts(logits, d.labels, d.val), t.counts(logits, d.labels, d.test)])
    counts *= ctx.primary
    comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.SUM)
    return t.score(counts[:t.width]), t.score(counts[t.width:])


def check_weights_agree(ctx: Context, comm, epoch: int) -> None:
    """Debug check: the parameters are identical on every rank."""
    h = hashlib.sha256()
    for w in ctx.model.params:
        h.update(ctx.backend.to_host(w).tobytes())
    hashes = comm.allgather(h.hexdigest()[:16])
    if len(set(hashes)) != 1:
        raise RuntimeError(f"weights differ between ranks at epoch {epoch}: {hashes}")


def _reduce_and_step(ctx: Context, comm, grads: list[np.ndarray], stats: list[float], total_of=None,
                     meanwhile=None, *, phases: Phases | None = None) -> tuple[np.ndarray, float, object]:
    """The step's one collective: the local gradients and ``stats`` in one float32 buffer, summed by one
    non-blocking allreduce while ``meanwhile()`` runs (the next batch's plan and input); then the optimizer step,
    the gradients divided by ``total_of(buffer)`` when given. Returns (the summed buffer, the L2 term, what
    ``meanwhile`` returned); ``phases`` gets the time of each part."""
    from mpi4py import MPI

    ph = phases if phases is not None else Phases()

    be = ctx.backend
    # the gradients packed where they are, then one copy to the host (one wait for a device, not one a gradient)
    packed = be.to_host(be.concat([g.reshape(-1) for g in grads], 0)) if grads else np.zeros(0, np.float32)
    flat = np.empty(packed.size + len(stats), np.float32)
    pos = packed.size
    flat[:pos] = packed
    flat[pos:] = be.host_values(stats)  # a device's losses and counts, read after its gradients
    if not ctx.primary:  # the same buffer (the same bytes as 1D's allreduce), this row's share counted once
        flat[:] = 0
    ph.mark("pack")
    t0 = time.perf_counter()
    req = comm.Iallreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
    waited = time.perf_counter() - t0
    ready = meanwhile() if meanwhile is not None else None
    ph.mark("next_batch")
    t0 = time.perf_counter()
    req.Wait()
    ctx.counters.comm_time += waited + time.perf_counter() - t0
    ph.mark("allreduce_wait")
    l2 = apply_gradients(ctx, flat, np.float32(total_of(flat)) if total_of is not None else None)
    ph.mark("optimizer")
    return flat, l2, ready


def apply_gradients(ctx: Context, flat: np.ndarray, scale: np.float32 | None = None) -> float:
    """The optimizer step of full-batch and mini-batch training alike: the parameters' gradients from the
    allreduced ``flat`` buffer (divided by ``scale`` when given), L2 on the model's ``decay`` parameters (the first
    layer's weights, Kipf & Welling), Adam. Returns the L2 term of the loss, taken before the step."""
    cfg, model, be = ctx.cfg, ctx.model, ctx.backend
    grads, pos = [], 0
    sizes = [math.prod(w.shape) for w in model.params]  # not w.size: a torch tensor spells it differently
    summed = flat[:sum(sizes)]
    summed = be.from_host(summed / scale if scale is not None else summed)  # one copy to a device
    for w, size in zip(model.params, sizes):
        grads.append(summed[pos:pos + size].reshape(tuple(w.shape)))
        pos += size
    l2 = 0.0
    for i in model.decay:
        w = model.params[i]
        l2 += cfg.weight_decay / 2 * float((be.to_host(w).astype(np.float64) ** 2).sum())
        grads[i] = grads[i] + np.float32(cfg.weight_decay) * w
    ctx.opt.step(grads)
    return l2


def _global_counts(ctx: Context, comm) -> dict[str, int]:
    from mpi4py import MPI

    d = ctx.data
    x = d.x
    nnz = x.nnz if hasattr(x, "nnz") else np.count_nonzero(ctx.backend.to_host(x))
    local = np.array([d.train.sum(), d.val.sum(), d.test.sum(), nnz, np.prod(x.shape)], np.int64) * ctx.primary
    total = np.zeros_like(local)
    comm.Allreduce(local, total, op=MPI.SUM)
    return dict(zip(("train", "val", "test", "feature_nnz", "feature_values"), total.tolist()))


def _open_log(ctx: Context, comm, train_count: int, input_density: float) -> runlog.RunLogWriter:
    cfg, s = ctx.cfg, ctx.s
    mb = ctx.batches
    header = runlog.Header(
        store=str(cfg.store), dataset=s.attrs["dataset"], parts=comm.size, exchange=cfg.exchange, mode=cfg.mode,
        model=s.attrs["model"], dims=ctx.model.dims, w_first=[ctx.model.w_first(k) for k in range(len(ctx.model.heads))],
        arch=cfg.arch, heads=ctx.model.heads, exchange_dtype=cfg.exchange_dtype,
        config={k: v for k, v in asdict(cfg).items() if k not in ("fail_at", "given")}, train_count=train_count,
        start_epoch=ctx.start, versions=versions(), sampler=cfg.sampler if mb is not None else None,
        batch_size=mb.sampler.cfg.size if mb is not None else None, metric=ctx.targets.metric,
        algorithm=cfg.algorithm, replication=cfg.replication, grid=[ctx.shape.rows, ctx.shape.cols],
        combine=ctx.job.combine if ctx.shape.cols > 1 else None, memory=list(ctx.memory_all),
        ranks_per_node=cfg.ranks_per_node or None,
        nodes=ctx.peers.node.tolist(), input_density=round(input_density, 6),
        threads=cfg.threads, threading_layer=getattr(ctx.backend, "threading_layer", None))
    return runlog.RunLogWriter(cfg.log or "", header, resume_from=ctx.start if cfg.resume else None)


def _records(ctx: Context, epoch: int, res: EpochResult, accs, per_rank, log) -> runlog.Epoch:
    """Rank 0: the epoch's run-log records from every rank's numbers."""
    rec = runlog.Epoch(
        epoch=epoch, loss=float(res.loss), train_acc=float(res.train_acc),
        epoch_time=max(t for t, _, _, _ in per_rank),
        comm_time=[c["comm_time"] for _, c, _, _ in per_rank],
        compute_time=[t - c["comm_time"] for t, c, _, _ in per_rank],
        bytes_sent=[c["bytes_sent"] for _, c, _, _ in per_rank],
        msgs_sent=[c["msgs_sent"] for _, c, _, _ in per_rank],
        bytes_recv=[c["bytes_recv"] for _, c, _, _ in per_rank],
        eval_bytes_sent=[b for _, _, b, _ in per_rank],
        exchange_bytes=[c["calls"] for _, c, _, _ in per_rank] if ctx.batches is None else None,
        bytes_split=[c["split"] for _, c, _, _ in per_rank] if any(c["split"] for _, c, _, _ in per_rank) else None,
        kernel_time=[c["kernel_time"] for _, c, _, _ in per_rank] if ctx.batches is None else None,
        peak_memory=[c["peak"] for _, c, _, _ in per_rank],
        anon_memory=[c["anon"] for _, c, _, _ in per_rank] if ctx.batches is not None else None,
        **_paths(ctx, [c for _, c, _, _ in per_rank]))
    if accs is not None:
        rec.val_acc, rec.test_acc = accs
    if ctx.batches is not None:
        steps = [s for _, _, _, s in per_rank]
        rec.steps = ctx.batches.steps
        rec.step_bytes_mean = [float(np.mean([x.bytes_sent for x in ss])) if ss else 0.0 for ss in steps]
        if log is not None:
            for i, st in enumerate(steps[0]):
                log.write(runlog.Step(epoch=epoch, step=st.step, batch=ctx.batches.batch_number(epoch, st.step),
                                      vertices=st.vertices, train_vertices=st.train_vertices, loss=st.loss,
                                      bytes_sent=[ss[i].bytes_sent for ss in steps],
                                      msgs_sent=[ss[i].msgs_sent for ss in steps],
                                      wait_time=[ss[i].wait for ss in steps],
                                      exchange_bytes=[ss[i].calls for ss in steps],
                                      path_bytes=[ss[i].path_bytes for ss in steps],
                                      path_msgs=[ss[i].path_msgs for ss in steps],
                                      phase_time=[ss[i].phases for ss in steps],
                                      kernel_time=[ss[i].kernels for ss in steps]))
    if log is not None:
        log.write(rec)
    return rec


def _paths(ctx: Context, counts: list[dict]) -> dict:
    """The epoch record's bytes by path (within a node, to another node), per rank, per exchange and per
    node (1D: the exchange counts every message by its destination's node)."""
    if ALGORITHMS.get_spec(ctx.job.algorithm).kinds:  # a grid's bytes go by kind instead
        return {}
    node = ctx.peers.node
    inter = np.bincount(node, weights=[c["paths"]["inter"] for c in counts], minlength=int(node.max()) + 1)
    return {"path_bytes": [c["paths"] for c in counts], "path_msgs": [c["path_msgs"] for c in counts],
            "exchange_paths": [c["call_paths"] for c in counts] if ctx.batches is None else None,
            "node_inter_bytes": inter.astype(np.int64).tolist()}


def _print_progress(cfg, rec: runlog.Epoch) -> None:
    if cfg.quiet or rec.val_acc is None or not ((rec.epoch + 1) % 10 == 0 or rec.epoch == cfg.epochs - 1):
        return
    print(f"epoch {rec.epoch + 1:4d}/{cfg.epochs}  loss {rec.loss:.4f}  train {rec.train_acc:.3f}  "
          f"val {rec.val_acc:.3f}  test {rec.test_acc:.3f}  {rec.epoch_time * 1000:.1f} ms/epoch", flush=True)
