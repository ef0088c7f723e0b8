"""METIS ``.graph`` files: a header ``n m [fmt [ncon]]``, then one 1-based
adjacency line per vertex (``%`` lines are comments; edge weights and vertex
weights are skipped, vertex sizes refused); parsed in parallel
(:mod:`.text`), each chunk's vertex lines then numbered globally."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import located
from . import chunks as chunk_tasks
from .base import Recognizes
from .probe import Probe, check_declared, int_words
from .text import TextReader

log = logging.getLogger(__name__)


def metis_header(pb: Probe, lines: list[bytes], limit: int | None = None) -> Probe:
    """The probe of a METIS file with its header."""
    path = pb.path
    i = 0
    while i < len(lines) and (lines[i].startswith(b"%") or not lines[i].strip()):
        i += 1
    if i == len(lines):
        raise located(path, "no METIS header line")
    head = int_words(lines[i], path, i + 1, "METIS header")
    if len(head) < 2:
        raise located(path, "METIS header needs 'n m'", i + 1)
    n, m = head[0], head[1]
    check_declared(path, n, i + 1, limit, 2 * m)
    fmt = f"{head[2]:03d}" if len(head) > 2 else "000"
    ncon = head[3] if len(head) > 3 else (1 if fmt[1] == "1" else 0)
    if fmt[0] == "1":
        raise located(path, "METIS vertex sizes (fmt 1xx) are not supported", i + 1)
    return Probe(pb.path, pb.fmt, pb.size, pb.gzip, pb.members, i + 1, sum(len(x) for x in lines[: i + 1]), n, 1,
                 False, m, "adjacency", {"max_id": n, "base": 1, "stride": 2 if fmt[2] == "1" else 1,
                                         "skip": ncon if fmt[1] == "1" else 0})


@dataclass(frozen=True)
class Metis(TextReader):
    """The METIS reader: its header (:func:`metis_header`), adjacency lines
    parsed in parallel, each chunk's vertex lines numbered globally."""

    def arrange(self, tasks, pb: Probe, chunks: list, metas: list) -> tuple[list, list]:
        """Chunk-local vertex lines -> vertex numbers; the file's size checks."""
        shifts = np.cumsum([0] + [m.n_lines - m.n_comments for m in metas[:-1]])
        vertex_lines = sum(m.n_lines - m.n_comments for m in metas)
        if vertex_lines < (pb.n or 0):
            raise located(pb.path, f"header declares {pb.n} vertices but the file has {vertex_lines} adjacency lines")
        chunks = [tasks.submit("ingest-shift", chunk_tasks.shift_vertices, c, int(s), index=i)
                  for i, (c, s) in enumerate(zip(chunks, shifts))]
        top = max((m.max_a for m in chunk_tasks.gather_metas(tasks, chunks) if m.edges), default=-1)
        if pb.n is not None and top >= pb.n:
            raise located(pb.path, f"more adjacency lines than the {pb.n} vertices in the header",
                          pb.header_lines + 1 + int(top))
        edges = sum(m.edges for m in metas)
        if pb.entries is not None and edges != 2 * pb.entries:
            log.warning("%s: header declares %d edges, adjacency lists hold %d entries", pb.path, pb.entries, edges)
        return chunks, metas


READER = Metis("metis", Recognizes(suffixes=(".graph", ".metis"), unless=("ind.",)), head=metis_header)
