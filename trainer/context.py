"""A rank's run, in two steps:

1. :func:`prepare` builds everything the rank trains with from its block of
   the store, without any communication (so a rank that fails here cannot
   hang the others): a :class:`Local`;
2. :func:`shgcn.trainer.algorithms.connect` (collective, once every rank
   prepared) hands it to the job's algorithm
   (:data:`shgcn.trainer.algorithms.ALGORITHMS`), which builds the rank's
   exchange and operators, checks the memory, and returns the finished,
   immutable :class:`Context` (:func:`finish`).
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from shgcn import store
from shgcn.core.algorithms import ALGORITHMS, GridShape
from shgcn.core.costs import Job
from shgcn.core.sample import SAMPLERS, SamplerConfig

from . import archs, checkpoint
from .archs.base import Model, as_input
from .backends import Backend, backend
from .config import TrainConfig, TrainError
from .exchanges import Counters, Exchange, Peers
from .graph import Graph
from .minibatch import BatchSource, BatchView, MiniBatches
from .optim import Adam
from .outofcore import OutOfCoreBatches
from .plan import CommPlan, comm_plan, empty_plan, full_local
from .targets import Targets, for_store
from .values import check_room


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Local:
    """What one rank prepared without communicating.

    Attributes
    ----------
    cfg, job : the options and the job they describe (:class:`shgcn.core.costs.Job`)
    s, block : the store and the block this rank holds (block row i of the grid)
    cp : the block's full-batch plan
    data, targets : its rows' data, and the loss and score by the store's label kind
    model, opt, backend : the architecture's layers, Adam, the compute backend (one, passed explicitly)
    identity, start : what a checkpoint must match, and the first epoch (a resumed run's)
    shape, rank : the process grid and this rank's place in the job (COMM_WORLD)
    batches : the mini-batch re-drawer (mini-batch mode; :class:`~.outofcore.OutOfCoreBatches` out of core), else None
    perm : new id -> original id (the attention masks' keys of received rows), or None
    """

    cfg: TrainConfig
    job: Job
    s: store.Store
    block: store.RankBlock
    cp: CommPlan
    data: RankData
    targets: Targets
    model: Model
    opt: Adam
    backend: Backend
    identity: dict
    start: int
    shape: GridShape
    rank: int
    batches: MiniBatches | OutOfCoreBatches | None = None
    perm: np.ndarray | None = None

    @property
    def position(self) -> tuple[int, int]:
        """(block row i, grid column j) of this rank."""
        return self.shape.position(self.rank)

    @property
    def primary(self) -> bool:
        """The rank of its process row that contributes the row's gradients, loss and counts (the dense
        work is replicated on the ranks of a 1.5D or 2D row; each row's share must count once)."""
        return self.position[1] == 0

    @property
    def symmetric(self) -> bool:
        return not self.s.attrs["directed"]

    def col_gids(self, own: np.ndarray, halo_new: np.ndarray) -> np.ndarray:
        """Original ids of local columns: own rows' ``own``, then the received rows (new ids ``halo_new``)."""
        halo = self.perm[halo_new] if self.perm is not None else np.full(halo_new.size, -1, np.int64)
        return np.concatenate([own, halo]).astype(np.int64)


@dataclass(frozen=True, kw_only=True)
class Context(Local):
    """One rank's finished run: what it prepared, plus what its algorithm connected.

    Attributes
    ----------
    counters : where the rank's bytes are counted (its exchange's, or its grid's products')
    graph : the full-batch operators
    peers : the node of every rank of the job (intra- and inter-node bytes)
    memory, memory_all : this rank's modelled bytes, and every rank's (rank order)
    """

    counters: Counters
    graph: Graph
    peers: Peers
    memory: int
    memory_all: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class BatchContext(Context):
    """A mini-batch run's context (an algorithm that runs mini-batches: 1D): its exchange, whose plan a batch
    restricts (:meth:`~shgcn.trainer.exchanges.Exchange.using`), and the operators of a batch view.

    Attributes
    ----------
    exchange : the rank's exchange (its counters are :attr:`Context.counters`)
    batch_graph : batch view -> its operators
    """

    exchange: Exchange
    batch_graph: Callable[[BatchView], Graph]


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("shgcn", "numpy", "scipy", "mpi4py", "zarr"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "absent"
    import sys

    if "torch" in sys.modules:  # the torch backend loaded it: its version decides the kernels too
        out["torch"] = str(sys.modules["torch"].__version__)
    from mpi4py import MPI
    out["mpi"] = MPI.Get_library_version().splitlines()[0].strip()
    return out


def prepare(cfg: TrainConfig, comm) -> Local:
    """Open this rank's block and build the model's pieces for ``cfg`` (checked: :meth:`TrainConfig.check`, which
    the command line runs once, before the ranks' and the outputs' checks); raises
    :class:`~shgcn.core.errors.UserError` (TrainError, StoreError) on bad input."""
    s = store.open_store(cfg.store)
    job = cfg.job(int(s.attrs["feature_dim"]), int(s.attrs["classes"]))
    check_room(cfg, job, s.offsets)  # the model and a rank's activations, before either is allocated
    try:
        shape = ALGORITHMS.get_spec(cfg.algorithm).shape(comm.size, s.parts, cfg.replication)
    except store.UserError as e:
        raise TrainError(f"{cfg.store}: {e}") from None
    i, _ = shape.position(comm.rank)
    block = s.rank(i, verify=cfg.verify)
    # out of core the exchange's plan is each batch's: the block's full plan (its send lists) is never read
    cp = comm_plan(block.plan, i, s.offsets) if not (cfg.mode == "minibatch" and cfg.out_of_core) else \
        empty_plan(i, s.offsets)
    be = backend(cfg.backend, cfg.device, cfg.threads, **cfg.options)  # its own options (--torch-kernels)
    targets = for_store(s.attrs, be)
    out_of_core = cfg.mode == "minibatch" and cfg.out_of_core
    if out_of_core:  # the block stays in the store: each step gathers its batch's rows
        from .mapped import MappedFeatures, MappedMask, MappedRows

        lab = targets.labelled
        data = RankData(x=MappedFeatures(block.features, be), labels=MappedRows(block.labels),  # type: ignore[arg-type]
                        train=MappedMask(block.train_mask, block.labels, lab),  # type: ignore[arg-type]
                        val=MappedMask(block.val_mask, block.labels, lab),  # type: ignore[arg-type]
                        test=MappedMask(block.test_mask, block.labels, lab),  # type: ignore[arg-type]
                        gids=MappedRows(block.node_index))  # type: ignore[arg-type]
    else:
        labelled = targets.labelled(block.labels)
        data = RankData(x=be.asarray(as_input(block.features)), labels=np.asarray(block.labels),
                        train=np.asarray(block.train_mask) & labelled, val=np.asarray(block.val_mask) & labelled,
                        test=np.asarray(block.test_mask) & labelled, gids=np.asarray(block.node_index))
    model = archs.build(job.spec, list(job.dims), cfg.seed, be, cfg.options)
    opt = Adam(model.params, cfg.lr, be)
    identity = {"store": s.attrs["checksums"], "dims": model.dims, **cfg.training_options()}
    start = checkpoint.load(cfg, model, opt, identity) if cfg.resume else 0
    batches: MiniBatches | OutOfCoreBatches | None = None
    if out_of_core:
        batches = _out_of_core(cfg, s, block, i)
    elif cfg.mode == "minibatch":
        batches = _minibatches(cfg, s, block, cp)
    return Local(cfg, job, s, block, cp, data, targets, model, opt, be, identity, start, shape, comm.rank,
                 batches=batches,
                 perm=(s.permutation_mapped() if out_of_core else s.permutation()) if job.spec.needs_halo_ids else None)


def finish(local: Local, *, exchange: Exchange | None = None,
           batch_graph: Callable[[BatchView], Graph] | None = None, **connected: Any) -> Context:
    """The :class:`Context` of ``local`` with what an algorithm connected (``counters``, ``graph``, ``peers``,
    ``memory``, ``memory_all``); a :class:`BatchContext` in mini-batch mode, which needs ``exchange`` and
    ``batch_graph``."""
    fields = {f: getattr(local, f) for f in Local.__dataclass_fields__}
    if local.batches is None:
        return Context(**fields, **connected)
    if exchange is None or batch_graph is None:
        raise TrainError(f"--algorithm {local.cfg.algorithm} does not run mini-batches")
    return BatchContext(**fields, **connected, exchange=exchange, batch_graph=batch_graph)


def _minibatches(cfg: TrainConfig, s: store.Store, block: store.RankBlock, cp: CommPlan) -> MiniBatches:
    n = int(s.attrs["n"])
    size = cfg.batch_size_for(n)
    if size > n:
        raise TrainError(f"--batch-size {size}: more than the {n} vertices of the graph")
    inverse = np.empty(n, np.int64)
    inverse[s.permutation()] = np.arange(n)
    scfg = SamplerConfig(kind=cfg.sampler, size=size, walk_length=cfg.walk_length, seed=cfg.seed)
    adj = s.graph() if SAMPLERS[cfg.sampler].needs_graph else None
    # column j of Â for each own row j: the row of Â^T (Â itself when symmetric), global column ids
    tplan = block.transpose if block.transpose is not None else block.plan
    ids = np.concatenate([np.arange(block.offset, block.offset + block.n_own), np.asarray(tplan.recv_ids)])
    columns = sp.csr_matrix((np.ones(len(tplan.indices), np.int8), ids[np.asarray(tplan.indices)],
                             np.asarray(tplan.indptr)), shape=(block.n_own, n))
    return MiniBatches(BatchSource(full=full_local(block.plan, cp), cp=cp, inverse=inverse, n=n, sampler=scfg,
                                   adj=adj, columns=columns),
                       steps=cfg.batches_per_epoch or -(-n // size),  # the training vertices once on average
                       saint=cfg.use_saint, norm_batches=cfg.norm_batches)


def _out_of_core(cfg: TrainConfig, s: store.Store, block: store.RankBlock, i: int) -> OutOfCoreBatches:
    """The batches of block row ``i`` read from the memory-mapped store (``--out-of-core``)."""
    from . import outofcore

    n = int(s.attrs["n"])
    size = cfg.batch_size_for(n)
    if size > n:
        raise TrainError(f"--batch-size {size}: more than the {n} vertices of the graph")
    scfg = SamplerConfig(kind=cfg.sampler, size=size, walk_length=cfg.walk_length, seed=cfg.seed)
    return outofcore.batches(s, block, i, scfg, steps=cfg.batches_per_epoch or -(-n // size), saint=cfg.use_saint,
                             norm_batches=cfg.norm_batches, verify=cfg.verify)
