"""``pipeline export graph``: the METIS and ParHIP files read back equal the
symmetrized graph and its vertex weights, and a partition made from the file
elsewhere comes back with --partition-file."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import run_cli

from shgcn import store
from shgcn.core.work import vertex_weights
from shgcn.pipeline.graphfile import read_parhip
from shgcn.pipeline.sources.synthetic import parse_spec
from shgcn.pipeline.stages.ingest import to_graph
from shgcn.pipeline.stages.normalize import normalized_adjacency

RMAT = "rmat:scale=9,edge_factor=6,seed=4"  # directed: A + Aᵀ differs from A


def expected(spec: str, directed: bool, dims: list[int]):
    g = to_graph(parse_spec(spec), directed=directed)
    sym = ((g.adj + g.adj.T) > 0).astype(np.int8).tocsr()
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    a = normalized_adjacency(g.adj, directed)
    return sym, vertex_weights(np.diff(a.indptr), "work", dims)


@pytest.mark.parametrize("fmt", ["parhip", "metis"])
def test_the_file_read_back_is_the_symmetrized_graph_with_its_weights(tmp_path, fmt):
    out = tmp_path / f"g.{fmt}"
    res = run_cli("export", "graph", RMAT, str(out), "--format", fmt, "--features", "random:8", "--labels",
                  "random:3")
    assert res.returncode == 0, res.stderr
    sym, w = expected(RMAT, True, [8, 16, 3])
    if fmt == "parhip":
        xadj, adjncy, weights = read_parhip(str(out))
        got = sp.csr_matrix((np.ones(adjncy.size, np.int8), np.asarray(adjncy), xadj), shape=sym.shape)
    else:
        lines = out.read_text().splitlines()
        n, m, fmt_code = lines[0].split()
        assert (int(n), int(m), fmt_code) == (sym.shape[0], sym.nnz // 2, "010")
        rows = [list(map(int, ln.split())) for ln in lines[1:]]
        weights = np.array([r[0] for r in rows])
        indptr = np.concatenate([[0], np.cumsum([len(r) - 1 for r in rows])])
        got = sp.csr_matrix((np.ones(indptr[-1], np.int8), np.concatenate([np.array(r[1:], int) - 1 for r in rows]),
                             indptr), shape=sym.shape)
    assert (got != sym).nnz == 0
    np.testing.assert_array_equal(np.asarray(weights), w)


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_a_partition_made_from_the_file_comes_back(tmp_path):
    kaminpar = pytest.importorskip("kaminpar")
    out = tmp_path / "g.parhip"
    assert run_cli("export", "graph", RMAT, str(out), "--format", "parhip", "--features", "random:8",
                   "--labels", "random:3").returncode == 0
    graph = kaminpar.load_graph(str(out), kaminpar.GraphFileFormat.PARHIP)
    kaminpar.reseed(1)
    part = np.asarray(kaminpar.KaMinPar(1, kaminpar.default_context()).compute_partition(graph, 4, 0.03))
    parts = tmp_path / "elsewhere.txt"
    parts.write_text("".join(f"{p}\n" for p in part))
    res = run_cli("build", RMAT, "--parts", "4", "--model", "rp", "--partition-file", str(parts), "--features",
                  "random:8", "--labels", "random:3", "--out", str(tmp_path / "s.zarr"))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(store.open_store(tmp_path / "s.zarr").partition("elsewhere"), part)


def test_bad_uses_are_one_line(tmp_path):
    res = run_cli("export", "graph", RMAT, str(tmp_path / "x"), "--format", "distdgl")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    res = run_cli("export", RMAT, str(tmp_path / "x"), "--format", "parhip")
    assert res.returncode == 2 and "pipeline export graph SOURCE OUT" in res.stderr
    (tmp_path / "there").write_text("mine")
    res = run_cli("export", "graph", RMAT, str(tmp_path / "there"), "--format", "metis")
    assert res.returncode == 2 and "already exists" in res.stderr and (tmp_path / "there").read_text() == "mine"
