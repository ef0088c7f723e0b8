"""What rank 0 says at the start and at the end of a run: the banner (the
algorithm, the training mode and the grid) and the one-line summary (best
validation score and its epoch, the test score there, the final loss, the
run log)."""

from __future__ import annotations

from shgcn.core import runlog
from shgcn.core.memory import gib


def mode_text(mode: str, sampler: str | None = None, batch_size: int | None = None) -> str:
    """``full-batch``, or ``mini-batch (node sampler, batch size 40)``: the
    words of the run log's :attr:`~shgcn.core.runlog.Header.mode_label`."""
    if mode != "minibatch":
        return "full-batch"
    details = [f"{sampler} sampler"] if sampler else []
    details += [f"batch size {batch_size:,}"] if batch_size else []
    return "mini-batch" + (f" ({', '.join(details)})" if details else "")


def banner(algorithm: str, mode: str, rows: int, cols: int, memory: tuple[str, str], threads: int | None = None) -> str:
    """The start line: ``1d, mini-batch (node sampler, batch size 40) on 2 x 1
    ranks of 4 threads; memory (modelled): ...``; ``mode`` as :func:`mode_text` gives it,
    ``memory`` (a rank's maximum, the total) already formatted, ``threads`` each rank's (``--threads``, or the
    cores' share it defaults to)."""
    each = f" of {threads} thread{'s' if threads != 1 else ''}" if threads else ""
    return (f"{algorithm}, {mode} on {rows} x {cols} ranks{each}; memory (modelled): up to {memory[0]} a rank, "
            f"{memory[1]} in all")


def summary(records: list[runlog.Epoch], *, epochs: int, metric: str = "accuracy", has_val: bool = True,
            has_test: bool = True, log: str | None = None, modelled: tuple[int, ...] = ()) -> str | None:
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
