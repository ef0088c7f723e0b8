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


def train_count(local) -> int:
    """The rank's labelled training rows (its share of the job's training set)."""
    return int(np.count_nonzero(local.data.train))


def no_training_vertex(store: str) -> str:
    """The one line for a job whose ranks hold no labelled training vertex between them."""
    return (f"{store}: no labelled training vertex on any rank (the train mask is empty, or none of its vertices "
            "has a label): nothing to train on")
