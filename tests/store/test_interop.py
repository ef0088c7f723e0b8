"""Exporters of the store (shgcn.store.interop): the whole graph and one rank's
block with its halo, as numpy arrays, PyG Data and DGL graphs, checked
against the store exactly."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.interop import RMAT, SBM, import_dgl, make

from shgcn.core.errors import UserError
from shgcn.pipeline.stages.normalize import normalized_adjacency
from shgcn.store.interop import graph_arrays, require, to_dgl, to_pyg


@pytest.fixture(scope="module")
def stores(tmp_path_factory, client):
    root = tmp_path_factory.mktemp("export")
    path_file = root / "path.txt"
    path_file.write_text("0 1\n1 2\n2 3\n")
    return {
        "path": make(root, client, "path.zarr", path_file, 2, directed=False),
        "sbm": make(root, client, "sbm.zarr", SBM, 4),
        "rmat": make(root, client, "rmat.zarr", RMAT, 3, directed=True, features="random:6", labels="random:3"),
    }


def matrix(src, dst, values, n) -> sp.csr_matrix:
    """M[dst, src] = value: the matrix whose rows aggregate (Â's orientation)."""
    return sp.csr_matrix((values, (dst, src)), shape=(n, n))


def test_whole_graph_of_a_path_is_exact(stores):
    s = stores["path"]
    a = graph_arrays(s)
    np.testing.assert_array_equal(a.src, [1, 0, 2, 1, 3, 2])
    np.testing.assert_array_equal(a.dst, [0, 1, 1, 2, 2, 3])
    assert a.weight is None and a.rank is None and not a.halo.any()
    h = graph_arrays(s, normalized=True)  # degrees of A + I: 2, 3, 3, 2
    np.testing.assert_array_equal(h.src, [0, 1, 0, 1, 2, 1, 2, 3, 2, 3])
    np.testing.assert_array_equal(h.dst, [0, 0, 1, 1, 1, 2, 2, 2, 3, 3])
    d = np.array([2.0, 3.0, 3.0, 2.0]) ** -0.5
    np.testing.assert_array_equal(h.weight, (d[h.dst] * d[h.src]).astype(np.float32))
    nodes = s.nodes()
    np.testing.assert_array_equal(h.features, nodes["features"].values)
    np.testing.assert_array_equal(h.labels, nodes["labels"].values)
    assert h.features.dtype == np.float32 and h.labels.dtype == np.int64 and h.src.dtype == np.int64


@pytest.mark.parametrize("name", ["sbm", "rmat"])
def test_whole_graph_equals_the_store(stores, name):
    s = stores[name]
    n, directed = s.attrs["n"], s.attrs["directed"]
    a = graph_arrays(s)
    g = s.graph()
    assert (matrix(a.src, a.dst, np.ones(a.num_edges, np.float32), n) != g).nnz == 0
    assert a.num_edges == g.nnz and not np.any(a.src == a.dst)
    h = graph_arrays(s, normalized=True)
    a_hat = normalized_adjacency(g, directed)  # recomputed from the pattern, independently of the blocks
    m = matrix(h.src, h.dst, h.weight, n)
    assert h.num_edges == a_hat.nnz == s.attrs["nnz"]
    assert (m != a_hat).nnz == 0  # every edge and every weight, exactly
    for e in (a, h):  # sorted by destination, then source
        assert np.all(np.diff(e.dst) >= 0) and np.all((np.diff(e.src) > 0) | (np.diff(e.dst) > 0))
    nodes = s.nodes()
    np.testing.assert_array_equal(a.features, nodes["features"].values)
    np.testing.assert_array_equal(a.labels, nodes["labels"].values)
    for k in ("train_mask", "val_mask", "test_mask"):
        np.testing.assert_array_equal(getattr(a, k), nodes[k].values)
    np.testing.assert_array_equal(a.node_ids, np.arange(n))


@pytest.mark.parametrize("name", ["path", "sbm", "rmat"])
@pytest.mark.parametrize("normalized", [False, True])
def test_rank_export_is_its_rows_plus_halo(stores, name, normalized):
    s = stores[name]
    whole = graph_arrays(s, normalized=normalized)
    perm = s.permutation()
    edges_seen = 0
    for r in range(s.parts):
        b = s.rank(r)
        e = graph_arrays(s, r, normalized=normalized)
        n_own, recv = b.n_own, np.asarray(b.plan.recv_ids)
        # nodes: own rows in the store's order, then the received rows = local columns of the plan
        assert e.rank == r and e.num_nodes == n_own + recv.size
        np.testing.assert_array_equal(e.node_ids[:n_own], b.node_index)
        np.testing.assert_array_equal(e.node_ids[n_own:], perm[recv])
        np.testing.assert_array_equal(e.halo, np.arange(e.num_nodes) >= n_own)
        # node data: that of the whole graph at the global ids; masks on own rows only
        np.testing.assert_array_equal(e.features, whole.features[e.node_ids])
        np.testing.assert_array_equal(e.labels, whole.labels[e.node_ids])
        for k in ("train_mask", "val_mask", "test_mask"):
            np.testing.assert_array_equal(getattr(e, k)[:n_own], getattr(whole, k)[e.node_ids[:n_own]])
            assert not getattr(e, k)[n_own:].any()
        # edges: exactly the whole graph's edges whose destination the rank owns, with their weights
        own = np.zeros(s.attrs["n"], bool)
        own[e.node_ids[:n_own]] = True
        mine = own[whole.dst]
        got = matrix(e.node_ids[e.src], e.node_ids[e.dst], e.weight if normalized else np.ones(e.num_edges), own.size)
        want = matrix(whole.src[mine], whole.dst[mine], whole.weight[mine] if normalized else np.ones(mine.sum()),
                      own.size)
        assert e.num_edges == mine.sum() and (got != want).nnz == 0
        # the halo is exactly the sources of those edges that the rank does not own
        np.testing.assert_array_equal(np.sort(e.node_ids[n_own:]), np.unique(whole.src[mine][~own[whole.src[mine]]]))
        edges_seen += e.num_edges
    assert edges_seen == whole.num_edges


def test_store_path_and_bad_rank(stores):
    s = stores["path"]
    a = graph_arrays(str(s.path), 1)
    assert a.rank == 1
    with pytest.raises(UserError, match="rank 2 out of range: the store has 2 parts"):
        graph_arrays(s, 2)


def test_missing_extras_are_one_line(stores, monkeypatch):
    s = stores["path"]
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(UserError) as e:
        to_pyg(s)
    assert str(e.value) == "the PyG export needs torch, which is not installed: pip install 'shgcn[pyg]'"
    with pytest.raises(UserError, match=r"in a separate environment \(DGL 2.1 loads only beside torch <= 2.2.1 and "
                                        r"numpy < 2; docs/interop.md\): pip install 'shgcn\[dgl\]'$"):
        to_dgl(s)


def test_a_package_that_fails_to_import_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "brokenpkg.py").write_text("raise FileNotFoundError('no library for this torch\\nsecond line')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UserError) as e:
        require("brokenpkg", "dgl", "the DGL export")
    msg = str(e.value)
    assert "\n" not in msg and "installed but does not import" in msg and "no library for this torch" in msg
    assert msg.endswith("pip install 'shgcn[dgl]'")


def test_to_pyg_holds_the_export(stores):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    s = stores["sbm"]
    d = to_pyg(s)
    a = graph_arrays(s)
    assert d.num_nodes == 400 and d.edge_index.dtype == torch.int64 and d.y.dtype == torch.int64
    np.testing.assert_array_equal(d.edge_index.numpy(), np.stack([a.src, a.dst]))
    np.testing.assert_array_equal(d.x.numpy(), a.features)
    assert d.train_mask.dtype == torch.bool and "edge_weight" not in d and "n_id" not in d
    r = to_pyg(s, 2, normalized=True)
    e = graph_arrays(s, 2, normalized=True)
    np.testing.assert_array_equal(r.n_id.numpy(), e.node_ids)
    np.testing.assert_array_equal(r.halo.numpy(), e.halo)
    np.testing.assert_array_equal(r.edge_weight.numpy(), e.weight)


@pytest.mark.parametrize("name", ["sbm", "rmat"])
def test_gcnconv_on_the_export_computes_the_trainers_product(stores, name):
    torch = pytest.importorskip("torch")
    gnn = pytest.importorskip("torch_geometric.nn")
    s = stores[name]
    x = graph_arrays(s).features
    a_hat = normalized_adjacency(s.graph(), s.attrs["directed"])
    want = a_hat @ x.astype(np.float64)

    def propagate(data, **kw):
        conv = gnn.GCNConv(x.shape[1], x.shape[1], bias=False, **kw)
        with torch.no_grad():
            conv.lin.weight.copy_(torch.eye(x.shape[1]))
            return conv(data.x, data.edge_index, data.get("edge_weight")).numpy()

    np.testing.assert_allclose(propagate(to_pyg(s, normalized=True), normalize=False), want, rtol=1e-5, atol=1e-6)
    if not s.attrs["directed"]:  # PyG's own normalization of the pattern is the store's Â
        np.testing.assert_allclose(propagate(to_pyg(s)), want, rtol=1e-5, atol=1e-6)
    for r in range(s.parts):  # one layer on a rank's export gives that rank's rows
        d = to_pyg(s, r, normalized=True)
        own = ~d.halo.numpy()
        np.testing.assert_allclose(propagate(d, normalize=False)[own], want[d.n_id.numpy()[own]], rtol=1e-5, atol=1e-6)


def test_pyg_gcn_trains_on_the_export(stores):
    torch = pytest.importorskip("torch")
    gnn = pytest.importorskip("torch_geometric.nn")
    data = to_pyg(stores["sbm"])
    torch.manual_seed(0)
    conv1, conv2 = gnn.GCNConv(data.num_features, 16), gnn.GCNConv(16, int(data.y.max()) + 1)
    opt = torch.optim.Adam([*conv1.parameters(), *conv2.parameters()], lr=0.01, weight_decay=5e-4)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        h = torch.relu(conv1(data.x, data.edge_index))
        out = conv2(h, data.edge_index)
        loss = torch.nn.functional.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    acc = (out.argmax(1)[data.test_mask] == data.y[data.test_mask]).float().mean().item()
    assert acc > 0.5  # 4 balanced classes: chance is 0.25


def test_to_dgl_holds_the_export(stores):
    dgl = import_dgl()
    import torch

    s = stores["sbm"]
    g = to_dgl(s, normalized=True)
    a = graph_arrays(s, normalized=True)
    src, dst = g.edges()
    np.testing.assert_array_equal(src.numpy(), a.src)
    np.testing.assert_array_equal(dst.numpy(), a.dst)
    np.testing.assert_array_equal(g.ndata["feat"].numpy(), a.features)
    np.testing.assert_array_equal(g.edata["edge_weight"].numpy(), a.weight)
    conv = dgl.nn.GraphConv(a.features.shape[1], a.features.shape[1], norm="none", weight=False, bias=False)
    with torch.no_grad():
        out = conv(g, g.ndata["feat"], edge_weight=g.edata["edge_weight"]).numpy()
    want = normalized_adjacency(s.graph(), False) @ a.features.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    r = to_dgl(s, 1)
    e = graph_arrays(s, 1)
    np.testing.assert_array_equal(r.ndata[dgl.NID].numpy(), e.node_ids)
    np.testing.assert_array_equal(r.ndata["inner_node"].numpy(), ~e.halo)
