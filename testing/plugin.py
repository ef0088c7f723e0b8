"""``shgcn.testing`` as a pytest plugin (entry point ``pytest11``: pytest loads it wherever shgcn is
installed, with no conftest.py): the marks the conformance classes use, the fixtures they ask for and the
hook that picks their quick cases. A test file of your own part is its conformance subclass and nothing else.

- marks: ``mpi`` (runs mpirun in a subprocess) and ``slow`` (more than a few seconds); pytest knows them,
  so it warns of neither;
- fixtures: ``client`` (an in-process Dask cluster, for the readers' and the trainer's classes), ``sbm_graph``
  (the partition models' sample graph) and ``mpi_stores`` (the stores the trainer's classes train on);
- hook: :func:`shgcn.testing.quick.pytest_collection_modifyitems` (a class's ``quick`` cases run in the quick
  suite, its other MPI cases are slow).

It imports nothing of shgcn until a fixture is asked for (pytest loads it in every run). ``-p no:shgcn``
turns it off.
"""

from __future__ import annotations

import pytest

from .quick import pytest_collection_modifyitems  # noqa: F401 - the hook, registered with this plugin

MARKS = {
    "mpi": "runs mpirun in a subprocess (shgcn.testing)",
    "slow": "takes more than a few seconds; deselect with -m 'not slow' (shgcn.testing)",
}


def pytest_configure(config) -> None:
    for name, text in MARKS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


@pytest.fixture(scope="session")
def client():
    """An in-process Dask cluster for the session (one worker of two threads)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def sbm_graph():
    """(Â, A's pattern) of a 400-vertex SBM with 4 communities: what the partition models' class partitions."""
    from shgcn.pipeline.sources.synthetic import sbm
    from shgcn.pipeline.stages.ingest import to_graph
    from shgcn.pipeline.stages.normalize import normalized_adjacency

    g = to_graph(sbm(n=400, classes=4, degree=8, seed=3), directed=False)
    return normalized_adjacency(g.adj, False), g.adj


@pytest.fixture(scope="session")
def mpi_stores(tmp_path_factory, client):
    """One store per (graph kind, P in 1, 2, 4) for the MPI tests, laid out by hp, with rp beside it; built
    once (:func:`shgcn.testing.runs.build_stores`)."""
    from .runs import build_stores

    return build_stores(tmp_path_factory.mktemp("mpi-stores"), client)
