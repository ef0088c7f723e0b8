"""Interop with the peers' own loaders: OGB's NodePropPredDataset and PyG's GraphSAINT datasets read the
hand-written fixtures as our readers do, and build(...) takes their objects (PyG Data, OGB datasets; DGL
graphs in benchmarks/interop/dgl_roundtrip.py, where DGL loads), keeping features, labels and masks: the store is
byte for byte the one built from the directory or from the arrays."""

import numpy as np
import pytest
from helpers import datasets as fx

import shgcn.pipeline as pl
from shgcn import store
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers
from shgcn.pipeline.sources.peers import labels_of


def same_store(a, b):
    sa, sb = store.open_store(a), store.open_store(b)
    assert sa.attrs["checksums"] == sb.attrs["checksums"]  # every rank block: graph, features, labels, masks
    # nodes/file_id is the id each vertex had in its input (a generator's or a file's; a peer's object numbers
    # them 0..n-1), the one array that may differ
    assert {k: v for k, v in sa.attrs["array_checksums"].items() if not k.startswith(("quality", "nodes/file_id"))} \
        == {k: v for k, v in sb.attrs["array_checksums"].items() if not k.startswith(("quality", "nodes/file_id"))}
    for k in ("label_kind", "classes", "feature_dim", "directed", "n", "nnz"):
        assert sa.attrs[k] == sb.attrs[k], k


def build(src, out, client, **kw):
    return pl.build(src, parts=2, out=out, models=("rp",), client=client, **kw).path


def test_labels_of():
    y, kind = labels_of(np.array([[1.0], [np.nan], [2.0]]))
    assert kind == "single" and y.tolist() == [1, -1, 2]
    y, kind = labels_of(np.array([[0, 1], [1, 1]], np.float32))
    assert kind == "multi" and y.dtype == bool
    with pytest.raises(UserError, match="0/1 multi-label"):
        labels_of(np.array([[0, 2], [1, 1]]))


@pytest.mark.slow
def test_pyg_loaders_read_our_graphsaint_fixtures_as_we_do(tmp_path, client):
    pytest.importorskip("torch_geometric")
    from torch_geometric.datasets import Flickr, Yelp

    for cls, multi in ((Flickr, False), (Yelp, True)):
        fx.saint(tmp_path / cls.__name__ / "raw", multi=multi)
        data = cls(str(tmp_path / cls.__name__))[0]
        raw = readers.read(tmp_path / cls.__name__ / "raw", None, client)
        assert sorted(zip(*data.edge_index.numpy().tolist())) == sorted(zip(raw.src.tolist(), raw.dst.tolist()))
        np.testing.assert_array_equal(data.x.numpy(), raw.features)
        np.testing.assert_array_equal(data.y.numpy().astype(raw.labels.dtype), raw.labels)
        for k in ("train", "val", "test"):
            np.testing.assert_array_equal(getattr(data, f"{k}_mask").numpy(), raw.masks[k])
        # and build() takes PyG's object: the same store as from the directory
        a = build(data, tmp_path / f"{cls.__name__}-pyg.zarr", client)
        b = build(str(tmp_path / cls.__name__ / "raw"), tmp_path / f"{cls.__name__}-dir.zarr", client)
        same_store(a, b)
        assert store.open_store(a).attrs["label_kind"] == ("multi" if multi else "single")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_ogb_loader_reads_our_fixture_and_build_takes_its_dataset(tmp_path, client):
    pytest.importorskip("ogb")
    from ogb.nodeproppred import NodePropPredDataset

    fx.ogb_csv(tmp_path / "ogbn_arxiv", scheme="time")
    ds = NodePropPredDataset(name="ogbn-arxiv", root=str(tmp_path))
    graph, labels = ds[0]
    raw = readers.read(tmp_path / "ogbn_arxiv", None, client)
    np.testing.assert_array_equal(graph["edge_index"], np.stack([raw.src, raw.dst]))
    np.testing.assert_array_equal(graph["node_feat"], raw.features)
    np.testing.assert_array_equal(np.nan_to_num(labels[:, 0], nan=-1), raw.labels)
    a = build(ds, tmp_path / "ogb.zarr", client)
    b = build(str(tmp_path / "ogbn_arxiv"), tmp_path / "dir.zarr", client)
    same_store(a, b)
    assert store.open_store(a).attrs["directed"]  # arXiv's citations, stored once each


def test_pyg_data_keeps_features_labels_and_masks(tmp_path, client):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data

    e = np.array(fx.EDGES).T
    both = np.concatenate([e, e[::-1]], 1)
    m = fx.masks()
    data = Data(x=torch.from_numpy(fx.FEATURES), edge_index=torch.from_numpy(both), y=torch.from_numpy(fx.LABELS),
                train_mask=torch.from_numpy(m["train"]), val_mask=torch.from_numpy(m["val"]),
                test_mask=torch.from_numpy(m["test"]), num_nodes=fx.N)
    a = build(data, tmp_path / "pyg.zarr", client)
    b = build(str(fx.ogb_csv(tmp_path / "ogbn_products")), tmp_path / "dir.zarr", client)  # undirected, as named
    same_store(a, b)
    s = store.open_store(a)
    assert not s.attrs["directed"]
    np.testing.assert_array_equal(s.nodes()["labels"].values, fx.LABELS)
    np.testing.assert_array_equal(s.nodes()["train_mask"].values, m["train"])


@pytest.mark.parametrize("spec, extra", [pytest.param("rmat:scale=7,edge_factor=4,seed=2", {"features": "random:4"},
                                                      marks=pytest.mark.slow),
                                         ("sbm:n=300,classes=3,degree=6,features=5,seed=1", {})])
def test_build_of_to_pyg_gives_back_its_store(tmp_path, client, spec, extra):
    """A directed store exported to PyG (edge j -> i for A[i, j]) and built again: the same rank blocks."""
    pytest.importorskip("torch_geometric")
    s = store.open_store(pl.build(spec, parts=3, out=tmp_path / "a.zarr", models=("rp", "gp"), client=client,
                                  **extra).path)
    again = pl.build(store.to_pyg(s), parts=3, out=tmp_path / "b.zarr", models=("rp", "gp"), client=client)
    same_store(s.path, again.path)
