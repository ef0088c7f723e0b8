"""Using an existing Dask scheduler instead of the embedded cluster."""

import pytest
from helpers import run_cli

from shgcn import store


@pytest.fixture
def scheduler():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as c:
        yield c.scheduler_address


def test_build_on_external_scheduler(tmp_path, scheduler):
    out = tmp_path / "s.zarr"
    res = run_cli("build", "sbm:n=300,classes=3,degree=6,features=4,seed=0", "--parts", "2", "--model", "rp,hp",
                  "--out", str(out), "--scheduler", scheduler)
    assert res.returncode == 0, res.stderr
    assert store.open_store(out).models == ["rp", "hp"]


def test_unreachable_scheduler_is_a_user_error(tmp_path):
    res = run_cli("build", "sbm:n=50", "--parts", "2", "--out", str(tmp_path / "x.zarr"),
                  "--scheduler", "tcp://127.0.0.1:9", timeout=120)
    assert res.returncode == 2 and "cannot connect to the Dask scheduler" in res.stderr
