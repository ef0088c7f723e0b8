"""``pipeline export``: DistDGL's partition layout and the assignment file
(shgcn.pipeline.exports). The layout is checked without DGL; DGL's own loader
reads the export where DGL imports."""

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import run_cli
from helpers.interop import RMAT, SBM, import_dgl, make

from shgcn.core.errors import UserError
from shgcn.pipeline.exports.assignment import assignment_bytes
from shgcn.pipeline.exports.distdgl import (
    ETYPE,
    NTYPE,
    distdgl_layout,
    distdgl_part,
    export_distdgl,
    partition_config,
    store_layout,
)
from shgcn.store.interop import graph_arrays

# what dgl.distributed.load_partition_book and load_partition read from the config
DGL_KEYS = {"graph_name", "num_nodes", "num_edges", "num_parts", "halo_hops", "part_method", "node_map", "edge_map",
            "ntypes", "etypes"}
PART_KEYS = {"node_feats", "edge_feats", "part_graph"}


@pytest.fixture(scope="module")
def stores(tmp_path_factory, client):
    root = tmp_path_factory.mktemp("pexport")
    return {"sbm": make(root, client, "sbm.zarr", SBM, 4),
            "rmat": make(root, client, "rmat.zarr", RMAT, 3, directed=True, features="random:6", labels="random:3")}


def dgl_imports() -> bool:
    try:
        import dgl  # noqa: F401
    except Exception:
        return False
    return True


class NumpyWriter:
    """Stands in for DGL's writers: the same files, as .npz archives."""

    def tensors(self, path, tensors):
        with open(path, "wb") as f:
            np.savez(f, **{k.replace("/", "|"): v for k, v in tensors.items()})

    def graph(self, path, g):
        with open(path, "wb") as f:
            np.savez(f, node_ids=g.node_ids, inner_node=g.inner_node, part_id=g.part_id, src=g.src, dst=g.dst,
                     edge_ids=g.edge_ids, inner_edge=g.inner_edge)


def load(path) -> dict:
    with np.load(path) as z:
        return {k.replace("|", "/"): z[k] for k in z.files}


# ------------------------------------------------------- the layout, exactly

# path 0 - 1 - 2 - 3 (undirected), vertices 1 and 2 in part 0, 0 and 3 in part 1
PATH = sp.csr_matrix((np.ones(6), ([0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2])), shape=(4, 4))


def test_layout_of_a_path_is_exact():
    lay = distdgl_layout(PATH.indptr, PATH.indices, np.array([1, 0, 0, 1]), 2)
    np.testing.assert_array_equal(lay.orig_nids, [1, 2, 0, 3])  # new id -> original vertex
    np.testing.assert_array_equal(lay.node_ranges, [[0, 2], [2, 4]])
    # original edges (CSR order, A[i, j] is j -> i): 0:1->0 1:0->1 2:2->1 3:1->2 4:3->2 5:2->3
    np.testing.assert_array_equal(lay.orig_eids, [2, 1, 3, 4, 0, 5])
    np.testing.assert_array_equal(lay.src, [1, 2, 0, 3, 0, 1])
    np.testing.assert_array_equal(lay.dst, [0, 0, 1, 1, 2, 3])
    np.testing.assert_array_equal(lay.edge_ranges, [[0, 4], [4, 6]])
    p0 = distdgl_part(lay, 0)
    np.testing.assert_array_equal(p0.node_ids, [0, 1, 2, 3])
    np.testing.assert_array_equal(p0.inner_node, [True, True, False, False])
    np.testing.assert_array_equal(p0.part_id, [0, 0, 1, 1])
    np.testing.assert_array_equal(p0.edge_ids, [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(p0.src, [1, 2, 0, 3, 0, 1])
    np.testing.assert_array_equal(p0.dst, [0, 0, 1, 1, 2, 3])
    np.testing.assert_array_equal(p0.inner_edge, [True] * 4 + [False] * 2)
    p1 = distdgl_part(lay, 1)
    np.testing.assert_array_equal(p1.node_ids, [2, 3, 0, 1])
    np.testing.assert_array_equal(p1.edge_ids, [4, 5, 1, 3])  # in-edges of 2 and 3, then 2->0 and 3->1
    np.testing.assert_array_equal(p1.src, [2, 3, 0, 1])
    np.testing.assert_array_equal(p1.dst, [0, 1, 2, 3])
    np.testing.assert_array_equal(p1.inner_edge, [True, True, False, False])
    cfg = partition_config(lay, "path", "hp")
    assert cfg["node_map"] == {NTYPE: [[0, 2], [2, 4]]} and cfg["edge_map"] == {ETYPE: [[0, 4], [4, 6]]}
    assert cfg["num_nodes"] == 4 and cfg["num_edges"] == 6 and cfg["num_parts"] == 2 and cfg["halo_hops"] == 1
    assert cfg["part-1"] == {"node_feats": "part1/node_feats.dgl", "edge_feats": "part1/edge_feats.dgl",
                             "part_graph": "part1/graph.dgl"}


def test_directed_halo_holds_in_and_out_neighbours():
    # 0 -> 1 and 2 -> 0 as rows of A: A[1, 0] (0 -> 1 means row 1 aggregates column 0) and A[0, 2]
    a = sp.csr_matrix((np.ones(2), ([1, 0], [0, 2])), shape=(3, 3))
    lay = distdgl_layout(a.indptr, a.indices, np.array([0, 1, 1]), 2)
    p0 = distdgl_part(lay, 0)
    np.testing.assert_array_equal(lay.orig_nids[p0.node_ids], [0, 1, 2])  # 2 (in-neighbour) and 1 (out-neighbour)
    np.testing.assert_array_equal(p0.inner_edge, [True, False])


def test_an_order_that_splits_a_part_is_refused():
    with pytest.raises(ValueError, match="contiguously"):
        distdgl_layout(PATH.indptr, PATH.indices, np.array([1, 0, 0, 1]), 2, order=np.array([1, 0, 2, 3]))


@pytest.mark.parametrize("name", ["sbm", "rmat"])
@pytest.mark.parametrize("layout_model", [True, False])
def test_layout_follows_the_stores_partition(stores, name, layout_model):
    s = stores[name]
    model = s.attrs["model"] if layout_model else "rp"
    part = s.partition(model)
    lay, nodes = store_layout(s, model)
    whole = graph_arrays(s)
    # owned nodes of part i are contiguous in the new numbering, in part order
    starts = np.concatenate([[0], np.cumsum(np.bincount(part, minlength=s.parts))])
    np.testing.assert_array_equal(lay.node_ranges, np.stack([starts[:-1], starts[1:]], 1))
    np.testing.assert_array_equal(part[lay.orig_nids], lay.node_part)
    assert np.all(np.diff(lay.node_part) >= 0)
    if layout_model:  # DistDGL part i is our rank i, in the same order
        np.testing.assert_array_equal(lay.orig_nids, s.permutation())
        np.testing.assert_array_equal(lay.node_ranges[:, 0], s.offsets[:-1])
    # every edge once; new edge e is original edge orig_eids[e]; part i owns the edges whose destination it owns
    np.testing.assert_array_equal(np.sort(lay.orig_eids), np.arange(whole.num_edges))
    np.testing.assert_array_equal(lay.orig_nids[lay.src], whole.src[lay.orig_eids])
    np.testing.assert_array_equal(lay.orig_nids[lay.dst], whole.dst[lay.orig_eids])
    edge_part = np.repeat(np.arange(s.parts), np.diff(lay.edge_ranges, axis=1)[:, 0])
    np.testing.assert_array_equal(edge_part, part[whole.dst[lay.orig_eids]])
    n = s.attrs["n"]
    adj = sp.csr_matrix((np.ones(whole.num_edges), (whole.src, whole.dst)), shape=(n, n))
    sym = ((adj + adj.T) > 0).tocsr()
    for i in range(s.parts):
        g = distdgl_part(lay, i)
        inner = part == i
        orig = lay.orig_nids[g.node_ids]
        # halo: every neighbour (either direction) of the inner nodes that another part owns
        want_halo = np.flatnonzero((sym[inner].sum(0).A1 > 0) & ~inner)
        np.testing.assert_array_equal(np.sort(orig[g.n_inner:]), want_halo)
        np.testing.assert_array_equal(np.sort(orig[:g.n_inner]), np.flatnonzero(inner))
        # inner edges: exactly the edges into the part; then the edges from it to other parts
        e_src, e_dst = orig[g.src], orig[g.dst]
        np.testing.assert_array_equal(e_src, whole.src[lay.orig_eids[g.edge_ids]])
        np.testing.assert_array_equal(e_dst, whole.dst[lay.orig_eids[g.edge_ids]])
        assert g.n_inner_edges == inner[whole.dst].sum()
        assert inner[e_dst[:g.n_inner_edges]].all() and inner[e_src[g.n_inner_edges:]].all()
        assert (~inner[e_dst[g.n_inner_edges:]]).all()
        assert g.edge_ids.size - g.n_inner_edges == (inner[whole.src] & ~inner[whole.dst]).sum()
        if layout_model:  # the in-neighbour halo is rank i's received rows
            recv = s.permutation()[np.asarray(s.rank(i).plan.recv_ids)]
            np.testing.assert_array_equal(np.unique(e_src[:g.n_inner_edges][~inner[e_src[:g.n_inner_edges]]]),
                                          np.sort(recv))
    np.testing.assert_array_equal(nodes.features, whole.features)


# ------------------------------------------------------------------- files

def test_distdgl_files_follow_dgls_layout(stores, tmp_path):
    s = stores["sbm"]
    out = tmp_path / "dd"
    config = export_distdgl(s, out, graph_name="sbm4", writer=NumpyWriter())
    assert config == out / "sbm4.json"
    cfg = json.loads(config.read_text())
    assert DGL_KEYS <= cfg.keys() and cfg["graph_name"] == "sbm4" and cfg["part_method"] == "hp"
    assert cfg["num_parts"] == 4 and cfg["num_nodes"] == 400 and cfg["num_edges"] == s.graph().nnz
    assert cfg["ntypes"] == {"_N": 0} and cfg["etypes"] == {"_N:_E:_N": 0}
    offsets = s.offsets.tolist()
    assert cfg["node_map"] == {"_N": [[offsets[i], offsets[i + 1]] for i in range(4)]}
    ranges = cfg["edge_map"]["_N:_E:_N"]
    assert ranges[0][0] == 0 and ranges[-1][1] == cfg["num_edges"]
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    orig_nids, orig_eids = [], []
    nodes = s.nodes()
    for i in range(4):
        files = cfg[f"part-{i}"]
        assert files.keys() == PART_KEYS
        for rel in files.values():
            assert not rel.startswith("/") and (out / rel).is_file()
        g = load(out / files["part_graph"])
        assert g["inner_node"].sum() == offsets[i + 1] - offsets[i]
        np.testing.assert_array_equal(g["node_ids"][g["inner_node"]], np.arange(offsets[i], offsets[i + 1]))
        np.testing.assert_array_equal(np.sort(g["edge_ids"][g["inner_edge"]]), np.arange(*ranges[i]))
        ids = load(out / f"part{i}/orig_nids.dgl")["_N"]
        orig_nids.append(ids)
        orig_eids.append(load(out / f"part{i}/orig_eids.dgl")["_N:_E:_N"])
        feats = load(out / files["node_feats"])
        assert set(feats) == {"_N/feat", "_N/label", "_N/train_mask", "_N/val_mask", "_N/test_mask"}
        np.testing.assert_array_equal(feats["_N/feat"], nodes["features"].values[ids])
        np.testing.assert_array_equal(feats["_N/train_mask"], nodes["train_mask"].values[ids])
        assert load(out / files["edge_feats"]) == {}
    np.testing.assert_array_equal(np.concatenate(orig_nids), s.permutation())
    np.testing.assert_array_equal(np.sort(np.concatenate(orig_eids)), np.arange(cfg["num_edges"]))
    assert [p.name for p in tmp_path.iterdir()] == ["dd"]  # no partial directory left


def test_existing_output_and_bad_names_are_refused(stores, tmp_path):
    s = stores["sbm"]
    (tmp_path / "dd").mkdir()
    with pytest.raises(UserError, match="already exists"):
        export_distdgl(s, tmp_path / "dd", writer=NumpyWriter())
    export_distdgl(s, tmp_path / "dd", writer=NumpyWriter(), overwrite=True)
    assert (tmp_path / "dd" / "sbm.json").exists()
    with pytest.raises(UserError, match="--graph-name"):
        export_distdgl(s, tmp_path / "x", graph_name="a/b", writer=NumpyWriter())
    with pytest.raises(UserError, match="no partition for model 'gp'"):
        export_distdgl(s, tmp_path / "x", model="gp", writer=NumpyWriter())
    assert not (tmp_path / "x").exists()


def test_cli_distdgl_without_dgl_is_one_line(stores, tmp_path):
    if dgl_imports():
        pytest.skip("DGL imports here: the export runs instead (test_dgl_loads_the_export)")
    out = tmp_path / "dd"
    res = run_cli("export", str(stores["sbm"].path), "--format", "distdgl", str(out))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and res.stderr.startswith("pipeline: error: ")
    # DGL needs torch: without torch (as in .ci/lowest) the first missing module named is torch
    needs = "dgl" if importlib.util.find_spec("torch") else "torch"
    assert f"pipeline export --format distdgl needs {needs}" in res.stderr
    assert res.stderr.endswith("in a separate environment (DGL 2.1 loads only beside torch <= 2.2.1 and numpy < 2; "
                               "docs/interop.md): pip install 'shgcn[dgl]'\n")
    assert not out.exists()


@pytest.mark.parametrize("name", ["sbm", "rmat"])
def test_dgl_loads_the_export(stores, tmp_path, name):
    dgl = import_dgl()
    from dgl.distributed import load_partition

    s = stores[name]
    out = tmp_path / "dd"
    res = run_cli("export", str(s.path), "--format", "distdgl", str(out), "--graph-name", "g")
    assert res.returncode == 0, res.stderr
    whole = graph_arrays(s)
    orig = np.concatenate([dgl.data.utils.load_tensors(str(out / f"part{i}/orig_nids.dgl"))["_N"].numpy()
                           for i in range(s.parts)])
    np.testing.assert_array_equal(orig, s.permutation())
    edges = 0
    for i in range(s.parts):
        g, node_feats, edge_feats, book, name_, ntypes, etypes = load_partition(str(out / "g.json"), i)
        assert name_ == "g" and book.num_partitions() == s.parts and edge_feats == {}
        inner = g.ndata["inner_node"].bool()
        nid = g.ndata[dgl.NID]
        assert (book.nid2partid(nid[inner]) == i).all()
        assert (book.eid2partid(g.edata[dgl.EID][g.edata["inner_edge"].bool()]) == i).all()
        np.testing.assert_array_equal(node_feats["_N/feat"].numpy(), whole.features[orig[nid[inner].numpy()]])
        u, v = g.edges()
        m = g.edata["inner_edge"].bool().numpy()
        got = set(zip(orig[nid[u].numpy()][m], orig[nid[v].numpy()][m]))
        mine = s.partition(s.attrs["model"])[whole.dst] == i
        assert got == set(zip(whole.src[mine], whole.dst[mine]))
        edges += m.sum()
    assert edges == whole.num_edges


# -------------------------------------------------------------- assignment

def test_assignment_text_is_one_part_per_line():
    assert assignment_bytes(np.array([1, 0, 12, 0], np.int32)) == b"1\n0\n12\n0\n"
    assert assignment_bytes(np.array([2, 1, 0]), chunk=2) == b"2\n1\n0\n"
    assert assignment_bytes(np.array([], np.int32)) == b""


@pytest.mark.parametrize("model", ["rp", "hp"])
def test_assignment_round_trips(stores, tmp_path, model):
    s = stores["sbm"]
    out = tmp_path / f"{model}.txt"
    res = run_cli("--quiet", "export", str(s.path), "--format", "assignment", str(out), "--model", model)
    assert res.returncode == 0 and res.stdout == "", res.stderr
    np.testing.assert_array_equal(np.loadtxt(out, dtype=np.int64), s.partition(model))
    assert len(out.read_text().splitlines()) == s.attrs["n"]


def test_assignment_defaults_to_the_layout_model(stores, tmp_path):
    s = stores["rmat"]
    res = run_cli("export", str(s.path), "--format", "assignment", str(tmp_path / "a.txt"))
    assert res.returncode == 0 and res.stdout == f"wrote {tmp_path / 'a.txt'}\n"
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "a.txt", dtype=np.int64), s.partition(s.attrs["model"]))


@pytest.mark.parametrize("args, message", [
    (["--model", "gp"], "no partition for model 'gp'; the store has rp, hp"),
    (["--format", "metis"], "--format metis exports a graph: pipeline export graph SOURCE OUT --format metis"),
])
def test_cli_errors_are_one_line(stores, tmp_path, args, message):
    argv = ["export", str(stores["sbm"].path), str(tmp_path / "a.txt")]
    argv += args if "--format" in args else ["--format", "assignment", *args]
    res = run_cli(*argv)
    assert res.returncode == 2 and "Traceback" not in res.stderr and message in res.stderr
    assert not (tmp_path / "a.txt").exists()


def test_cli_refuses_to_overwrite(stores, tmp_path):
    out = tmp_path / "a.txt"
    out.write_text("keep\n")
    res = run_cli("export", str(stores["sbm"].path), "--format", "assignment", str(out))
    assert res.returncode == 2 and f"{out}: already exists (use --overwrite to replace it)" in res.stderr
    assert out.read_text() == "keep\n"
    res = run_cli("export", str(stores["sbm"].path), "--format", "assignment", str(out), "--overwrite")
    assert res.returncode == 2 and "not a file this command writes" in res.stderr  # only an assignment is replaced
    out.write_text("0\n1\n")  # an earlier assignment
    assert run_cli("export", str(stores["sbm"].path), "--format", "assignment", str(out), "--overwrite").returncode == 0
    np.testing.assert_array_equal(np.loadtxt(out, dtype=np.int64), stores["sbm"].partition("hp"))


def test_missing_store_is_one_line(tmp_path):
    res = run_cli("export", str(tmp_path / "nope.zarr"), "--format", "assignment", str(tmp_path / "a.txt"))
    assert res.returncode == 2 and "store not found" in res.stderr and res.stderr.count("\n") == 1


def test_export_module_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['dgl'] = None\n"
            "import shgcn.pipeline.exports.distdgl, shgcn.store.interop\n")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
