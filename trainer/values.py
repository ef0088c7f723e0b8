"""The values the trainer indexes with, checked on every rank whatever ``--no-verify`` says: the block's checksum
(skipped with it) proves the bytes are the build's, these checks that no byte sends an index out of range (a
label against the store's classes, a vertex id against its rows), and that there is something to train on."""

from __future__ import annotations

import numpy as np

from .config import TrainError


def check_block(local) -> None:
    """Raise :class:`TrainError` (one line naming the rank's block) for a label outside the store's classes (a
    single-label store's -1 is unlabelled; a multi-label store's rows are one flag per class) or a vertex id
    outside its rows. ``local``: the rank's :class:`~.context.Local`."""
    attrs, data = local.s.attrs, local.data
    classes, n = int(attrs["classes"]), int(attrs["n"])
    where = f"{local.cfg.store}: rank {local.block.rank}'s block"
    corrupt = "a corrupt block" + ("" if local.cfg.verify else "; without --no-verify its checksum would be checked")
    labels = np.asarray(data.labels)
    if labels.ndim == 1:
        bad = np.flatnonzero((labels < -1) | (labels >= classes))
        if bad.size:
            raise TrainError(f"{where}: row {int(bad[0])} has label {int(labels[bad[0]])}, outside 0..{classes - 1} "
                             f"(-1: unlabelled) ({corrupt})")
    elif labels.ndim != 2 or labels.shape[1] != classes:
        raise TrainError(f"{where}: labels of shape {labels.shape} for {classes} classes ({corrupt})")
    gids = np.asarray(data.gids)
    bad = np.flatnonzero((gids < 0) | (gids >= n))
    if bad.size:
        raise TrainError(f"{where}: row {int(bad[0])} has vertex id {int(gids[bad[0]])}, outside 0..{n - 1} "
                         f"({corrupt})")


def model_size(cfg) -> str:
    """The options that size the model, as given: ``--hidden`` and the architecture's own numbers given
    (``--hidden 16, --heads 10000000``), for a message that blames the one the user set."""
    from shgcn.core.archs import ARCHS

    own = [f"{o.flag} {cfg.options[o.dest]}" for o in ARCHS.get_spec(cfg.arch).options
           if o.dest in cfg.options and isinstance(cfg.options[o.dest], int)]
    return ", ".join([f"--hidden {','.join(map(str, cfg.hidden))}", *own])


def check_room(cfg, job, offsets) -> None:
    """Refuse, before the model or any activation is allocated, a job whose every rank needs more than the
    memory limit for the model (weights, gradients, Adam state) and the activations of the fewest rows a rank
    holds (a part's; ``offsets``: the store's part offsets): a lower bound of the algorithm's own check, which
    comes after the model is made (``--hidden 100000000`` on a 200-vertex graph drew 2.8 GB of weights for a
    minute before it). ``cfg``: the :class:`~.config.TrainConfig`; ``job``: its :class:`~shgcn.core.job.Job`."""
    from shgcn.core.memory import Held, gib, machine_memory, model_bytes, rank_bytes

    parts = np.diff(np.asarray(offsets, np.int64))
    rows = int(parts.min()) if parts.size else 0
    if cfg.mode == "minibatch" and cfg.out_of_core:  # a rank holds the activations of its batch's rows only
        rows = min(rows, int(cfg.batch_size_for(int(offsets[-1]))))
    need, limit = model_bytes(job) + int(rank_bytes(Held(rows, 0, 0), job)), cfg.memory_limit or machine_memory()
    if need > limit:
        raise TrainError(f"{model_size(cfg)}: the model's weights, gradients and Adam state "
                         f"and the activations of a rank's {rows:,} rows need at least {gib(need)} on every rank "
                         f"(layers {' -> '.join(map(str, job.dims))}), more than the memory limit of {gib(limit)} "
                         "(--memory-limit; default: the memory available when the run starts)")


def train_count(local) -> int:
    """The rank's labelled training rows (its share of the job's training set)."""
    return int(local.data.train.sum())  # an array, or the out-of-core mask (counted in slices)


def no_training_vertex(store: str) -> str:
    """The one line for a job whose ranks hold no labelled training vertex between them."""
    return (f"{store}: no labelled training vertex on any rank (the train mask is empty, or none of its vertices "
            "has a label): nothing to train on")
