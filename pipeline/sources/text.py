"""Text graph files parsed in parallel on the workers: what the edge-list,
Matrix Market and METIS readers (:mod:`.edgelist`, :mod:`.mtx`,
:mod:`.metis`) share, and what the OGB reader's ``edge.csv.gz`` uses.

Reading is two steps, both as tasks: a small ``ingest-probe`` task looks at
the file (existence, size, compression; the format's header and declared
size), then the text is parsed in parallel (:mod:`.parsing`). The client
only ever sees the probe and a few numbers per chunk
(:class:`~.chunks.ChunkMeta`), never the edges.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import located
from . import budget, parsing
from . import chunks as chunk_tasks
from .base import RawSource, ReadOptions, Recognizes
from .probe import Probe, check_file, gzip_named, head_lines, probe

# a format's header reader: (the file's probe, its first lines, the memory budget) -> the probe with the header
Head = Callable[[Probe, list[bytes], int | None], Probe]


def probe_text(path: str, fmt: str, head: Head | None, limit: int | None = None) -> Probe:
    """``ingest-probe`` task: :func:`.probe.probe`, then the format's header (``head``), if it has one."""
    pb = probe(path, fmt, limit)
    return pb if head is None else head(pb, head_lines(path, pb.gzip), limit)


@dataclass(frozen=True)
class TextReader:
    """A reader of a text format (:class:`~.base.Reader`): the probe, the
    parallel parse, the first error named by file and line; a format adds
    its header (``head``), its arrangement of the parsed chunks
    (:meth:`arrange`) and its checks once every chunk is known
    (:meth:`finish`)."""

    name: str
    recognizes: Recognizes
    head: Head | None = None
    empty: str = "no entries found"  # the message for a file without any entry
    names_files: bool = False

    def precheck(self, path: str, split_scheme: str | None = None) -> None:
        """The file, its compression, and the header of a format that has one (the probe without its scan of a
        BGZF file's members, which only splits the parse)."""
        size = check_file(path, self.name)
        gz = gzip_named(path)
        if self.head is not None:
            self.head(Probe(path, self.name, size, gz), head_lines(path, gz), None)

    def submit(self, tasks, path: str, opts: ReadOptions) -> RawSource:
        pb: Probe = tasks.submit("ingest-probe", probe_text, path, self.name, self.head, opts.limit).result()
        chunks = submit_parse(tasks, pb, opts)
        metas = metas_within(tasks, pb, chunks, opts.limit)
        raise_first_error(pb, metas)
        chunks, metas = self.arrange(tasks, pb, chunks, metas)
        raw = RawSource(path, chunks, metas, pb.n, pb.base, pb.directed)
        if sum(m.edges for m in metas) == 0:
            raise located(path, self.empty)
        self.finish(tasks, pb, raw, opts)
        return raw

    def arrange(self, tasks, pb: Probe, chunks: list, metas: list) -> tuple[list, list]:
        """The parsed chunks as the source holds them (as parsed)."""
        return chunks, metas

    def finish(self, tasks, pb: Probe, raw: RawSource, opts: ReadOptions) -> None:
        """Checks and fixes once every chunk's numbers are known (none)."""


def submit_parse(tasks, pb: Probe, opts: ReadOptions) -> list:
    """The parse tasks of a probed file: byte ranges of a plain file, groups
    of members of a BGZF file, or one worker streaming any other gzip."""
    kind, kw = pb.kind, pb.kwargs
    if not pb.gzip:
        return [tasks.submit("ingest-parse", parsing.parse_range, r, kind, opts.max_line, kw, index=i)
                for i, r in enumerate(parsing.byte_ranges(pb.path, pb.header_bytes, pb.size, opts.chunk_bytes))]
    if pb.members is None or pb.header_bytes:
        # one worker streams the file; its blocks become chunks
        blocks = tasks.submit("ingest-gzip", parsing.parse_gzip, pb.path, pb.header_bytes, opts.chunk_bytes,
                              opts.max_line, kind, kw, limit=opts.limit)
        count = tasks.submit("ingest-gzip-count", chunk_tasks.count, blocks).result()
        return [tasks.submit("ingest-block", chunk_tasks.nth, blocks, i, index=i) for i in range(count)]
    starts = list(pb.members) + [pb.size]
    per = max(1, opts.chunk_bytes // max(1, pb.size // max(1, len(pb.members))) // 4)  # ~4x compression
    reach = math.ceil(opts.max_line / 65536) + 1  # members that can hold the rest of a line
    groups = list(range(0, len(pb.members), per))
    last = len(starts) - 1
    return [tasks.submit("ingest-bgzf", parsing.parse_bgzf, pb.path,
                         parsing.Members(starts[max(g - 1, 0)], starts[g], starts[min(g + per, last)],
                                         starts[min(g + per + reach, last)]), opts.max_line, kind, kw, index=i)
            for i, g in enumerate(groups)]


def metas_within(tasks, pb: Probe, chunks: list, limit: int | None) -> list:
    """The chunks' metas, gathered as they complete; once the edges parsed so
    far cannot fit the memory budget, the rest is dropped and the build stops
    with one line (the parsed chunks never pile up beyond the budget).
    ``limit`` None: no budget (the build's plan checked it)."""
    from distributed import as_completed

    futures = [tasks.submit("ingest-meta", chunk_tasks.meta, c, index=i) for i, c in enumerate(chunks)]
    if limit is None:
        return tasks.gather(futures)
    cap = budget.max_edges(limit) or 0
    seen = 0
    for f in as_completed(futures):
        m = f.result()
        seen += m.edges
        if m.error is None and seen > cap:
            for other in futures + chunks:
                other.release()
            raise located(pb.path, budget.edges_over(cap, limit))
    return tasks.gather(futures)


def raise_first_error(pb: Probe, metas: list) -> None:
    """The first chunk error, as one line naming the file and its global line."""
    line0 = pb.header_lines
    for m in metas:
        if m.error is not None:
            if m.error.line < 0:
                raise located(pb.path, m.error.message)
            raise located(pb.path, m.error.message, line=line0 + m.error.line + 1)
        line0 += m.n_lines
