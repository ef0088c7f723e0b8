"""Full-batch distributed GCN training on a store (one rank per part)."""

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

import store

from .exchange import STRATEGIES
from .model import GCN, Adam, as_input, correct_count, masked_cross_entropy
from .plan import comm_plan, local_matrix
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
    return Run(cfg, s, data, spmm, ex, model, opt, identity, start)


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
              "exchange": cfg.exchange, "mode": "full", "model": s.attrs["model"], "dims": model.dims,
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
        logits, cache = model.forward(data.x, spmm, dropout=cfg.dropout, seed=cfg.seed, epoch=epoch, gids=data.gids)
        loss_sum, g, train_correct = masked_cross_entropy(logits, data.labels, data.train, data.totals["train"])
        grads = model.backward(cache, g, spmm)
        flat = np.concatenate([gr.ravel() for gr in grads]).astype(np.float32)
        stats = np.array([loss_sum, train_correct], np.float64)
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
        opt.step(grads)
        train_comm = ex.counters.reset()
        epoch_time = time.perf_counter() - t0

        rec = {"type": "epoch", "epoch": epoch,
               "loss": float(stats[0] / max(data.totals["train"], 1) + l2),
               "train_acc": float(stats[1] / max(data.totals["train"], 1))}
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
