"""The build's graph as a partitioner's file (pipeline/stages/graphfile.py), written by the workers block by
block: the pattern of A + Aᵀ without self loops, with the vertex weights."""

import numpy as np
import pytest
from helpers.graphs import FIG2_EDGES

from shgcn.pipeline.graphfile import read_parhip
from shgcn.pipeline.stages.graphfile import write_graph_file


def neighbours(n, edges):
    out = [set() for _ in range(n)]
    for a, b in edges:
        out[a].add(b)
        out[b].add(a)
    return [sorted(s) for s in out]


@pytest.mark.parametrize("which", ["fig2", "fig2_directed"])
def test_parhip_holds_a_plus_a_transposed_and_the_weights(which, request, tmp_path):
    s = request.getfixturevalue(which)
    assert len(s.ing.a) > 1  # written by several blocks
    weights = s.tasks.submit("w", np.arange, 10, 16)
    gf = write_graph_file(s.tasks, s.ing, weights, str(tmp_path / "g.parhip"))
    assert (gf.fmt, gf.n, gf.m, gf.path) == ("parhip", 6, 2 * len(FIG2_EDGES), str(tmp_path / "g.parhip"))
    xadj, adjncy, w = read_parhip(gf.path)
    got = [sorted(adjncy[xadj[v]:xadj[v + 1]].tolist()) for v in range(6)]
    assert got == neighbours(6, FIG2_EDGES) and w.tolist() == list(range(10, 16))


def test_metis_text_and_an_unknown_format(fig2, tmp_path):
    weights = fig2.tasks.submit("w", np.ones, 6, np.int64)
    gf = write_graph_file(fig2.tasks, fig2.ing, weights, str(tmp_path / "g.graph"), "metis")
    lines = (tmp_path / "g.graph").read_text().splitlines()
    assert lines[0] == f"6 {len(FIG2_EDGES)} 010" and gf.m == 2 * len(FIG2_EDGES)
    assert [[int(x) - 1 for x in ln.split()[1:]] for ln in lines[1:]] == neighbours(6, FIG2_EDGES)
    with pytest.raises(ValueError, match="format 'dot': one of parhip, metis"):
        write_graph_file(fig2.tasks, fig2.ing, weights, str(tmp_path / "g.dot"), "dot")
