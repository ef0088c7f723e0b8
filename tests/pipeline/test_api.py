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
