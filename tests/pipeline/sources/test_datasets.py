"""Every registered dataset read from ../shared/datasets reproduces its published counts; the registry's
entries for the datasets not kept offline (OGB, GraphSAINT) name their files, URLs and hashes; a download
without network is one line."""

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import datasets, readers
from shgcn.pipeline.stages.ingest import to_graph

pytestmark = pytest.mark.dataset


OFFLINE = sorted(n for n, d in datasets.REGISTRY.items() if d.format not in ("ogb", "saint"))


@pytest.mark.parametrize("name", OFFLINE)
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


@pytest.mark.parametrize("name", ["ogbn-arxiv", "ogbn-products", "ogbn-papers100M", "reddit", "flickr", "yelp",
                                  "amazon"])
def test_registry_names_the_datasets_users_train_on(name):
    ds = datasets.lookup(name)
    assert ds.format in ("ogb", "saint") and ds.nodes > 0 and ds.edges > 0
    assert len(ds.hashes) == len(ds.urls) and all(u.startswith("https://") for u in ds.urls)
    assert all(f.startswith(ds.root + "/") for f in ds.files)
    if ds.format == "ogb":
        assert ds.archive == "zip" and ds.split_scheme and any(f"split/{ds.split_scheme}/" in f for f in ds.files)


def test_recorded_hashes_match_the_offline_copies(shared_data):
    """The sha256 recorded for a file is that of the byte-for-byte copy in ../shared/datasets."""
    import hashlib

    checked = 0
    for ds in datasets.REGISTRY.values():
        for rel, h in zip(ds.files, ds.hashes):
            if h is not None and (shared_data / rel).exists():
                assert hashlib.sha256((shared_data / rel).read_bytes()).hexdigest() == h, rel
                checked += 1
    assert checked >= 20


def test_download_without_network_is_one_line(tmp_path, monkeypatch):
    """No network (no host resolves here, and the URL is made unreachable anyway): one line, no partial files."""
    import dataclasses

    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ds = dataclasses.replace(datasets.lookup("flickr"), urls=("http://127.0.0.1:9/adj_full.npz",) * 4)
    with pytest.raises(UserError) as e:
        datasets.locate(ds, tmp_path / "data")
    msg = str(e.value)
    assert "\n" not in msg and "flickr" in msg and "download failed" in msg and "--data-dir" in msg
    assert not list((tmp_path / "cache").rglob("*.npz"))


def test_dataset_directory_found_in_the_data_dir(tmp_path, client):
    from helpers import datasets as fixtures

    fixtures.saint(tmp_path / "saint" / "flickr")
    ds = datasets.lookup("flickr")
    path = datasets.locate(ds, tmp_path, download=False)
    assert path == tmp_path / "saint" / "flickr"
    raw = readers.read(path, ds.format, client)
    assert raw.n == fixtures.N and raw.directed is False
