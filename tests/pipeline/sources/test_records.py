"""The records passed between stages (pipeline/sources/records.py)."""

import numpy as np
import scipy.sparse as sp

from shgcn.pipeline.sources.records import Graph, NodeSource, ParsedChunk, RawGraph


def test_graph_counts_vertices_and_published_edges():
    adj = sp.csr_matrix((np.ones(4, np.float32), ([0, 1, 1, 2], [1, 0, 2, 1])), shape=(4, 4))
    undirected = Graph(adj, False, np.arange(4), "t")
    assert undirected.n == 4 and undirected.edges == 2  # each pair stored both ways, counted once
    assert Graph(adj, True, np.arange(4), "t").edges == 4
    assert undirected.features is None and undirected.stats == {} and undirected.notes == []


def test_defaults_of_the_records():
    c = ParsedChunk(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert (c.n_lines, c.n_comments, c.error) == (0, 0, None)
    s = NodeSource()
    assert (s.features, s.labels, s.masks, s.classes, s.label_kind) == (None, None, None, None, "single")
    r = RawGraph(np.array([1]), np.array([2]), None, None, "f", 1)
    assert r.node_ids is None and r.notes == [] and r.notes is not RawGraph(r.src, r.dst, None, None, "g", 1).notes
