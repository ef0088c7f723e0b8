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
import re
import shutil
from pathlib import Path

import numpy as np

from ..config import BuildConfig
from ..errors import UserError
from ..runtime.client import Tasks, check_paths
from ..runtime.monitor import Monitor
from ..stages.graphfile import FORMATS, GraphFile, write_graph_file
from ..stages.ingest import ingest_stage
from ..stages.normalize import normalize_stage
from .assignment import check_out


def is_graph_file(path: Path) -> bool:
    """A file this command writes: a ParHIP file with vertex weights whose
    size its header explains, or a METIS file whose header says ``n m 010``."""
    from ..graphfile import PARHIP_VERTEX_WEIGHTS, parhip_size

    try:
        with open(path, "rb") as f:
            head = f.read(64)
        size = path.stat().st_size
    except OSError:
        return False
    if len(head) >= 24:
        version, n, m = (int(x) for x in np.frombuffer(head[:24], "<u8"))
        if version == PARHIP_VERTEX_WEIGHTS and n < 2**40 and m < 2**44 and size == parhip_size(n, m):
            return True
    return re.match(rb"[0-9]+ [0-9]+ 010\n", head) is not None


def export_graph(cfg: BuildConfig, client, fmt: str, overwrite: bool = False) -> GraphFile:
    """Write ``cfg.source``'s graph to ``cfg.out`` in ``fmt`` (``cfg``: the
    source's reading options, ``balance`` and ``hidden``)."""
    from shgcn.core.work import vertex_weights

    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: a graph is exported as {' or '.join(FORMATS)}")
    cfg = cfg.resolved()
    cfg.check()
    out = Path(cfg.out)
    if out.is_dir():
        raise UserError(f"{out}: is a directory; name the graph file to write")
    check_out(out, overwrite, directory=False, ours=is_graph_file)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    scratch = out.with_name(f".{out.name}.work-{os.getpid()}")  # node data converted by a reader, if any
    tasks = Tasks(client)
    mon = Monitor(client, cfg.heartbeat, cfg.progress)
    try:
        if not mon.embedded:  # the workers write the file: they must see it (and the source) as this machine does
            check_paths(client, [str(cfg.source)] if isinstance(cfg.source, str) and os.path.isfile(cfg.source)
                        else [], str(tmp))
        with mon.stage("ingest"):
            ing = ingest_stage(tasks, cfg, mon, work_dir=str(scratch), trains=False)  # the graph alone
        with mon.stage("normalize"):
            nrm = normalize_stage(tasks, ing, mon)
        with mon.stage("write"):
            dims = cfg.dims(ing.node_plan.dim, ing.node_plan.classes)
            weights = tasks.submit("graphfile-weights", vertex_weights, nrm.weights, cfg.balance, dims)
            written = write_graph_file(tasks, ing, weights, str(tmp), fmt)
        os.replace(tmp, out)
    except OSError as e:  # a worker's write() names no file, or a hidden sibling: the user's file is ``out``
        if e.filename is None or str(e.filename).startswith((str(tmp), str(scratch))):
            raise OSError(e.errno, e.strerror or str(e), str(out)) from None
        raise
    finally:
        tasks.release()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        shutil.rmtree(scratch, ignore_errors=True)
    return GraphFile(str(out), fmt, written.n, written.m)
