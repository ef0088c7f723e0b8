"""What the text readers share (pipeline/sources/text.py): the probe task with the format's header, the parse
tasks, the memory budget checked as chunks complete, the first error named by file and global line, and the
hooks a format adds."""

from dataclasses import dataclass

import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.sources import budget
from shgcn.pipeline.sources.base import ReadOptions, Recognizes
from shgcn.pipeline.sources.chunks import ChunkMeta
from shgcn.pipeline.sources.probe import Probe
from shgcn.pipeline.sources.text import TextReader, metas_within, probe_text, raise_first_error, submit_parse
from shgcn.pipeline.sources.tokens import ChunkError


def first_line_is_a_comment(pb: Probe, lines: list[bytes], limit=None) -> Probe:
    """A header reader for the tests: the first line is skipped."""
    return Probe(pb.path, pb.fmt, pb.size, pb.gzip, pb.members, 1, len(lines[0]))


@dataclass(frozen=True)
class Flipped(TextReader):
    """A format whose pairs are (target, source), and whose size is the largest id plus one."""

    def arrange(self, tasks, pb, chunks, metas):
        return [tasks.submit("flip", lambda c: type(c)(c.b, c.a, c.n_lines, c.n_comments), c) for c in chunks], metas

    def finish(self, tasks, pb, raw, opts):
        raw.n = max(m.max_id for m in raw.metas if m.edges) + 1


def test_probe_text_reads_the_header_of_its_format(tmp_path):
    p = tmp_path / "g.x"
    p.write_bytes(b"size 3\n0 1\n")
    assert probe_text(str(p), "x", None) == Probe(str(p), "x", 11)
    assert probe_text(str(p), "x", first_line_is_a_comment) == Probe(str(p), "x", 11, header_lines=1, header_bytes=7)


def test_a_text_reader_with_its_hooks(tmp_path, client):
    p = tmp_path / "g.x"
    p.write_bytes(b"size 3\n" + b"".join(f"{i} {i + 1}\n".encode() for i in range(300)))
    reader = Flipped("x", Recognizes(suffixes=(".x",)), head=first_line_is_a_comment, empty="nothing here")
    tasks = Tasks(client)
    try:
        raw = reader.submit(tasks, str(p), ReadOptions(chunk_bytes=256))
        assert len(raw.chunks) > 5 and raw.lines == 300 and raw.n == 301
        chunks = tasks.gather(raw.chunks)
        assert sum((c.a.tolist() for c in chunks), []) == list(range(1, 301))  # the targets first: flipped
        p.write_bytes(b"size 0\n# none\n")
        with pytest.raises(UserError, match="g.x: nothing here$"):
            reader.submit(tasks, str(p), ReadOptions())
    finally:
        tasks.release()


def test_the_budget_stops_the_read_once_the_edges_cannot_fit(tmp_path, client):
    p = tmp_path / "g.x"
    p.write_bytes(b"".join(f"{i} {i + 1}\n".encode() for i in range(100)))
    tasks = Tasks(client)
    try:
        pb = probe_text(str(p), "x", None)
        opts = ReadOptions(chunk_bytes=64, memory_limit=50 * budget.BYTES_PER_EDGE)  # room for 50 edges
        with pytest.raises(UserError, match="g.x: the file holds more than 50 edges"):
            metas_within(tasks, pb, submit_parse(tasks, pb, opts), opts.limit)
        metas = metas_within(tasks, pb, submit_parse(tasks, pb, ReadOptions(chunk_bytes=64)), 10**9)
        assert sum(m.edges for m in metas) == 100
        planned = ReadOptions(chunk_bytes=64, memory_limit=50 * budget.BYTES_PER_EDGE, guard=False)  # the plan checked
        assert sum(m.edges for m in metas_within(tasks, pb, submit_parse(tasks, pb, planned), planned.limit)) == 100
    finally:
        tasks.release()


def test_the_first_error_names_its_global_line():
    pb = Probe("f", "x", 0, header_lines=2)
    ok = ChunkMeta(10, 0, 10, None)
    raise_first_error(pb, [ok, ok])
    with pytest.raises(UserError, match="^f:16: bad token$"):  # 2 header lines, 10 lines, then the chunk's 4th
        raise_first_error(pb, [ok, ChunkMeta(5, 0, 0, ChunkError(3, "bad token")), ChunkMeta(1, 0, 0, ChunkError(0, "x"))])
    with pytest.raises(UserError, match="^f: corrupt$"):  # a whole-file problem has no line
        raise_first_error(pb, [ChunkMeta(0, 0, 0, ChunkError(-1, "corrupt"))])
