"""Every registered dataset read from ../shared/datasets reproduces its published counts."""

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import datasets, readers
from shgcn.pipeline.stages.ingest import to_graph

pytestmark = pytest.mark.dataset


@pytest.mark.parametrize("name", sorted(datasets.REGISTRY))
def test_published_counts(name, shared_data, client):
    ds = datasets.lookup(name)
    path = datasets.locate(ds, shared_data, download=False)
    raw = readers.read(path, ds.format, client)
    g = to_graph(raw, ds.directed)
    assert g.n == ds.nodes
    assert g.edges == ds.edges - ds.self_loops
    if ds.self_loops:  # published counts that include self-loop lines
        assert g.stats["self_loops"] == ds.self_loops
    if ds.directed:
        assert raw.lines == ds.edges


def test_planetoid_split_and_features(shared_data, client):
    raw = readers.read(shared_data / "planetoid" / "ind.cora.x", "planetoid", client)
    assert raw.features.shape == (2708, 1433)
    assert [int(m.sum()) for m in (raw.masks["train"], raw.masks["val"], raw.masks["test"])] == [140, 500, 1000]
    assert set(np.unique(raw.labels)) == set(range(7))


def test_citeseer_pads_missing_test_rows(shared_data, client):
    raw = readers.read(shared_data / "planetoid" / "ind.citeseer.x", "planetoid", client)
    assert raw.features.shape == (3327, 3703)
    # the 15 isolated test ids without a row have zero features and no label
    assert int((raw.labels < 0).sum()) == 15
    assert int((raw.features[raw.labels < 0].sum(1) == 0).all())


def test_pubmed_says_features_are_missing(shared_data, client):
    raw = readers.read(shared_data / "planetoid" / "ind.pubmed.x", "planetoid", client)
    assert raw.features is None and "allx is missing" in raw.notes[0]


def test_lookup_order_data_dir_then_env(tmp_path, monkeypatch, shared_data):
    ds = datasets.lookup("4elt")
    monkeypatch.setenv(datasets.ENV_VAR, str(shared_data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert datasets.locate(ds, None, download=False) == shared_data / "metis" / "4elt.graph"
    (tmp_path / "metis").mkdir()
    (tmp_path / "metis" / "4elt.graph").write_text("1 0\n\n")
    assert datasets.locate(ds, tmp_path, download=False) == tmp_path / "metis" / "4elt.graph"


def test_missing_dataset_file_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(UserError, match="not found under .*--data-dir"):
        datasets.locate(datasets.lookup("4elt"), tmp_path, download=False)


def test_unknown_dataset_lists_known_ones():
    with pytest.raises(UserError, match="known datasets: .*cora.*soc-slashdot0902"):
        datasets.lookup("nope")
