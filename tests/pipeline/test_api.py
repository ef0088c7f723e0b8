"""The Python API: ``shgcn.pipeline.build(...)``."""

import time

import numpy as np
import pytest

from shgcn import store


def test_python_api_with_the_users_client_leaves_no_keys(tmp_path):
    import scipy.sparse as sp
    from distributed import Client, LocalCluster

    import shgcn.pipeline as pl

    rng = np.random.default_rng(0)
    m = sp.random(400, 400, density=0.02, random_state=rng, format="csr")
    x = rng.standard_normal((400, 5)).astype(np.float32)
    y = rng.integers(0, 3, 400)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as c:
        res = pl.build(m, parts=4, out=tmp_path / "m.zarr", models=("rp", "hp"), client=c, features=x, labels=y,
                       directed=False)
        edge_index = np.stack(m.nonzero())
        res2 = pl.build(edge_index, parts=2, out=tmp_path / "e.zarr", client=c)
        with pytest.raises(pl.errors.UserError, match="edge_index"):
            pl.build(np.zeros((3, 4), np.int64), parts=2, out=tmp_path / "bad.zarr", client=c)
        time.sleep(0.5)
        left = c.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
    assert left == 0
    s = store.open_store(res.path)
    assert s.parts == 4 and s.models == ["rp", "hp"] and not s.attrs["directed"]
    np.testing.assert_array_equal(s.nodes()["features"].values, x)
    np.testing.assert_array_equal(s.nodes()["labels"].values, y)
    assert store.open_store(res2.path).attrs["n"] == 400


def test_model_options_are_keywords(tmp_path, client):
    import shgcn.pipeline as pl

    res = pl.build("sbm:n=200,classes=2,degree=6,features=3,seed=1", parts=2, out=tmp_path / "o.zarr",
                   models=("hp",), client=client, hp_preset="default", eps=0.05)
    assert res.attrs["config"]["options"]["hp_preset"] == "default" and res.attrs["eps"] == 0.05
    with pytest.raises(pl.errors.UserError, match="unknown option 'hp_presets'"):
        pl.build("sbm:n=200", parts=2, out=tmp_path / "p.zarr", client=client, hp_presets="default")


@pytest.mark.parametrize("layout", [pytest.param("ogb-csv", marks=pytest.mark.slow), "ogb-npz",
                                    pytest.param("saint", marks=pytest.mark.slow)])
def test_dataset_directories_build_the_store_of_their_arrays(tmp_path, client, layout):
    """An OGB or GraphSAINT directory gives, byte for byte, the store of the same graph and node data given
    as arrays."""
    import scipy.sparse as sp
    from helpers import datasets as fx

    import shgcn.pipeline as pl

    d = tmp_path / "g"
    {"ogb-csv": fx.ogb_csv, "ogb-npz": fx.ogb_npz, "saint": fx.saint}[layout](d)
    a, b = np.array(fx.EDGES).T
    m = sp.coo_matrix((np.ones(a.size), (a, b)), shape=(fx.N, fx.N))
    kw = dict(parts=2, models=("rp", "gp"), client=client, directed=False)
    x = pl.build(str(d), out=tmp_path / "d.zarr", **kw)
    y = pl.build(m, out=tmp_path / "a.zarr", features=fx.FEATURES, labels=fx.LABELS, masks=fx.masks(), **kw)
    sx, sy = store.open_store(x.path), store.open_store(y.path)
    assert sx.attrs["checksums"] == sy.attrs["checksums"]
    for name in ("permutation", "partitions/gp", "graph/bounds"):
        assert sx.attrs["array_checksums"][name] == sy.attrs["array_checksums"][name]
    np.testing.assert_array_equal(sx.nodes()["features"].values, fx.FEATURES)


def test_float16_features_on_disk(tmp_path, client):
    from helpers import datasets as fx
    from helpers.mpi import train

    import shgcn.pipeline as pl

    res = pl.build(str(fx.saint(tmp_path / "s", multi=True)), parts=1, out=tmp_path / "h.zarr", client=client,
                   models=("rp",), feature_dtype="float16")
    s = store.open_store(res.path)
    assert s.attrs["feature_dtype"] == "float16" and s.attrs["label_kind"] == "multi"
    assert s.rank(0).features.dtype == np.float16 and s.rank(0).labels.shape == (fx.N, 4)
    np.testing.assert_array_equal(s.nodes()["features"].values, fx.FEATURES.astype(np.float16))
    run = train(1, res.path, "--epochs", 2, use_mpirun=False, timeout=120)  # the trainer computes in float32
    assert run.returncode == 0, run.stderr


def test_api_messages_name_its_parameters(tmp_path, client, caplog):
    import logging

    import shgcn.pipeline as pl
    from shgcn.pipeline.errors import UserError

    with pytest.raises(UserError, match=r'^features="random:0": expected'):
        pl.build("sbm:n=60,classes=2,degree=4,seed=1", parts=2, out=tmp_path / "a.zarr", client=client,
                 features="random:0")
    with pytest.raises(UserError, match=r"^split=\(0\.0, 0\.5, 0\.5\): the train fraction is 0, .*"
                                                  r'\(e\.g\. split=\(0\.6, 0\.2, 0\.2\)\)'):
        pl.build("sbm:n=60,classes=2,degree=4,seed=1", parts=2, out=tmp_path / "b.zarr", client=client,
                 split=(0.0, 0.5, 0.5))
    with pytest.raises(UserError, match=r"^parts=8: more parts than the 4 vertices"):
        pl.build(np.array([[0, 1, 2], [1, 2, 3]]), parts=8, out=tmp_path / "c.zarr", client=client)
    with pytest.raises(UserError, match=r'^partition_files=".*missing.txt": file not found'):
        pl.build("sbm:n=60,classes=2,degree=4,seed=1", parts=2, out=tmp_path / "e.zarr", client=client,
                 partition_files=[str(tmp_path / "missing.txt")])
    with pytest.raises(UserError, match=r'^hp_preset="best": choose one of fast, default'):
        pl.build("sbm:n=60,classes=2,degree=4,seed=1", parts=2, out=tmp_path / "f.zarr", client=client,
                 hp_preset="best")
    with pytest.raises(UserError, match=r'^sampler="walk": choose one of node, edge, rw'):
        pl.build("sbm:n=60,classes=2,degree=4,seed=1", parts=2, out=tmp_path / "g.zarr", client=client,
                 models=("shp",), sampler="walk")
    with caplog.at_level(logging.INFO, logger="shgcn.pipeline"):
        pl.build(np.array([[0, 1, 1, 2], [1, 0, 2, 1]]), parts=2, models=("rp",), out=tmp_path / "d.zarr",
                 client=client)
    text = caplog.text
    assert 'choose with features="random:D"' in text and 'choose with labels="random:C"' in text
    assert "reading in-memory graph as undirected (every edge with its reverse; directed=True changes it)" in text
    assert "--" not in text.replace("--overwrite", "")  # no command-line option anywhere


def test_a_symmetric_matrix_and_a_pyg_data_follow_one_rule(tmp_path, client):
    """The same symmetric graph as a scipy matrix and as a PyG Data: both undirected, the same store."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    import scipy.sparse as sp
    from torch_geometric.data import Data

    import shgcn.pipeline as pl

    rng = np.random.default_rng(3)
    a = sp.random(80, 80, density=0.05, format="csr", random_state=rng)
    sym = ((a + a.T) > 0).astype(np.float32)
    x = rng.standard_normal((80, 3)).astype(np.float32)
    kw = dict(parts=2, models=("rp",), client=client, labels=np.zeros(80, np.int64))
    m = pl.build(sym, out=tmp_path / "m.zarr", features=x, **kw)
    col, row = sym.nonzero()  # PyG's edge j -> i is the entry A[i, j]
    data = Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(np.stack([row, col]).astype(np.int64)), num_nodes=80)
    p = pl.build(data, out=tmp_path / "p.zarr", **kw)
    assert m.attrs["directed"] is False and p.attrs["directed"] is False
    assert m.attrs["checksums"] == p.attrs["checksums"] and p.attrs["source"] == "Data"
