"""Small hand-built graphs with known answers."""

import numpy as np
import scipy.sparse as sp

from shgcn.pipeline.sources.records import RawGraph
from shgcn.pipeline.stages.ingest import to_graph
from shgcn.pipeline.stages.normalize import normalized_adjacency


def graph(n, edges, directed=False):
    src, dst = np.array(edges, dtype=np.int64).T
    return to_graph(RawGraph(src=src, dst=dst, n=n, directed=directed, source="test", lines=len(edges)), directed)


def a_hat(n, edges, directed=False) -> sp.csr_matrix:
    g = graph(n, edges, directed)
    return normalized_adjacency(g.adj, directed)


# Like the paper's Figure 2: 6 vertices in 3 parts, nets 2 and 4 (1-based)
# have connectivity 3; vertex 3 has two neighbours (4, 5) in part 2, so the
# graph model (2 x edge cut = 10) over-counts the true volume (9).
FIG2_EDGES = [(0, 1), (1, 2), (1, 4), (2, 3), (3, 4), (3, 5), (0, 3)]
FIG2_PART = np.array([0, 0, 1, 1, 2, 2], dtype=np.int32)
FIG2_VOLUME = np.array([[0, 2, 1], [2, 0, 1], [1, 2, 0]])


def random_a_hat(n, avg_degree, seed, directed=False) -> sp.csr_matrix:
    """Â of a seeded random graph of about ``n * avg_degree / 2`` edges."""
    rng = np.random.default_rng(seed)
    m = max(1, int(n * avg_degree / 2))
    edges = rng.integers(0, n, size=(m, 2))
    edges = [tuple(e) for e in edges if e[0] != e[1]] or [(0, 1)]
    return a_hat(n, edges, directed=directed)


def send_recv(a, part, parts):
    """(P,) send and receive volume of ``part``."""
    from shgcn.pipeline.metrics.volume import volume_matrix

    v = volume_matrix(a, np.asarray(part), parts)
    return v.sum(1), v.sum(0)
