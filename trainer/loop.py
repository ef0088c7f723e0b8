"""Distributed GCN training on a store (one rank per part), full-batch or mini-batch."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import store
from pipeline.sample import SamplerConfig

from .exchange import STRATEGIES
from .model import GCN, Adam, as_input, correct_count, masked_cross_entropy
from .minibatch import MiniBatches
from .plan import comm_plan, full_local, local_matrix
from .spmm import DistSpMM

log = logging.getLogger("trainer")


class TrainError(Exception):
    """A problem with the run's input or options; exit code 2."""

    exit_code = 2


@dataclass(frozen=True)
class TrainConfig:
    store: str
    epochs: int = 200
    lr: float = 0.01
    weight_decay: float = 5e-4
    hidden: tuple[int, ...] = (16,)
    dropout: float = 0.5
    exchange: str = "p2p"
    seed: int = 0
    log: str | None = None
    checkpoint: str | None = None
    checkpoint_every: int = 50
    resume: bool = False
    eval_every: int = 1
    verify: bool = True
    debug_every: int = 0
    fail_at: tuple[int, int] | None = None  # (rank, epoch): fault injection for tests
    quiet: bool = False
    mode: str = "full"
    sampler: str = "node"
    batch_size: int = 0
    walk_length: int = 2
    batches_per_epoch: int = 0
    saint: str = "auto"
    norm_batches: int = 50

    def check(self) -> None:
        if self.epochs < 0:
            raise TrainError(f"--epochs {self.epochs}: must be >= 0")
        if not 0 <= self.dropout < 1:
            raise TrainError(f"--dropout {self.dropout}: must be in [0, 1)")
        if self.lr <= 0:
            raise TrainError(f"--lr {self.lr}: must be > 0")
        if any(h < 1 for h in self.hidden):
            raise TrainError(f"--hidden {self.hidden}: widths must be >= 1")
        if self.exchange not in STRATEGIES:
            raise TrainError(f"--exchange {self.exchange!r}: choose from {', '.join(STRATEGIES)}")
        if self.eval_every < 1 or self.checkpoint_every < 1:
            raise TrainError("--eval-every and --checkpoint-every must be >= 1")
        if self.resume and not self.checkpoint:
            raise TrainError("--resume needs --checkpoint DIR")
        if self.mode not in ("full", "minibatch"):
            raise TrainError(f"--mode {self.mode!r}: choose full or minibatch")
        if self.mode == "minibatch":
            if self.sampler not in ("node", "edge", "rw"):
                raise TrainError(f"--sampler {self.sampler!r}: choose node, edge or rw")
            if self.batch_size < 1:
                raise TrainError("--mode minibatch needs --batch-size >= 1")
            if self.saint not in ("auto", "on", "off") or self.batches_per_epoch < 0 or self.norm_batches < 1:
                raise TrainError("--saint is auto, on or off; --batches-per-epoch >= 0; --norm-batches >= 1")

    @property
    def use_saint(self) -> bool:
        """GraphSAINT normalization: on by default for the edge and rw samplers."""
        return self.saint == "on" or (self.saint == "auto" and self.sampler in ("edge", "rw"))


@dataclass
class RankData:
    """What one rank trains on."""

    x: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    gids: np.ndarray  # original vertex index of each own row (dropout keys)
    totals: dict = field(default_factory=dict)  # global counts of each mask


def _versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("shgcn", "numpy", "scipy", "mpi4py", "zarr"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "absent"
    from mpi4py import MPI
    out["mpi"] = MPI.Get_library_version().splitlines()[0].strip()
    return out


def setup(cfg: TrainConfig, comm) -> "Run":
    """Open this rank's block and build the model's pieces; raises
    :class:`TrainError` / :class:`store.StoreError` on bad input."""
    cfg.check()
    s = store.open_store(cfg.store)
    if s.parts != comm.size:
        raise TrainError(f"{cfg.store}: the store has {s.parts} parts but the job has {comm.size} ranks; "
                         f"run with mpirun -n {s.parts}")
    block = s.rank(comm.rank, verify=cfg.verify)
    cp = comm_plan(block.plan, comm.rank, s.offsets)
    ex = STRATEGIES[cfg.exchange](comm, cp)
    spmm = DistSpMM(local_matrix(block.plan, cp), ex, symmetric=not s.attrs["directed"])
    labelled = np.asarray(block.labels) >= 0
    data = RankData(x=as_input(block.features), labels=np.asarray(block.labels),
                    train=np.asarray(block.train_mask) & labelled, val=np.asarray(block.val_mask) & labelled,
                    test=np.asarray(block.test_mask) & labelled, gids=np.asarray(block.node_index))
    classes = int(s.attrs["classes"])
    model = GCN([int(s.attrs["feature_dim"]), *cfg.hidden, classes], cfg.seed)
    opt = Adam(model.ws, cfg.lr)
    identity = {"store": s.attrs["checksums"], "dims": model.dims, "seed": cfg.seed, "exchange": cfg.exchange}
    start = load_checkpoint(cfg, model, opt, identity) if cfg.resume else 0
    batches = None
    if cfg.mode == "minibatch":
        n = int(s.attrs["n"])
        if cfg.batch_size > n:
            raise TrainError(f"--batch-size {cfg.batch_size}: more than the {n} vertices of the graph")
        inverse = np.empty(n, np.int64)
        inverse[s.permutation()] = np.arange(n)
        steps = cfg.batches_per_epoch or -(-n // cfg.batch_size)  # covers the training vertices once on average
        scfg = SamplerConfig(kind=cfg.sampler, size=cfg.batch_size, walk_length=cfg.walk_length, seed=cfg.seed)
        adj = s.graph() if cfg.sampler != "node" else None
        # column j of Â for each own row j: the row of Â^T (Â itself when symmetric), global column ids
        tplan = block.transpose if s.attrs["directed"] else block.plan
        ids = np.concatenate([np.arange(block.offset, block.offset + block.n_own), np.asarray(tplan.recv_ids)])
        columns = sp.csr_matrix((np.ones(len(tplan.indices), np.int8), ids[np.asarray(tplan.indices)],
                                 np.asarray(tplan.indptr)), shape=(block.n_own, n))
        batches = MiniBatches(full_local(block.plan, cp), cp, inverse, n, scfg, adj, steps, cfg.use_saint,
                              cfg.norm_batches, columns)
    return Run(cfg, s, data, spmm, ex, model, opt, identity, start, batches)


@dataclass
class Run:
    """Everything a rank trains with, built by :func:`setup` without any
    communication (so that a rank failing here cannot hang the others)."""

    cfg: TrainConfig
    s: store.Store
    data: RankData
    spmm: DistSpMM
    ex: object
    model: GCN
    opt: Adam
    identity: dict
    start: int
    batches: MiniBatches | None = None


def _ckpt_path(cfg: TrainConfig) -> Path:
    return Path(cfg.checkpoint) / "checkpoint.npz"


def save_checkpoint(cfg: TrainConfig, epoch: int, model: GCN, opt: Adam, identity: dict) -> None:
    path = _ckpt_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    arrays = {f"w{i}": w for i, w in enumerate(model.ws)}
    arrays.update(opt.state())
    np.savez(tmp, epoch=np.array(epoch), identity=np.array(json.dumps(identity, sort_keys=True)), **arrays)
    os.replace(tmp, path)


def load_checkpoint(cfg: TrainConfig, model: GCN, opt: Adam, identity: dict) -> int:
    """Restore weights and Adam state; returns the first epoch to run."""
    path = _ckpt_path(cfg)
    if not path.exists():
        return 0
    try:
        with np.load(path, allow_pickle=False) as z:
            if json.loads(str(z["identity"])) != identity:
                raise TrainError(f"{path}: checkpoint is from a different store or model configuration")
            for i, w in enumerate(model.ws):
                if z[f"w{i}"].shape != w.shape:
                    raise TrainError(f"{path}: weight {i} has shape {z[f'w{i}'].shape}, expected {w.shape}")
                w[...] = z[f"w{i}"]
            opt.load(z)
            return int(z["epoch"]) + 1
    except (OSError, KeyError, ValueError) as e:
        raise TrainError(f"{path}: unreadable checkpoint ({e})") from None


def weights_hash(model: GCN) -> str:
    h = hashlib.sha256()
    for w in model.ws:
        h.update(w.tobytes())
    return h.hexdigest()[:16]


def train(r: Run, comm) -> list[dict]:
    """Train; rank 0 writes the run log and returns the epoch records."""
    from mpi4py import MPI

    cfg, s, data, spmm, ex, model, opt, identity, start = (r.cfg, r.s, r.data, r.spmm, r.ex, r.model, r.opt,
                                                            r.identity, r.start)
    local = np.array([data.train.sum(), data.val.sum(), data.test.sum()], np.int64)
    total = np.zeros_like(local)
    comm.Allreduce(local, total, op=MPI.SUM)
    data.totals = dict(zip(("train", "val", "test"), total.tolist()))
    root = comm.rank == 0
    logf = open(cfg.log, "a" if cfg.resume and start > 0 else "w") if (root and cfg.log) else None
    header = {"type": "header", "store": str(cfg.store), "dataset": s.attrs["dataset"], "parts": comm.size,
              "exchange": cfg.exchange, "mode": cfg.mode, "model": s.attrs["model"], "dims": model.dims,
              "config": {k: v for k, v in asdict(cfg).items() if k not in ("fail_at",)},
              "w_first": [model.w_first(k) for k in range(len(model.ws))],
              "train_count": data.totals["train"], "start_epoch": start, "versions": _versions()}
    if logf:
        logf.write(json.dumps(header) + "\n")
        logf.flush()
    records = []
    for epoch in range(start, cfg.epochs):
        if cfg.fail_at is not None and cfg.fail_at == (comm.rank, epoch):
            raise RuntimeError(f"injected failure at epoch {epoch}")
        t0 = time.perf_counter()
        if r.batches is None:
            loss_sum, correct, l2 = _step(r, comm, spmm, data.x, data.labels, data.train, data.gids,
                                          data.totals["train"], epoch)
            losses, train_acc, step_recs = [loss_sum / max(data.totals["train"], 1) + l2], None, []
            train_acc = correct / max(data.totals["train"], 1)
        else:
            losses, step_recs, right, seen = [], [], 0, 0
            for step in range(r.batches.steps):
                v = r.batches.view(epoch, step)
                ex_b = STRATEGIES[cfg.exchange](comm, v.cp)
                ex_b.counters = ex.counters  # one set of counters for the run
                spmm_b = DistSpMM(v.lm, ex_b, symmetric=not s.attrs["directed"])
                train_b = data.train[v.rows]
                count = np.array([train_b.sum()], np.int64)
                comm.Allreduce(MPI.IN_PLACE, count, op=MPI.SUM)
                before = (ex.counters.bytes_sent, ex.counters.msgs_sent)
                weights = r.batches.loss_weight[v.rows] if r.batches.loss_weight is not None else None
                total = data.totals["train"] if weights is not None else int(count[0])
                x_b = data.x[v.rows]
                loss_sum, correct, l2 = _step(r, comm, spmm_b, x_b, data.labels[v.rows], train_b, data.gids[v.rows],
                                              total, r.batches.batch_number(epoch, step), weights)
                losses.append(loss_sum / max(total, 1) + l2)
                right, seen = right + correct, seen + int(count[0])
                step_recs.append((step, v.vertices, int(count[0]), losses[-1],
                                  ex.counters.bytes_sent - before[0], ex.counters.msgs_sent - before[1]))
            train_acc = right / max(seen, 1)
        train_comm = ex.counters.reset()
        epoch_time = time.perf_counter() - t0
        gathered_steps = comm.gather(step_recs, root=0)

        rec = {"type": "epoch", "epoch": epoch, "loss": float(np.mean(losses)), "train_acc": float(train_acc)}
        if (epoch + 1) % cfg.eval_every == 0 or epoch == cfg.epochs - 1:
            ev, _ = model.forward(data.x, spmm)
            counts = np.array([correct_count(ev, data.labels, data.val), correct_count(ev, data.labels, data.test)],
                              np.int64)
            comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.SUM)
            rec["val_acc"] = float(counts[0] / max(data.totals["val"], 1))
            rec["test_acc"] = float(counts[1] / max(data.totals["test"], 1))
        eval_comm = ex.counters.reset()
        per_rank = comm.gather((epoch_time, train_comm, eval_comm["bytes_sent"]), root=0)
        if cfg.debug_every and (epoch + 1) % cfg.debug_every == 0:
            hashes = comm.allgather(weights_hash(model))
            if len(set(hashes)) != 1:
                raise RuntimeError(f"weights differ between ranks at epoch {epoch}: {hashes}")
        if cfg.checkpoint and ((epoch + 1) % cfg.checkpoint_every == 0 or epoch == cfg.epochs - 1) and root:
            save_checkpoint(cfg, epoch, model, opt, identity)
        if root and r.batches is not None:
            for i, (step, verts, count, loss, _, _) in enumerate(gathered_steps[0]):
                srec = {"type": "step", "epoch": epoch, "step": step, "batch": r.batches.batch_number(epoch, step),
                        "vertices": verts, "train_vertices": count, "loss": loss,
                        "bytes_sent": [g[i][4] for g in gathered_steps], "msgs_sent": [g[i][5] for g in gathered_steps]}
                if logf:
                    logf.write(json.dumps(srec) + "\n")
            rec["steps"] = r.batches.steps
            rec["step_bytes_mean"] = [float(np.mean([x[4] for x in g])) for g in gathered_steps]
        if root:
            rec.update({
                "epoch_time": max(t for t, _, _ in per_rank),
                "comm_time": [c["comm_time"] for _, c, _ in per_rank],
                "compute_time": [t - c["comm_time"] for t, c, _ in per_rank],
                "bytes_sent": [c["bytes_sent"] for _, c, _ in per_rank],
                "msgs_sent": [c["msgs_sent"] for _, c, _ in per_rank],
                "bytes_recv": [c["bytes_recv"] for _, c, _ in per_rank],
                "eval_bytes_sent": [b for _, _, b in per_rank],
            })
            records.append(rec)
            if logf:
                logf.write(json.dumps(rec) + "\n")
                logf.flush()
            if not cfg.quiet and ("val_acc" in rec) and ((epoch + 1) % 10 == 0 or epoch == cfg.epochs - 1):
                print(f"epoch {epoch + 1:4d}/{cfg.epochs}  loss {rec['loss']:.4f}  train {rec['train_acc']:.3f}  "
                      f"val {rec['val_acc']:.3f}  test {rec['test_acc']:.3f}  {rec['epoch_time'] * 1000:.1f} ms/epoch",
                      flush=True)
    if logf:
        logf.close()
    return records


def _step(r: Run, comm, spmm, x, labels, train_mask, gids, total: int, key: int, weights=None
          ) -> tuple[float, int, float]:
    """One optimizer step on the rows given (all own rows, or a batch's):
    forward, loss over ``total`` training rows (global), backward, one
    allreduce of all weight gradients, Adam. Returns the global loss sum,
    correct training predictions and the L2 term."""
    from mpi4py import MPI

    cfg, model, ex = r.cfg, r.model, r.ex
    logits, cache = model.forward(x, spmm, dropout=cfg.dropout, seed=cfg.seed, epoch=key, gids=gids)
    loss_sum, g, correct = masked_cross_entropy(logits, labels, train_mask, total, weights)
    grads = model.backward(cache, g, spmm)
    flat = np.concatenate([gr.ravel() for gr in grads]).astype(np.float32)
    stats = np.array([loss_sum, correct], np.float64)
    t_ar = time.perf_counter()
    comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
    comm.Allreduce(MPI.IN_PLACE, stats, op=MPI.SUM)
    ex.counters.comm_time += time.perf_counter() - t_ar
    grads, pos = [], 0
    for w in model.ws:
        grads.append(flat[pos:pos + w.size].reshape(w.shape))
        pos += w.size
    # L2 on the first layer's weights, as Kipf & Welling (loss term taken before the step)
    l2 = cfg.weight_decay / 2 * float((model.ws[0].astype(np.float64) ** 2).sum())
    grads[0] = grads[0] + np.float32(cfg.weight_decay) * model.ws[0]
    r.opt.step(grads)
    return float(stats[0]), int(stats[1]), l2
