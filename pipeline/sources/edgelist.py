"""Edge lists: SNAP / Network Repository text, one ``u v`` pair per line
(optionally gzip; ``#`` and ``%`` comments, tabs or spaces, CRLF, extra
tokens such as ``{}`` ignored), parsed in parallel (:mod:`.text`).

A first line of two integers that states the file's size (vertices, then
edges or twice the edges) is a header, not an edge (``--header auto``): it is
skipped with a warning."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from . import chunks as chunk_tasks
from .base import RawSource, ReadOptions, Recognizes
from .probe import Probe
from .text import TextReader

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EdgeList(TextReader):
    """The edge-list reader: pairs parsed in parallel, then the header line
    checked (``--header``)."""

    def finish(self, tasks, pb: Probe, raw: RawSource, opts: ReadOptions) -> None:
        header_line(tasks, raw, opts.header)


def header_line(tasks, raw: RawSource, header: str) -> None:
    """A first line of two integers that states the file's size (vertices,
    then edges or twice the edges) is a header, not an edge (``auto``)."""
    if header == "no":
        return
    i = next(k for k, m in enumerate(raw.metas) if m.edges)
    first = raw.metas[i].first
    if first is None:
        return
    top = max([raw.metas[i].max_rest] + [m.max_id for k, m in enumerate(raw.metas) if m.edges and k != i])
    lines = raw.lines - 1
    looks = first[1] in (lines, 2 * lines) and first[0] >= top
    if header == "yes" or looks:
        if header == "auto":
            log.warning("%s: the first line %d %d is the file's size (vertices, edges), not an edge: skipped "
                        "(--header no reads it as an edge)", raw.name, *first)
        raw.chunks[i] = tasks.submit("ingest-header", chunk_tasks.drop_first, raw.chunks[i])
        m = raw.metas[i]
        raw.metas[i] = chunk_tasks.ChunkMeta(m.n_lines, m.n_comments, m.edges - 1, None, m.first, m.max_rest, m.max_a,
                                             m.lower, m.upper, m.max_rest)


READER = EdgeList("edgelist", Recognizes(loose=(".txt", ".edges", ".el", ".tsv", ".edgelist", ".csv"), bare=True),
                  empty="no edges found (only comments or blank lines)")
