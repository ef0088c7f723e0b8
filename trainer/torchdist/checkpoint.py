"""Checkpoints of a torchdist run (:func:`save_checkpoint`,
:func:`load_checkpoint`): the model's and the optimizer's state, the epochs
done and the graph's identity.

Every rank holds the same weights and optimizer state (the gradients are
summed before each step), so rank 0 alone writes: to a temporary file beside
the checkpoint, then ``os.replace`` (a reader never sees half a file; a run
killed while writing leaves the previous checkpoint). Every rank reads.

The identity is the graph's, not the partition's (:func:`graph_identity`:
the source, sizes and checksums of the graph and node arrays): with a model
whose layers take the graph (:mod:`.graph`), a run checkpointed at P = 4
resumes at P = 2 or in one process from another store of the same graph; a
store of another graph is refused (one line, exit code 2). Dropout masks
keyed by the epoch (:mod:`.masks`) need no random state: the resumed run
draws what the uninterrupted one draws.

With ``loader=`` (a :class:`~.loader.MiniBatches`) the checkpoint keeps the
loader's position too (the batch after the last one handed out, mid-epoch
as well) and its batches' configuration: the resumed loader hands out the
batches the uninterrupted run went on with (at any P; a loader of other
batches is refused in one line). ``save`` and ``load`` are the short names.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from shgcn import store
from shgcn.core.errors import UserError

FORMAT = "shgcn-torchdist-checkpoint/1"
# the store's attributes that name its graph (a store of the same graph at any P has the same)
GRAPH_ATTRS = ("n", "nnz", "directed", "classes", "feature_dim", "label_kind", "feature_norm", "split")


class CheckpointError(UserError):
    """A checkpoint that cannot be resumed here (missing, not a checkpoint, another graph); exit code 2. Every
    rank reads the checkpoint and raises it alike (``every_rank``: rank 0 alone need say it)."""

    every_rank = True


def graph_identity(path: str | Path | store.Store) -> str:
    """A sha256 hex digest of the store's graph: :data:`GRAPH_ATTRS` and the checksums of its graph and node
    arrays (the partition's own arrays excluded), the same for every store of one graph and split."""
    s = path if isinstance(path, store.Store) else store.open_store(path)
    sums = s.attrs.get("array_checksums", {})
    if isinstance(sums, str):  # an older writer kept the mapping as its repr
        sums = json.loads(sums.replace("'", '"'))
    arrays = {k: v for k, v in sums.items() if k.startswith(("graph/", "nodes/")) and not k.startswith("nodes/part")}
    doc = {"attrs": {k: s.attrs.get(k) for k in GRAPH_ATTRS}, "arrays": arrays}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def _rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def _barrier() -> None:
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def save_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None,
                    epoch: int = 0, *, store_path: str | Path | store.Store | None = None,
                    extra: dict | None = None, loader: Any = None) -> None:
    """Write a checkpoint at ``path`` (rank 0 writes atomically; every rank waits until it is in place).

    Parameters
    ----------
    path : the checkpoint file (its folder must exist)
    model, optimizer : whose ``state_dict()`` are saved (the optimizer may be None)
    epoch : the epochs done: a resumed run starts at this epoch
    store_path : the store trained on; its :func:`graph_identity` is saved and checked on loading
    extra : anything else to keep (JSON-like: numbers, strings, lists, dicts), returned by :func:`load_checkpoint`
    loader : a :class:`~.loader.MiniBatches` whose position (``state_dict()``) is kept
    """
    target = Path(path)
    if target.is_dir() or not target.name:
        raise UserError(f"{target}: is a folder; give the checkpoint's file name (e.g. {target / 'ckpt.pt'})")
    kept = _plain(extra or {}, "extra")  # checked on every rank alike, before anything is written
    if _rank() == 0:
        state = {"format": FORMAT, "epoch": int(epoch), "model": model.state_dict(),
                 "optimizer": optimizer.state_dict() if optimizer is not None else None,
                 "graph": graph_identity(store_path) if store_path is not None else None, "extra": kept,
                 "loader": loader.state_dict() if loader is not None else None}
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # beside it: os.replace stays on one disk
        try:
            with open(tmp, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException as e:  # a full disk, Ctrl-C: the last whole checkpoint stays, nothing beside it
            Path(tmp).unlink(missing_ok=True)
            # the user's disk or folder (rank 0's own one line, exit 2), named; torch's own writer reports a
            # full disk as a RuntimeError ("... file write failed"), not an OSError
            if isinstance(e, OSError) or isinstance(e, RuntimeError) and "write" in str(e).lower():
                why = e.strerror if isinstance(e, OSError) and e.strerror else str(e).strip().splitlines()[0]
                raise UserError(f"{target}: cannot write the checkpoint ({why}); the last one "
                                "written, if any, is kept") from None
            raise
    _barrier()


def _plain(value: Any, where: str) -> Any:
    """``value`` as what :func:`load_checkpoint` reads back (``torch.load(weights_only=True)``): numpy scalars
    as Python numbers, tuples as lists; anything else than numbers, strings, None, tensors, lists and dicts with
    string keys is a one-line :class:`~shgcn.core.errors.UserError` naming where it is (not a file that saves
    and then cannot be loaded)."""
    import numpy as np

    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise UserError(f"save_checkpoint: {where} has a key {bad[0]!r} that is not a string")
        return {k: _plain(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise UserError(f"save_checkpoint: {where} is a {type(value).__name__}; keep numbers, strings, lists, "
                    "dicts and tensors (e.g. float(x), x.tolist())")


def load_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None,
                    *, store_path: str | Path | store.Store | None = None, loader: Any = None) -> dict[str, Any]:
    """Load the checkpoint at ``path`` into ``model`` (and ``optimizer``, and ``loader``'s position), on their
    devices; every rank calls it. Returns {"epoch": the epochs done, "extra": what was saved with it} and, with
    ``loader``, "position": the loader's (epoch, step).

    A missing or unreadable file, (with ``store_path``) a store of another graph than the checkpoint's, (with
    ``loader``) a checkpoint without a loader's position or of other batches, is a :class:`CheckpointError`
    (one line, exit code 2)."""
    target = Path(path)
    if not target.is_file():
        raise CheckpointError(f"{target}: no checkpoint there")
    try:
        state = torch.load(target, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - whatever torch.load raises, the file is not a checkpoint
        raise CheckpointError(f"{target}: not a readable checkpoint ({type(e).__name__})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{target}: not a torchdist checkpoint (format {FORMAT})")
    if store_path is not None and state["graph"] is not None and state["graph"] != graph_identity(store_path):
        raise CheckpointError(f"{target}: saved for another graph than the store {store_path}'s")
    if optimizer is not None and state["optimizer"] is None:
        raise CheckpointError(f"{target}: holds no optimizer state to resume")
    if loader is not None and state.get("loader") is None:
        raise CheckpointError(f"{target}: holds no mini-batch loader's position to resume")
    try:
        model.load_state_dict(state["model"])
        if optimizer is not None:
            optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError) as e:  # another model's or optimizer's state: one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"{target}: does not fit this model or optimizer ({first})") from None
    out = {"epoch": int(state["epoch"]), "extra": state["extra"]}
    if loader is not None:
        try:
            loader.load_state_dict(state["loader"])
        except UserError as e:
            raise CheckpointError(f"{target}: {e}") from None
        out["position"] = loader.position
    return out


save = save_checkpoint
load = load_checkpoint
