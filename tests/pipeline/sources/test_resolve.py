"""A build's SOURCE to a source of futures (pipeline/sources/resolve.py): datasets, generators, files, dataset
directories named like a dataset, graphs in memory; the checks before any cluster starts."""

import numpy as np
import pytest
from helpers import datasets as fx

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.sources import datasets, resolve
from shgcn.pipeline.sources.base import ReadOptions


def test_is_path():
    assert resolve.is_path("g.txt") and resolve.is_path("data/ind.cora")
    assert not resolve.is_path("cora") and not resolve.is_path("Cora") and not resolve.is_path("rmat:scale=5")


def test_preflight_names_a_missing_source_and_a_missing_input(tmp_path):
    with pytest.raises(UserError) as e:
        resolve.preflight(str(tmp_path / "g.txt"), None)
    assert str(e.value) == (f"{tmp_path / 'g.txt'}: no such file, and not a known dataset "
                            f"({', '.join(sorted(datasets.REGISTRY))}) or rmat:/sbm: spec")
    resolve.preflight(str(tmp_path / "ind.cora"), None)  # a Planetoid prefix names files, not itself
    resolve.preflight("sbm:n=50", None)
    with pytest.raises(UserError, match=r"feats.npy: file not found$"):
        resolve.preflight("sbm:n=50", None, files=(str(tmp_path / "feats.npy"),))
    resolve.preflight(str(tmp_path / "nowhere.txt"), None, local=False)  # the workers' files: not this machine's


def test_read_source_of_every_kind(tmp_path, client):
    tasks = Tasks(client)
    try:
        gen = resolve.read_source(tasks, "rmat:scale=4,edge_factor=2,seed=1", None, None, None, ReadOptions())
        assert (gen.kind, gen.name, gen.directed_default, gen.feature_norm, gen.raw.lines) == (
            "generator", "rmat:scale=4,edge_factor=2,seed=1", True, "none", 32)
        mem = resolve.read_source(tasks, np.array([[0, 1], [1, 2]]), None, None, "row", ReadOptions())
        assert (mem.kind, mem.name, mem.feature_norm, mem.raw.n) == ("memory", "in-memory graph", "row", 3)
        f = fx.edge_list(tmp_path / "e.txt")
        file = resolve.read_source(tasks, str(f), None, None, None, ReadOptions())
        assert (file.kind, file.name, file.directed_default, file.raw.lines) == ("file", "e.txt", None, 7)
        d = fx.ogb_csv(tmp_path / "ogbn_arxiv")  # named like a registered dataset: read as arXiv is
        named = resolve.read_source(tasks, str(d), None, None, None, ReadOptions())
        assert (named.kind, named.name, named.directed_default) == ("dataset", "ogbn_arxiv", True)
        with pytest.raises(UserError, match="no such file, and not a known dataset"):
            resolve.read_source(tasks, str(tmp_path / "none.txt"), None, None, None, ReadOptions())
    finally:
        tasks.release()
