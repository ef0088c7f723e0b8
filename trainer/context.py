"""Everything one rank trains with, built from its block of the store
without any communication (so a rank that fails here cannot hang the others)."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from shgcn import store
from shgcn.core.grid import GridShape, grid_shape
from shgcn.core.sample import SamplerConfig

from . import archs, checkpoint, grid
from .config import TrainConfig, TrainError
from .exchange import STRATEGIES, Exchange
from .graph import Graph
from .minibatch import MiniBatches, PlanAhead
from .model import Adam, Model, as_input
from .plan import CommPlan, comm_plan, full_local, local_matrix
from .targets import SingleLabel, for_store
from .wire import Wire


@dataclass
class RankData:
    """What one rank trains on: its own rows' features, labels and masks.

    Attributes
    ----------
    x : (n_own, D) float32 ndarray, or csr_matrix for sparse features
    labels : (n_own,) int32, -1 where unknown; (n_own, C) bool for multi-label targets
    train, val, test : (n_own,) bool (unlabelled rows excluded)
    gids : (n_own,) int64, original vertex index (dropout keys)
    """

    x: np.ndarray | sp.csr_matrix
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    gids: np.ndarray


@dataclass
class Context:
    """One rank's run: options, store, data, the full-batch plan and graph,
    the model and optimizer, and the mini-batch re-drawer (mini-batch mode).
    ``perm``: new id -> original id (GAT's attention-dropout counters of
    received rows), or None."""

    cfg: TrainConfig
    s: store.Store
    data: RankData
    cp: CommPlan
    exchange: Exchange
    graph: Graph
    model: Model
    opt: Adam
    identity: dict
    start: int
    batches: MiniBatches | None = None
    perm: np.ndarray | None = None
    plans: PlanAhead | None = None  # mini-batch mode
    targets: Any = SingleLabel()  # loss and score by the store's label kind (trainer/targets.py)
    shape: GridShape = GridShape("1d", 1, 1)  # the process grid (--algorithm); rank -> (block row i, grid column j)
    block: store.RankBlock | None = None  # the store's block this rank holds (block row i)
    memory: int = 0  # modelled bytes this rank holds while training (shgcn.core.memory.rank_bytes)
    rank: int = 0  # in the job (COMM_WORLD)
    memory_all: list[int] | None = None  # every rank's, once the grid is connected
    column_rows: int | None = None  # 1.5d: rows this rank receives along its grid column per SpMM

    @property
    def position(self) -> tuple[int, int]:
        """(block row i, grid column j) of this rank."""
        return self.shape.position(self.rank)

    @property
    def primary(self) -> bool:
        """The rank of its process row that contributes the row's gradients, loss and counts (the dense
        work is replicated on the ranks of a 1.5D or 2D row; each row's share must count once)."""
        return self.position[1] == 0

    def col_gids(self, own: np.ndarray, halo_new: np.ndarray) -> np.ndarray:
        """Original ids of local columns: own rows' ``own``, then the received rows (new ids ``halo_new``)."""
        halo = self.perm[halo_new] if self.perm is not None else np.full(halo_new.size, -1, np.int64)
        return np.concatenate([own, halo]).astype(np.int64)

    @property
    def symmetric(self) -> bool:
        return not self.s.attrs["directed"]


def versions() -> dict[str, str]:
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


def setup(cfg: TrainConfig, comm) -> Context:
    """Open this rank's block and build the model's pieces; raises
    :class:`~shgcn.store.errors.UserError` (TrainError, StoreError) on bad input."""
    cfg.check()
    s = store.open_store(cfg.store)
    try:
        shape = grid_shape(cfg.algorithm, comm.size, s.parts, cfg.replication)
    except store.UserError as e:
        raise TrainError(f"{cfg.store}: {e}") from None
    i, _ = shape.position(comm.rank)
    block = s.rank(i, verify=cfg.verify)
    cp = comm_plan(block.plan, i, s.offsets)
    ex = STRATEGIES[cfg.exchange](comm, cp, Wire(cfg.exchange_dtype))  # 1d; the grid's replace it (grid.connect)
    targets = for_store(s.attrs)
    labelled = targets.labelled(block.labels)
    data = RankData(x=as_input(block.features), labels=np.asarray(block.labels),
                    train=np.asarray(block.train_mask) & labelled, val=np.asarray(block.val_mask) & labelled,
                    test=np.asarray(block.test_mask) & labelled, gids=np.asarray(block.node_index))
    model = archs.build(cfg.arch, [int(s.attrs["feature_dim"]), *cfg.hidden, int(s.attrs["classes"])], cfg.seed,
                        cfg.heads, cfg.out_heads)
    opt = Adam(model.params, cfg.lr)
    identity = {"store": s.attrs["checksums"], "dims": model.dims, **cfg.training_options()}
    start = checkpoint.load(cfg, model, opt, identity) if cfg.resume else 0
    batches = _minibatches(cfg, s, block, cp) if cfg.mode == "minibatch" else None
    ctx = Context(cfg, s, data, cp, ex, None, model, opt, identity, start, batches,  # type: ignore[arg-type]
                  perm=s.permutation() if cfg.arch == "gat" else None, targets=targets, shape=shape, block=block,
                  rank=comm.rank)
    if batches is not None:
        ctx.plans = PlanAhead(batches, threaded=cfg.plan_ahead == "thread")
    if shape.algorithm == "1d":
        ctx.graph = Graph(local_matrix(block.plan, cp), ex, ctx.symmetric, ctx.col_gids(data.gids, cp.recv_ids))
    ctx.memory = grid.memory_estimate(ctx)
    return ctx


def _minibatches(cfg: TrainConfig, s: store.Store, block: store.RankBlock, cp: CommPlan) -> MiniBatches:
    n = int(s.attrs["n"])
    size = cfg.batch_size_for(n)
    if size > n:
        raise TrainError(f"--batch-size {size}: more than the {n} vertices of the graph")
    inverse = np.empty(n, np.int64)
    inverse[s.permutation()] = np.arange(n)
    steps = cfg.batches_per_epoch or -(-n // size)  # covers the training vertices once on average
    scfg = SamplerConfig(kind=cfg.sampler, size=size, walk_length=cfg.walk_length, seed=cfg.seed)
    adj = s.graph() if cfg.sampler != "node" else None
    # column j of Â for each own row j: the row of Â^T (Â itself when symmetric), global column ids
    tplan = block.transpose if block.transpose is not None else block.plan
    ids = np.concatenate([np.arange(block.offset, block.offset + block.n_own), np.asarray(tplan.recv_ids)])
    columns = sp.csr_matrix((np.ones(len(tplan.indices), np.int8), ids[np.asarray(tplan.indices)],
                             np.asarray(tplan.indptr)), shape=(block.n_own, n))
    return MiniBatches(full_local(block.plan, cp), cp, inverse, n, scfg, adj, steps, cfg.use_saint,
                       cfg.norm_batches, columns)
