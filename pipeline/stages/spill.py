"""A's patterns to disk while a partitioner's child runs.

Once the graph file is written, the partition stage needs nothing of the
graph in the build's process: the child reads the file. The row blocks of
A's pattern (and A^T's) are saved as ``.npy`` files in the partial store's
temporary area and come back memory-mapped: while the child runs, their
pages are on disk (or in the page cache), not in the build's memory; the
stages after it read them where they are (a page read is resident again
until the block is let go). The arrays are the same, byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ..blocks import RowBlock
from ..runtime.client import Tasks
from .ingest import Ingested
from .normalize import Normalized
from .pieces import map_npy, save_npy


def spill_block(b: RowBlock, prefix: str) -> RowBlock:
    """The ``spill`` task: ``b`` (a pattern: no values) saved at
    ``prefix.indptr.npy`` and ``prefix.indices.npy``, returned memory-mapped."""
    arrays = {}
    for name, x in (("indptr", b.indptr), ("indices", b.indices)):
        path = f"{prefix}.{name}.npy"
        arrays[name] = map_npy(path, save_npy(path, [x]))  # not np.load: see pieces.map_npy
    return RowBlock(b.lo, b.hi, b.n, arrays["indptr"], arrays["indices"], None)


def spill_patterns(tasks: Tasks, ing: Ingested, nrm: Normalized, work_dir: str) -> tuple[Ingested, Normalized]:
    """``ing`` and ``nrm`` with their pattern blocks on disk (:func:`spill_block`);
    the blocks in memory are let go once every one is saved."""
    import distributed

    where = os.path.join(work_dir, "patterns")
    os.makedirs(where, exist_ok=True)
    a = tuple(tasks.submit("spill", spill_block, b, os.path.join(where, f"a.{i}")) for i, b in enumerate(ing.a))
    at = tuple(tasks.submit("spill", spill_block, b, os.path.join(where, f"at.{i}")) for i, b in enumerate(ing.at)) \
        if ing.directed else a
    saved = list(a) + (list(at) if ing.directed else [])
    distributed.wait(saved)
    for f in saved:  # a worker's error (a full disk) raised here; the blocks themselves stay on the workers
        if f.status == "error":
            f.result()
    return replace(ing, a=a, at=at), replace(nrm, pattern_blocks=a, t_pattern_blocks=at if ing.directed else ())


def forget_transpose(work_dir: str) -> None:
    """A^T's spilled pattern files unlinked once the layout's tasks hold
    them (memory-mapped since :func:`spill_patterns`): the layout is their
    last reader, and their disk is freed when those tasks let them go, not at
    the commit. A^T's pattern is as large as the store's graph blocks, so the
    disk's peak is not the layout's (:func:`shgcn.pipeline.plan.make_plan`)."""
    _forget(work_dir, "at.")


def forget_pattern(work_dir: str) -> None:
    """A's spilled pattern files unlinked before the write, whose tasks are
    their last readers (memory-mapped, as :func:`forget_transpose`'s): each
    file's disk is freed once its block is cut into the store's graph chunks
    and let go (:func:`shgcn.pipeline.stages.write.write_stage`), so the
    disk's peak is the finished store, not the store and A's pattern beside
    it."""
    _forget(work_dir, "a.")


def _forget(work_dir: str, prefix: str) -> None:
    where = os.path.join(work_dir, "patterns")
    for name in sorted(os.listdir(where)) if os.path.isdir(where) else ():
        if name.startswith(prefix):
            os.remove(os.path.join(where, name))
