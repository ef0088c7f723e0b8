"""Parsed chunks (pipeline/sources/chunks.py): the numbers the client learns of a chunk, the small tasks that fix
up, relabel and count chunks, and the metas gathered with the first error raised."""

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.sources import chunks
from shgcn.pipeline.sources.chunks import ChunkMeta
from shgcn.pipeline.sources.records import ParsedChunk
from shgcn.pipeline.sources.tokens import ChunkError


def chunk(a, b, lines=None, comments=0, error=None):
    return ParsedChunk(np.array(a, np.int64), np.array(b, np.int64), len(a) if lines is None else lines, comments,
                       error)


def test_meta_of_a_chunk():
    m = chunks.meta(chunk([4, 2, 9], [1, 2, 3], lines=5, comments=2))
    assert m == ChunkMeta(5, 2, 3, None, (4, 1), 9, 9, lower=True, upper=False, max_rest=9)  # every a >= b
    assert chunks.meta(chunk([3, 2], [1, 2])).lower and not chunks.meta(chunk([3, 2], [1, 2])).upper
    err = ChunkError(1, "bad")
    assert chunks.meta(chunk([], [], lines=2, error=err)) == ChunkMeta(2, 0, 0, err)


def test_fix_ups_relabel_and_counts():
    c = chunk([5, 7], [7, 9], lines=3)
    first = chunks.drop_first(c)
    assert (first.a.tolist(), first.b.tolist(), first.n_lines, first.n_comments) == ([7], [9], 3, 1)
    assert chunks.shift_vertices(chunk([0, 1], [4, 4]), 10).a.tolist() == [10, 11]
    assert chunks.chunk_ids(c).tolist() == [5, 7, 9]
    assert chunks.union(np.array([1, 5]), np.array([5, 3])).tolist() == [1, 3, 5] and chunks.union().size == 0
    r = chunks.relabel(c, np.array([5, 7, 9]))
    assert r.a.tolist() == [0, 1] and r.b.tolist() == [1, 2] and r.a.dtype == np.int32
    assert chunks.nth([c, first], 1) is first and chunks.count([c, c, c]) == 3


def test_gather_metas_and_the_first_error(client):
    tasks = Tasks(client)
    try:
        good = [tasks.submit("t", chunk, [0], [1]), tasks.submit("t", chunk, [2, 3], [3, 4])]
        assert [m.edges for m in chunks.gather_metas(tasks, good)] == [1, 2]
        bad = good + [tasks.submit("t", chunk, [], [], 1, 0, ChunkError(0, "x.npz[edge_index]: id 9 outside 0..4"))]
        with pytest.raises(UserError, match=r"^x.npz\[edge_index\]: id 9 outside 0..4$"):
            chunks.checked_metas(tasks, bad)
    finally:
        tasks.release()
