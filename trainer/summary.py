"""What rank 0 says at the start and at the end of a run: the banner (the
algorithm, the training mode and the grid) and the one-line summary (best
validation score and its epoch, the test score there, the final loss, the
run log)."""

from __future__ import annotations

from typing import Any

import numpy as np

from shgcn.core import runlog
from shgcn.core.algorithms import ALGORITHMS
from shgcn.core.memory import gib


def mode_text(mode: str, sampler: str | None = None, batch_size: int | None = None) -> str:
    """``full-batch``, or ``mini-batch (node sampler, batch size 40)``: the
    words of the run log's :attr:`~shgcn.core.runlog.Header.mode_label`."""
    if mode != "minibatch":
        return "full-batch"
    details = [f"{sampler} sampler"] if sampler else []
    details += [f"batch size {batch_size:,}"] if batch_size else []
    return "mini-batch" + (f" ({', '.join(details)})" if details else "")


def banner(algorithm: str, mode: str, rows: int, cols: int, memory: tuple[str, str], threads: int | None = None, *,
           nodes: list[int] | None = None) -> str:
    """The start line: ``1d, mini-batch (node sampler, batch size 40) on 4 ranks (2 nodes of 2) of 4 threads;
    memory (modelled): ...``; ``mode`` as :func:`mode_text` gives it, a grid of several columns (1.5D, 2D) as
    ``2 x 2 ranks``, ``nodes`` the ranks of each node (``--ranks-per-node``, or the machine's), ``memory`` (a
    rank's maximum, the total) already formatted, ``threads`` each rank's (``--threads``, or the cores' share
    it defaults to)."""
    each = f" of {threads} thread{'s' if threads != 1 else ''}" if threads else ""
    ranks = f"{rows} x {cols}" if cols > 1 else f"{rows}"
    where = f" ({node_text(nodes)})" if nodes else ""
    return (f"{algorithm}, {mode} on {ranks} rank{'s' * (rows * cols != 1)}{where}{each}; memory (modelled): up to "
            f"{memory[0]} a rank, {memory[1]} in all")


def node_text(nodes: list[int]) -> str:
    """``1 node``, ``2 nodes of 2`` or ``3 nodes of 2, 2, 1 ranks``: the ranks of each node."""
    if len(nodes) == 1:
        return "1 node"
    if len(set(nodes)) == 1:
        return f"{len(nodes)} nodes of {nodes[0]}"
    return f"{len(nodes)} nodes of {', '.join(map(str, nodes))} ranks"


NORMS = {"row": "row-normalized (the store's --feature-norm row; plain PyG's are not)", "none": "as given"}


def settings(model: str, feature_norm: str, weight_decay: float, decayed: str, exchange: str) -> str:
    """The second start line: what changes a run's losses without an option on its command line: ``partition
    hp (the store's layout model); features row-normalized (...); weight decay 0.0005 on the first layer's
    weights; exchange p2p``."""
    norm = NORMS.get(feature_norm, feature_norm)
    decay = f"weight decay {weight_decay:g} on {decayed}" if weight_decay else "no weight decay"
    return (f"trains on: partition {model} (the store's layout model, --layout-model at build); features {norm}; "
            f"{decay}; exchange {exchange}")


def decayed_text(decay: list[int], params: int) -> str:
    """Which parameters weight decay applies to, in words (``model.decay`` of ``params`` arrays)."""
    if list(decay) == [0]:
        return "the first layer's weights only (as Kipf & Welling's GCN)"
    return f"{len(decay)} of the {params} parameter arrays (indices {', '.join(map(str, decay))})"


def print_start(ctx: Any, rank: int, quiet: bool) -> None:
    """Rank 0's banner and settings line (:func:`start_lines`, with every rank's modelled memory), unless quiet."""
    if rank == 0 and not quiet and ctx.memory_all:
        print("\n".join(start_lines(ctx, (gib(max(ctx.memory_all)), gib(sum(ctx.memory_all))))), flush=True)


def start_lines(ctx: Any, memory: tuple[str, str]) -> list[str]:
    """The banner and the settings line of a run's context (:class:`~shgcn.trainer.context.Context`)."""
    cfg = ctx.cfg
    mode = mode_text(cfg.mode, cfg.sampler, ctx.batches.sampler.cfg.size if ctx.batches is not None else None)
    node = np.asarray(ctx.peers.node)
    nodes = [int(c) for c in np.unique(node, return_counts=True)[1]] if node.size else None
    exchange = cfg.exchange if not ALGORITHMS.get_spec(cfg.algorithm).own_exchange else \
        f"{ALGORITHMS.get_spec(cfg.algorithm).own_exchange} (the algorithm's own)"
    return [banner(cfg.algorithm, mode, ctx.shape.rows, ctx.shape.cols, memory, cfg.threads, nodes=nodes),
            settings(str(ctx.s.attrs.get("model", "?")), str(ctx.s.attrs.get("feature_norm") or "none"),
                     cfg.weight_decay, decayed_text(ctx.model.decay, len(ctx.model.params)), exchange)]


def predicted_sent(ctx: Any) -> int | None:
    """Bytes every rank together should send per full-batch epoch (one training step): the epoch model's count
    for the run's job on the store's layout partition (:func:`shgcn.core.epoch.rank_traffic`); None in
    mini-batch mode (a batch's bytes depend on its vertices) or for a store without its partitions' costs."""
    if ctx.batches is not None:
        return None
    from shgcn.core import epoch

    cost = next((c for c in ctx.s.partition_costs() if c.model == ctx.s.attrs.get("model")), None)
    return int(np.sum(epoch.rank_traffic(cost, ctx.job)["bytes_sent"])) if cost is not None else None


def end_options(ctx: Any, totals: dict[str, int]) -> dict[str, Any]:
    """:func:`summary`'s keyword arguments for a run's context."""
    cfg = ctx.cfg
    return {"epochs": cfg.epochs, "metric": ctx.targets.metric, "has_val": totals["val"] > 0,
            "has_test": totals["test"] > 0, "log": cfg.log, "modelled": ctx.memory_all,
            "predicted": predicted_sent(ctx)}


def summary(records: list[runlog.Epoch], *, epochs: int, metric: str = "accuracy", has_val: bool = True,
            has_test: bool = True, log: str | None = None, modelled: tuple[int, ...] = (),
            predicted: int | None = None) -> str | None:
    """The end line, from rank 0's epoch records of this run (None when it ran
    no epoch, e.g. resumed at its last).

    Parameters
    ----------
    records : the epochs this invocation trained (a resumed run's from its start)
    epochs : the run's last epoch (``--epochs``), for ``at epoch 143/200``
    metric : the targets' score (accuracy, or micro-F1 for multi-label stores)
    has_val, has_test : whether the store has validation and test vertices (a score over none is no score)
    log : the run log's path (``--log``), named so the user finds the per-epoch numbers
    modelled : every rank's modelled bytes (rank order), shown beside the busiest rank's measured peak
    predicted : the bytes all ranks should send per training epoch (:func:`predicted_sent`), shown beside the
        last epoch's measured ones
    """
    if not records:
        return None
    evaluated = [r for r in records if r.val_acc is not None]
    parts = []
    if evaluated and has_val:
        best = max(evaluated, key=lambda r: r.val_acc or 0.0)  # max keeps the first: the earliest best epoch
        test = f" (test {metric} there {best.test_acc:.4f})" if has_test and best.test_acc is not None else ""
        parts.append(f"best validation {metric} {best.val_acc:.4f} at epoch {best.epoch + 1}/{epochs}{test}")
    elif evaluated and has_test:  # no validation vertices: the last evaluated test score is all there is
        last = evaluated[-1]
        parts.append(f"test {metric} {last.test_acc:.4f} at epoch {last.epoch + 1}/{epochs} (no validation vertices)")
    parts.append(f"final loss {records[-1].loss:.4f}")
    if records[-1].bytes_sent:
        parts.append(sent_part(sum(records[-1].bytes_sent), predicted))
    if records[-1].peak_memory:
        parts.append(memory_part(records[-1].peak_memory, modelled))
    if log:
        parts.append(f"run log: {log}")
    return "summary: " + "; ".join(parts)


MODELLED = "the matrix, features, activations and exchanged rows"  # what shgcn.core.memory.rank_bytes counts


def memory_part(peak: list[int], modelled: tuple[int, ...]) -> str:
    """``peak memory 226.9 MiB at rank 1 (modelled 8.0 MiB for the matrix, ..., 218.9 MiB beyond it: the model
    leaves out the interpreter and its libraries)``: the busiest rank's measured peak against its own modelled
    bytes, when they are known, and what the model covers (:data:`MODELLED`; not the interpreter and the
    libraries, some 200 MiB a rank: :mod:`shgcn.core.memory`), so that a small model beside a large peak reads
    as what it is."""
    rank = max(range(len(peak)), key=lambda r: peak[r])
    text = f"peak memory {gib(peak[rank])} at rank {rank}"
    if len(modelled) == len(peak):
        over = peak[rank] - modelled[rank]
        why = ": the model leaves out the interpreter and its libraries" if over >= 0 else ""
        text += (f" (modelled {gib(modelled[rank])} for {MODELLED}, {gib(abs(over))} "
                 f"{'beyond' if over >= 0 else 'below'} it{why})")
    return text


def sent_part(sent: int, predicted: int | None) -> str:
    """``sent 1.2 MiB per epoch (predicted 1.2 MiB)``: the training bytes of all ranks in the last epoch, against
    the epoch model's count when there is one (``as predicted`` when they are equal to the byte)."""
    text = f"sent {sent:,} bytes per epoch" if sent < 1024 else f"sent {gib(sent)} ({sent:,} bytes) per epoch"
    if predicted is None:
        return text
    return text + (" as predicted" if predicted == sent else f" (predicted {predicted:,})")
