"""One rank's block of a store as torch tensors (:func:`open_block`): its
rows of Â in local column ids, its own rows' features, labels and masks, and
the halo plan (which own rows go to which rank, where received rows land).

Local ids are the store's: ``0..n_own-1`` are the rank's own rows, then the
halo, grouped by sender in rank order (exactly the block's local columns, and
the node order of ``store.to_pyg(s, rank)``). A layer that aggregates over
Â's rows therefore needs ``n_own + R`` input rows (own, then received: what
:class:`~shgcn.trainer.torchdist.halo.Halo` returns) and gives ``n_own``
output rows.

Every tensor of a block (the plan's row indices too) is on one device:
``open_block(..., device="cuda:0")`` or ``block.to(device)``; the helpers
(the halo exchange, the layers, the loss) work on the device of the block and
of their input.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from shgcn import store
from shgcn.core.errors import UserError

from ..plan import comm_plan

EDGE_KINDS = ("norm", "pattern", "attention")


class JobError(UserError):
    """A :class:`~shgcn.core.errors.UserError` that every rank of the job raises alike (a store for other
    ranks, a stale launcher environment, a rank's corrupt block as every rank learns it): rank 0 alone need
    say it (``every_rank``); every rank exits 2."""

    every_rank = True


@dataclass(frozen=True)
class HaloPlan:
    """Which rows one rank sends and receives per exchange.

    Attributes
    ----------
    rank, size : this rank and the number of ranks
    n_own, n_halo : own rows, received rows
    send : list of (q, rows) with rows (k,) int64 tensor of local own row ids sent to rank q, in the order q
        expects them
    recv : list of (q, start, count): rows received from q are halo rows ``start .. start + count - 1``
    """

    rank: int
    size: int
    n_own: int
    n_halo: int
    send: list[tuple[int, Any]]
    recv: list[tuple[int, int, int]]

    @property
    def send_rows(self) -> int:
        return sum(int(r.numel()) for _, r in self.send)

    def to(self, device: Any) -> HaloPlan:
        """The plan with its send rows on ``device`` (a new plan; this one is left as it is)."""
        device = as_device(device)
        return replace(self, send=[(q, rows.to(device)) for q, rows in self.send])


@dataclass(frozen=True)
class TorchBlock:
    """A rank's block as torch tensors (see the module docstring for local ids).

    Attributes
    ----------
    plan : HaloPlan
    rows, cols, values : (nnz,) int64, int64, float32 tensors: Â's nonzeros in local ids (row in ``0..n_own-1``,
        column in ``0..n_own+R-1``), in CSR order; self loops included
    x : (n_own, D) float32 tensor, own rows' features
    y : (n_own,) int64 (-1: unknown) or (n_own, C) float32 (multi-label) tensor
    train_mask, val_mask, test_mask : (n_own,) bool tensors (unlabelled rows excluded)
    node_ids : (n_own + R,) int64 tensor, original vertex index of every local row (own, then halo)
    n, classes, directed, multilabel : the whole graph's vertices and classes, whether Â is not symmetric,
        the label kind
    """

    plan: HaloPlan
    rows: Any
    cols: Any
    values: Any
    x: Any
    y: Any
    train_mask: Any
    val_mask: Any
    test_mask: Any
    node_ids: Any
    n: int
    classes: int
    directed: bool
    multilabel: bool

    @property
    def n_own(self) -> int:
        return self.plan.n_own

    @property
    def device(self) -> Any:
        """The torch.device every tensor of the block is on."""
        return self.x.device

    def to(self, device: Any) -> TorchBlock:
        """The block with every tensor (the plan's too) on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a
        torch.device): a new block, this one is left as it is (a tensor already there is not copied).
        ``cuda`` when torch sees no GPU is a :class:`~shgcn.core.errors.UserError` (one line)."""
        device = as_device(device)
        moved = {name: getattr(self, name).to(device) for name in TENSORS}
        return replace(self, plan=self.plan.to(device), **moved)

    @property
    def n_local(self) -> int:
        """Own rows plus received rows: the input rows of a layer."""
        return self.plan.n_own + self.plan.n_halo

    def edges(self, kind: str = "norm") -> tuple[Any, Any]:
        """PyG's ``(edge_index, edge_weight)`` of the block (``edge_index`` (2, E): local sources, then local
        destinations; a nonzero Â[i, j] is the edge j -> i).

        ``norm``: Â with its values (``GCNConv(normalize=False, add_self_loops=False)``); ``pattern``: the
        graph's edges without self loops, weight None (SAGEConv, GINConv); ``attention``: the pattern with self
        loops (GATConv with ``add_self_loops=False``), weight None."""
        import torch

        if kind not in EDGE_KINDS:
            raise UserError(f"edges(kind={kind!r}): not one of {', '.join(EDGE_KINDS)}")
        index = torch.stack([self.cols, self.rows])
        if kind == "norm":
            return index, self.values
        if kind == "attention":
            return index, None
        keep = self.cols != self.rows
        return index[:, keep], None

    def adjacency(self) -> Any:
        """(n_own, n_own + R) torch sparse CSR tensor of the block's rows of Â."""
        import torch

        ptr = torch.zeros(self.n_own + 1, dtype=torch.int64, device=self.rows.device)
        ptr[1:] = torch.cumsum(torch.bincount(self.rows, minlength=self.n_own), 0)
        with warnings.catch_warnings():  # "sparse CSR support is in beta": the product and its gradient are not
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            return torch.sparse_csr_tensor(ptr, self.cols, self.values, size=(self.n_own, self.n_local),
                                           check_invariants=True)


# the tensor fields of a TorchBlock (besides its plan's send rows)
TENSORS = ("rows", "cols", "values", "x", "y", "train_mask", "val_mask", "test_mask", "node_ids")


def as_device(device: Any) -> Any:
    """``device`` (a str or a torch.device) as a torch.device, checked: a CUDA device needs a GPU that torch
    sees (else a one-line :class:`~shgcn.core.errors.UserError`, exit code 2); ``cuda`` alone is the current
    GPU."""
    import torch

    try:
        dev = device if isinstance(device, torch.device) else torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise UserError(f"device {device!r}: not a torch device (cpu, cuda, cuda:N)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"device {device}: torch sees no CUDA GPU here (torch.cuda.is_available() is False; "
                            f"torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'})")
        count = torch.cuda.device_count()
        if dev.index is not None and not 0 <= dev.index < count:
            raise UserError(f"device {device}: torch sees {count} CUDA GPU{'s' if count > 1 else ''} "
                            f"(cuda:0..cuda:{count - 1})")
    return dev


def _world(rank: int | None, size: int | None) -> tuple[int, int]:
    """This rank and the number of ranks: given, or torch.distributed's, or one process."""
    if rank is not None and size is not None:
        return rank, size
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def open_block(path: str | Path | store.Store, rank: int | None = None, size: int | None = None,
               verify: bool = True, device: Any = "cpu") -> TorchBlock:
    """Rank ``rank``'s block of the store at ``path`` as torch tensors on ``device`` (the store memory-mapped,
    then copied once into tensors, and those once to the device).

    ``rank`` and ``size`` default to torch.distributed's (one process when it is not initialized); a store built
    for a different number of ranks, a missing path, a path that is not a store and (``verify``) a block whose
    checksum fails are refused (:class:`~shgcn.core.errors.UserError`, one line). ``device``: ``"cpu"``,
    ``"cuda"`` (the current GPU), ``"cuda:N"`` or a torch.device; a GPU when torch sees none is refused the same
    way (before the store is read). With torch.distributed's ranks (``rank`` and ``size`` not given) the call
    is collective: when any rank fails, every rank raises the same
    :class:`JobError` (the first failing rank's line), so none waits for it."""
    if rank is not None and size is not None:
        return _open(path, rank, size, verify, device)
    try:
        block, error = _open(path, rank, size, verify, device), None
    except Exception as e:  # noqa: BLE001 - every rank learns of it (agree), a bug keeps its traceback
        block, error = None, e
    agree(error)  # raises on every rank when any rank failed: here every rank holds its block
    return cast(TorchBlock, block)


def agree(error: BaseException | None) -> None:
    """Collective over torch.distributed's default group: when any rank's ``error`` is not None, every rank
    raises one :class:`JobError` with the first failing rank's message (and which ranks failed, when not all
    did); a failing rank whose error is not a UserError (a bug) raises its own, with its traceback. Call it
    on every rank after a step that may fail on some: the others stop at once instead of waiting in the next
    collective until the timeout."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        if error is not None:
            raise error
        return
    import torch

    rank, size = dist.get_rank(), dist.get_world_size()
    text = "" if error is None else (str(error) if isinstance(error, UserError) else
                                     f"rank {rank}: {type(error).__name__}: {error}").strip()
    data = (text.splitlines() or [type(error).__name__])[0].encode()[:4000] if error is not None else b""
    lengths = torch.zeros(size, dtype=torch.int64)
    lengths[rank] = len(data) + 1 if error is not None else 0
    _sum(lengths)
    failed = [r for r in range(size) if lengths[r] > 0]
    if not failed:
        return
    message = torch.zeros(int(lengths[failed[0]]) - 1, dtype=torch.int64)
    if rank == failed[0]:
        message[:] = torch.tensor(list(data), dtype=torch.int64)
    _sum(message)
    if error is not None and not isinstance(error, UserError):
        raise error
    where = "" if len(failed) == size else f" (rank {', '.join(map(str, failed))})"
    raise JobError(bytes(message.tolist()).decode(errors="replace") + where)


def _sum(t: Any) -> None:
    """Sum the CPU tensor ``t`` over the ranks in place: on the CPU, or through the current GPU where the group
    has no backend for the CPU (an NCCL-only group of the user's own)."""
    import torch
    import torch.distributed as dist

    config = str(getattr(dist, "get_backend_config", dist.get_backend)())  # get_backend_config: torch >= 2.2
    if config == "nccl" or ":" in config and "cpu:" not in config:
        on_gpu = t.to(torch.device("cuda", torch.cuda.current_device()))
        dist.all_reduce(on_gpu)
        t.copy_(on_gpu)
    else:
        dist.all_reduce(t)


def _open(path: str | Path | store.Store, rank: int | None, size: int | None, verify: bool,
          device: Any) -> TorchBlock:
    """:func:`open_block` on this rank alone."""
    from shgcn.store.interop import require

    torch = require("torch", "pyg", "shgcn.trainer.torchdist")
    dev = as_device(device)
    s = path if isinstance(path, store.Store) else store.open_store(path)
    rank, size = _world(rank, size)
    if size != s.parts:
        raise UserError(f"{s.path}: the store has {s.parts} parts but the job has {size} rank{'s' * (size != 1)}; "
                        f"run with mpirun -n {s.parts} (or torchrun --nproc-per-node {s.parts}), or build a store "
                        f"with --parts {size}")
    b = s.rank(rank, verify=verify)
    plan = _halo_plan(torch, b.plan, rank, s.offsets)
    indptr = np.asarray(b.plan.indptr, np.int64)
    rows = np.repeat(np.arange(plan.n_own, dtype=np.int64), np.diff(indptr))
    multi = s.attrs.get("label_kind") == "multi"
    labels = np.asarray(b.labels)
    known = labels.any(1) if multi else labels >= 0
    ids = np.concatenate([np.asarray(b.node_index, np.int64),
                          s.permutation()[np.asarray(b.plan.recv_ids, np.int64)]])

    def mask(m: np.ndarray) -> Any:
        return torch.from_numpy(np.asarray(m, bool) & known)

    block = TorchBlock(
        plan=plan, rows=torch.from_numpy(rows), cols=torch.from_numpy(np.asarray(b.plan.indices, np.int64)),
        values=torch.from_numpy(np.array(b.plan.data, np.float32)),
        x=torch.from_numpy(np.array(b.features, np.float32)),
        y=torch.from_numpy(labels.astype(np.float32) if multi else labels.astype(np.int64)),
        train_mask=mask(b.train_mask), val_mask=mask(b.val_mask), test_mask=mask(b.test_mask),
        node_ids=torch.from_numpy(ids), n=int(s.attrs["n"]), classes=int(s.attrs["classes"]),
        directed=bool(s.attrs["directed"]), multilabel=multi)
    return block if dev.type == "cpu" else block.to(dev)


def _halo_plan(torch: Any, plan: store.Plan, rank: int, offsets: np.ndarray) -> HaloPlan:
    """The trainer's plan of the block (:func:`shgcn.trainer.plan.comm_plan`) with torch index tensors."""
    cp = comm_plan(plan, rank, offsets)
    send = [(q, torch.from_numpy(np.ascontiguousarray(rows, np.int64))) for q, rows in cp.send_to]
    recv = [(q, int(cp.recv_start[q]), count) for q, count in cp.recv_from]
    return HaloPlan(rank, cp.size, plan.n_own, cp.recv_rows, send, recv)


def predicted_rows(path: str | Path | store.Store) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the store's quality table predicts per exchange, independently of the blocks' plans: (sent rows
    (P,), received rows (P,), messages sent (P,)) of every rank, from the layout model's volume matrix."""
    s = path if isinstance(path, store.Store) else store.open_store(path)
    q = s.quality()
    models = [str(m) for m in q["model"].values]
    volume = np.asarray(q["volume"].values[models.index(s.attrs["model"])], np.int64)
    np.fill_diagonal(volume, 0)
    return volume.sum(1), volume.sum(0), (volume > 0).sum(1)


def batch_rows(pattern: Any, part: np.ndarray, parts: int, vertices: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What one mini-batch's exchange moves, from the graph alone (not the blocks' plans): (sent rows (P,),
    received rows (P,), messages sent (P,)) of every part. ``pattern`` (n, n) csr_matrix of Â's nonzeros in
    original order (row i reads column j), ``part`` (n,) the part of every vertex, ``vertices`` the batch's
    sorted original ids. Column j of the batch goes from its part to each other part with a batch row that
    reads it (the batch's hypergraph volume, as :mod:`shgcn.pipeline.metrics.batches` counts it)."""
    v = np.asarray(vertices, np.int64)
    sub = pattern[v][:, v].tocoo()
    reader, owner = part[v[sub.row]].astype(np.int64), part[v[sub.col]].astype(np.int64)
    cross = reader != owner
    pairs = np.unique(sub.col[cross].astype(np.int64) * parts + reader[cross])  # (column, reading part), once
    to, frm = pairs % parts, part[v[pairs // parts]].astype(np.int64)
    links = np.unique(frm * parts + to)
    return (np.bincount(frm, minlength=parts), np.bincount(to, minlength=parts),
            np.bincount(links // parts, minlength=parts))


def graph_pattern(path: str | Path | store.Store) -> tuple[Any, np.ndarray]:
    """(Â's pattern: the store's graph plus self loops, (n, n) csr_matrix in original order; the part of
    every vertex under the store's layout model, (n,) int64): what :func:`batch_rows` takes."""
    import scipy.sparse as sp

    s = path if isinstance(path, store.Store) else store.open_store(path)
    g = s.graph()
    pattern = (g + sp.identity(g.shape[0], dtype=np.float32, format="csr")).tocsr()
    return pattern, np.asarray(s.partition(str(s.attrs["model"])), np.int64)


def check_block_of(s: store.Store, block: TorchBlock, rank: int | None) -> None:
    """A ``block=`` of another store (another graph, partition or layout) or of another rank than ``rank`` (when
    given) is refused in one line: its own rows must be the store's rows of its rank, vertex for vertex (else
    the batches' ids, features and labels would not be the block's)."""
    if rank is not None and rank != block.plan.rank:
        raise UserError(f"MiniBatches(rank={rank}, block=...): the block is rank {block.plan.rank}'s")
    rank, size = block.plan.rank, block.plan.size
    if size != s.parts or block.n != int(s.attrs["n"]):
        raise UserError(f"MiniBatches(block=...): the block is one of {size} ranks of a graph of {block.n} "
                        f"vertices, not of {s.path} ({s.parts} parts, {int(s.attrs['n'])} vertices)")
    lo, hi = int(s.offsets[rank]), int(s.offsets[rank + 1])
    own = np.asarray(block.node_ids[:block.n_own].detach().cpu().numpy(), np.int64)
    if hi - lo != own.size or not np.array_equal(np.asarray(s.permutation()[lo:hi], np.int64), own):
        raise UserError(f"MiniBatches(block=...): the block's rows are not rank {rank}'s rows of {s.path} "
                        f"(a block of another store or partition; open it with td.open_block of this store)")
