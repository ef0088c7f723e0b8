"""Every registered dataset read from ../shared/datasets reproduces its published counts; the registry's
entries for the datasets not kept offline (the paper's SNAP and SuiteSparse graphs, OGB, GraphSAINT) name their
files, URLs, readers and hashes; a missing dataset without network is one line naming its URL and the path to
put it at; a file placed there builds by name and is compared with the published counts."""

import dataclasses
import gzip
import re

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import datasets, fetch, readers, registry
from shgcn.pipeline.stages.ingest import to_graph

pytestmark = pytest.mark.dataset

# the datasets kept in ../shared/datasets (its README)
OFFLINE = ["4elt", "ca-astroph", "citeseer", "cora", "delaunay-n16", "facebook", "luxembourg-osm", "pubmed",
           "soc-slashdot0902"]


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


# name: (publisher, directed, vertices, edges, features, classes), as published (written out again here on purpose)
PUBLISHED = {
    "amazon0601": ("SNAP", True, 403394, 3387388, 0, 0),
    "cit-Patents": ("SNAP", True, 3774768, 16518948, 0, 0),
    "com-Amazon": ("SNAP", False, 334863, 925872, 0, 0),
    "com-Youtube": ("SNAP", False, 1134890, 2987624, 0, 0),
    "roadNet-CA": ("SNAP", False, 1965206, 2766607, 0, 0),
    "coPapersDBLP": ("SuiteSparse", False, 540486, 15245729, 0, 0),
    "flickr-gleich": ("SuiteSparse", True, 820878, 9837214, 0, 0),
    "flickr": ("GraphSAINT", False, 89250, 899756, 500, 7),
    "reddit": ("GraphSAINT", False, 232965, 11606919, 602, 41),
    "ogbn-products": ("OGB", False, 2449029, 61859140, 100, 47),
    "ogbn-papers100M": ("OGB", True, 111059956, 1615685872, 128, 172),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_the_papers_graphs_and_the_large_benchmarks_by_name(name):
    ds = datasets.lookup(name.upper())  # names are matched without case
    assert ds.name == name
    assert (ds.publisher, ds.directed, ds.nodes, ds.edges, ds.features, ds.classes) == PUBLISHED[name]


@pytest.mark.parametrize("name", sorted(datasets.REGISTRY))
def test_every_entry_is_well_formed(name):
    ds = datasets.REGISTRY[name]
    assert name == ds.name.lower() and ds.nodes > 0 and ds.edges > 0 and 0 <= ds.self_loops < ds.edges
    assert ds.features >= 0 and ds.classes >= 0 and (ds.size is None or ds.size > 0)
    assert ds.format in registry.formats() and registry.get(ds.format) is not None
    assert ds.files and all(not f.startswith("/") and ".." not in f.split("/") for f in ds.files)
    assert ds.urls and all(u.startswith("https://") for u in ds.urls)
    assert len(ds.urls) == (1 if ds.archive == "zip" else len(ds.files))
    assert len(ds.hashes) == len(ds.urls) and all(h is None or re.fullmatch("[0-9a-f]{64}", h) for h in ds.hashes)
    assert ds.publisher in ("Planetoid", "SNAP", "NetRepo", "SuiteSparse", "METIS", "OGB", "GraphSAINT")
    assert ds.description and "\n" not in ds.description


def _offline(monkeypatch, tmp_path, fails=True):
    """No network: the downloader raises as requests does when no host resolves; returns the URLs asked for."""
    asked = []

    class ConnectionError(OSError):  # requests' name, which fetch.reason recognises
        pass

    def download(ds, target):
        asked.append(ds.urls)
        raise ConnectionError("Max retries exceeded")

    monkeypatch.setattr(fetch, "download", download)
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return asked


@pytest.mark.parametrize("name, url, path", [
    ("amazon0601", "https://snap.stanford.edu/data/amazon0601.txt.gz", "snap/amazon0601.txt.gz"),
    ("com-Youtube", "https://snap.stanford.edu/data/bigdata/communities/com-youtube.ungraph.txt.gz",
     "snap/com-youtube.ungraph.txt.gz"),
    ("coPapersDBLP", "https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/coPapersDBLP.tar.gz",
     "suitesparse/coPapersDBLP.mtx"),
    ("ogbn-products", "https://snap.stanford.edu/ogb/data/nodeproppred/products.zip", "ogb/ogbn_products"),
])
def test_a_missing_dataset_without_network_names_its_url_and_where_to_put_it(tmp_path, monkeypatch, name, url, path):
    asked = _offline(monkeypatch, tmp_path)
    with pytest.raises(UserError) as e:
        datasets.locate(datasets.lookup(name), tmp_path / "data")
    msg = str(e.value)
    assert "\n" not in msg and f"dataset '{datasets.lookup(name).name}'" in msg
    assert "download failed (the network is unavailable)" in msg
    assert f"download {url} " in msg and f"{tmp_path / 'data' / path}" in msg and "--data-dir" in msg
    assert asked == [(url,)] and not (tmp_path / "cache" / "shgcn").exists()  # no empty directories left


def test_the_message_names_only_the_files_still_missing(tmp_path, monkeypatch):
    _offline(monkeypatch, tmp_path)
    (tmp_path / "saint" / "reddit").mkdir(parents=True)
    (tmp_path / "saint" / "reddit" / "feats.npy").write_bytes(b"")
    with pytest.raises(UserError) as e:
        datasets.locate(datasets.lookup("reddit"), tmp_path)
    msg = str(e.value)
    assert msg.count("; download https://docs.google.com/") == 3 and "feats.npy" not in msg
    assert f"to {tmp_path / 'saint' / 'reddit' / 'adj_full.npz'}" in msg
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "env"))  # no --data-dir: the first directory looked in
    with pytest.raises(UserError, match=re.escape(f"to {tmp_path / 'env' / 'snap' / 'roadNet-CA.txt.gz'}")):
        datasets.locate(datasets.lookup("roadnet-ca"), None, download=False)


def test_found_in_the_first_directory_holding_every_file(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ds = datasets.lookup("com-amazon")
    assert datasets.found_in(ds, tmp_path / "data") is None
    for d in (tmp_path / "env", tmp_path / "data"):
        (d / "snap").mkdir(parents=True)
        (d / ds.files[0]).write_bytes(b"")
        assert datasets.found_in(ds, tmp_path / "data") == d
    assert datasets.locate(ds, tmp_path / "data") == tmp_path / "data" / "snap" / "com-amazon.ungraph.txt.gz"


def test_count_mismatch_is_said_with_both_counts():
    ds = datasets.lookup("roadNet-CA")
    assert datasets.count_mismatch(ds, 1965206, 2766607, False) is None
    assert datasets.count_mismatch(ds, 1965206, 5533214, True) is None  # read otherwise than published: n only
    msg = datasets.count_mismatch(ds, 1965206, 2766000, False)
    assert msg is not None and "roadNet-CA" in msg and "2,766,000" in msg and "SNAP publishes 1,965,206 and 2,766,607" in msg
    assert datasets.count_mismatch(ds, 1965205, 5533214, True) is not None
    slash = datasets.lookup("soc-slashdot0902")
    assert datasets.count_mismatch(slash, 82168, 948464 - 78303, True) is None
    assert "less 78,303 self loops" in datasets.count_mismatch(slash, 82168, 948464, True)


SNAP_FILE = ("# Undirected graph: ../../data/output/amazon.ungraph.txt\n# Amazon\n# Nodes: 6 Edges: 7\n"
             "# FromNodeId\tToNodeId\n1\t88160\n1\t118052\n88160\t118052\n118052\t161555\n161555\t551\n551\t7\n7\t1\n")


def test_a_file_under_the_data_dir_builds_by_name_and_is_compared_with_the_counts(tmp_path, monkeypatch, client,
                                                                                   caplog):
    from shgcn import store
    from shgcn.pipeline import api

    _offline(monkeypatch, tmp_path)
    (tmp_path / "data" / "snap").mkdir(parents=True)
    (tmp_path / "data" / "snap" / "com-amazon.ungraph.txt.gz").write_bytes(gzip.compress(SNAP_FILE.encode()))
    tiny = dataclasses.replace(datasets.lookup("com-Amazon"), nodes=6, edges=7)
    monkeypatch.setitem(datasets.REGISTRY, "com-amazon", tiny)
    with caplog.at_level("WARNING"):
        r = api.build("com-Amazon", parts=2, out=str(tmp_path / "a.zarr"), models=("rp",), client=client,
                      data_dir=str(tmp_path / "data"))
    s = store.open_store(r.path)
    assert (s.attrs["n"], s.attrs["edges"], s.attrs["directed"]) == (6, 7, False) and s.attrs["notes"] == []
    assert "publishes" not in caplog.text
    monkeypatch.setitem(datasets.REGISTRY, "com-amazon", dataclasses.replace(tiny, edges=925872))
    with caplog.at_level("WARNING"):
        r = api.build("com-amazon", parts=2, out=str(tmp_path / "b.zarr"), models=("rp",), client=client,
                      data_dir=str(tmp_path / "data"))
    said = "com-Amazon: read 6 vertices and 7 undirected edges, but SNAP publishes 6 and 925,872"
    assert said in caplog.text and any(said in n for n in store.open_store(r.path).attrs["notes"])
