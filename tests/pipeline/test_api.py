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
