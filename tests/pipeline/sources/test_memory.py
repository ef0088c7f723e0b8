"""Graphs given in memory (pipeline/sources/memory.py): a scipy matrix or an edge_index, as one chunk."""

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.sources.memory import edges_of, submit_memory


def test_edges_of_a_matrix_and_of_an_edge_index():
    m = sp.csr_matrix((np.ones(2), ([0, 3], [2, 1])), shape=(5, 5))
    src, dst, n = edges_of(m)
    assert (src.tolist(), dst.tolist(), n) == ([0, 3], [2, 1], 5)  # the matrix's size, isolated vertices too
    src, dst, n = edges_of(np.array([[0, 3], [2, 1]], np.int32))
    assert (src.tolist(), dst.tolist(), n, src.dtype) == ([0, 3], [2, 1], 4, np.int64)  # the largest id + 1


@pytest.mark.parametrize("obj, message", [
    (sp.csr_matrix((2, 3)), "the matrix is 2 x 3; an adjacency matrix must be square"),
    (np.zeros((3, 2), np.int64), "expected a scipy.sparse matrix or a (2, E) integer edge_index, got (3, 2)"),
    (np.zeros((2, 2), np.float32), "expected a scipy.sparse matrix or a (2, E) integer edge_index"),
    (np.array([[0, -1], [1, 1]]), "edge_index: negative vertex id"),
    (np.zeros((2, 0), np.int64), "the graph has no vertices"),
])
def test_bad_graphs_are_one_line(obj, message):
    with pytest.raises(UserError) as e:
        edges_of(obj)
    assert message in str(e.value)


def test_submit_memory_is_a_one_chunk_source(client):
    tasks = Tasks(client)
    try:
        raw = submit_memory(tasks, np.array([[0, 1, 2], [1, 2, 0]]))
        assert (raw.name, raw.n, raw.lines, raw.directed) == ("in-memory graph", 3, 3, None)
        (c,) = tasks.gather(raw.chunks)
        assert c.a.tolist() == [0, 1, 2] and c.b.tolist() == [1, 2, 0]
    finally:
        tasks.release()


def test_one_rule_of_direction_for_matrices_and_edge_lists():
    from shgcn.pipeline.sources.memory import in_memory

    m = sp.csr_matrix((np.array([1.0, 1.0, 3.0, 3.0]), ([0, 1, 1, 2], [1, 0, 2, 1])), shape=(4, 4))
    assert in_memory(m, None).directed is False  # symmetric pattern and values
    assert in_memory(np.stack(m.nonzero()), None).directed is False  # the same edges as an edge_index
    skewed = m.copy()
    skewed[1, 2] = 5.0
    g = in_memory(skewed, None)
    assert g.directed and "A[i, j] != A[j, i]" in g.why
    assert in_memory(skewed, None, values=False).directed is False  # a peer's edges: the pattern decides
    assert in_memory(m, True).directed and in_memory(skewed, False).directed is False  # directed= wins
    one_way = in_memory(np.array([[0, 1], [1, 2]]), None)
    assert one_way.directed and one_way.why == "an edge without its reverse"
    dup = sp.coo_matrix((np.ones(3), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))  # (0, 1) twice: A[0, 1] = 2 != A[1, 0]
    assert in_memory(dup, None).directed


def test_submit_memory_keeps_the_decided_direction(client):
    from shgcn.pipeline.sources.memory import in_memory

    tasks = Tasks(client)
    try:
        raw = submit_memory(tasks, in_memory(np.array([[0, 1], [1, 0]]), None))
        assert (raw.directed, raw.direction, raw.n) == (False, "every edge with its reverse", 2)
    finally:
        tasks.release()
