"""``pipeline export graph SOURCE OUT --format parhip|metis``: the graph a
partitioner sees, for a partitioner that runs elsewhere (dKaMinPar,
ParMETIS, XtraPuLP, KaHIP): the pattern of A + Aᵀ without self loops, with
the vertex weights the build would balance (``--balance``, ``--hidden``).
The source is read and cleaned on the Dask workers as a build does, and
every row block is written by a worker at its offset in the file
(:mod:`..stages.graphfile`); the file appears at OUT only when complete.
Its vertex order is the input's (after relabelling, as ``--partition-file``
expects): the partitioner's output goes back with ``pipeline build SOURCE
--partition-file PARTS``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from ..config import BuildConfig
from ..errors import UserError
from ..runtime.client import Tasks
from ..runtime.monitor import Monitor
from ..stages.graphfile import FORMATS, GraphFile, write_graph_file
from ..stages.ingest import ingest_stage
from ..stages.normalize import normalize_stage


def export_graph(cfg: BuildConfig, client, fmt: str, overwrite: bool = False) -> GraphFile:
    """Write ``cfg.source``'s graph to ``cfg.out`` in ``fmt`` (``cfg``: the
    source's reading options, ``balance`` and ``hidden``)."""
    from shgcn.store.work import vertex_weights

    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: a graph is exported as {' or '.join(FORMATS)}")
    cfg = cfg.resolved()
    cfg.check()
    out = Path(cfg.out)
    if not out.parent.is_dir():
        raise UserError(f"{out.parent}: directory does not exist")
    if out.exists() and not overwrite:
        raise UserError(f"{out}: already exists (use --overwrite to replace it)")
    if out.is_dir():
        raise UserError(f"{out}: is a directory; name the graph file to write")
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    scratch = out.with_name(f".{out.name}.work-{os.getpid()}")  # node data converted by a reader, if any
    tasks = Tasks(client)
    mon = Monitor(client, cfg.heartbeat, cfg.progress)
    try:
        with mon.stage("ingest"):
            ing = ingest_stage(tasks, cfg, mon, work_dir=str(scratch))
        with mon.stage("normalize"):
            nrm = normalize_stage(tasks, ing, mon)
        with mon.stage("write"):
            dims = cfg.dims(ing.node_plan.dim, ing.node_plan.classes)
            weights = tasks.submit("graphfile-weights", vertex_weights, nrm.weights, cfg.balance, dims)
            written = write_graph_file(tasks, ing, weights, str(tmp), fmt)
        os.replace(tmp, out)
    finally:
        tasks.release()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        shutil.rmtree(scratch, ignore_errors=True)
    return GraphFile(str(out), fmt, written.n, written.m)
