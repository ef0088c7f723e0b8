"""OGB node-property directories written by hand (CSV layout, npz layout stored and deflated) give the same
graph, features, labels and split as the same data from an edge list; bad ones give one line and exit 2."""

import gzip

import numpy as np
import pytest
from helpers import build_cli, one_line
from helpers import datasets as fx
from helpers.reader_conformance import ReaderTests

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers, registry
from shgcn.pipeline.stages.ingest import to_graph


class TestOgbReader(ReaderTests):
    fmt = "ogb"
    edges = fx.EDGES  # each undirected pair once, as OGB stores it
    n, directed = fx.N, None

    def write(self, tmp_path):
        return fx.ogb_csv(tmp_path / "ogbn_thing")

    def write_malformed(self, tmp_path):
        d = fx.ogb_csv(tmp_path / "bad")
        (d / "raw" / "edge.csv.gz").write_bytes(gzip.compress(b"0,1\n0,7\n"))
        return d, "beyond the declared size 7"


@pytest.mark.parametrize("layout, expected", [
    (("raw/edge.csv.gz",), "ogb"), (("raw/data.npz",), "ogb"),
    (("raw/",), "ogb"), (("split/random/",), "ogb"),  # a directory that lacks its edges: the reader names them
    (("raw/", "adj_full.npz"), "saint"),  # files name a format before folders do
    (("raw/edge.csv", "role.json"), "ogb"),
    (("ind.cora.x",), "planetoid"),  # any other directory
])
def test_what_makes_a_directory_an_ogb_one(tmp_path, layout, expected):
    for f in layout:
        p = tmp_path / "d" / f
        if f.endswith("/"):
            p.mkdir(parents=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"")
    assert registry.detect(tmp_path / "d") == expected


def expected_adj():
    from helpers.graphs import graph

    return graph(fx.N, fx.EDGES).adj


def check_same(raw, multi=False):
    g = to_graph(raw, directed=False)
    assert g.n == fx.N
    assert (g.adj != expected_adj()).nnz == 0
    np.testing.assert_array_equal(raw.features, fx.FEATURES)
    np.testing.assert_array_equal(raw.labels, fx.MULTI if multi else fx.LABELS)
    for k, m in fx.masks().items():
        np.testing.assert_array_equal(raw.masks[k], m)


@pytest.mark.parametrize("layout", ["csv", "npz-deflated", "npz-stored"])
def test_layouts_equal_the_edge_list(tmp_path, client, layout):
    d = tmp_path / "ogbn_thing"
    if layout == "csv":
        fx.ogb_csv(d)
    else:
        fx.ogb_npz(d, compressed=layout == "npz-deflated")
    raw = readers.read(d, None, client)
    check_same(raw)
    # the same edges as the plain edge list (which cannot hold the isolated vertex 6)
    plain = readers.read(fx.edge_list(tmp_path / "e.txt"), None, client)
    assert sorted(zip(raw.src.tolist(), raw.dst.tolist())) == sorted(zip(plain.src.tolist(), plain.dst.tolist()))


def test_multi_label_columns(tmp_path, client):
    raw = readers.read(fx.ogb_csv(tmp_path / "m", multi=True), None, client)
    check_same(raw, multi=True)
    assert raw.labels.dtype == bool


def test_many_chunks_and_a_file_without_split(tmp_path, client):
    """Edges parsed in many chunks (text) or slices (npz) equal the whole; no split/: a random split later."""
    rng = np.random.default_rng(3)
    e = rng.integers(0, 500, size=(4000, 2))
    raw_dir = tmp_path / "csv" / "raw"
    raw_dir.mkdir(parents=True)
    (raw_dir / "edge.csv.gz").write_bytes(gzip.compress("".join(f"{a},{b}\n" for a, b in e).encode()))
    (raw_dir / "num-node-list.csv.gz").write_bytes(gzip.compress(b"500\n"))
    npz_dir = tmp_path / "npz" / "raw"
    npz_dir.mkdir(parents=True)
    np.savez_compressed(npz_dir / "data.npz", edge_index=e.T.copy(), num_nodes_list=np.array([500]))
    for d in (tmp_path / "csv", tmp_path / "npz"):
        raw = readers.read(d, None, client, chunk_bytes=1024)
        assert raw.n == 500 and raw.masks is None and raw.features is None
        np.testing.assert_array_equal(np.stack([raw.src, raw.dst], 1), e)


def test_split_scheme_is_chosen(tmp_path, client):
    d = fx.ogb_csv(tmp_path / "s")
    (d / "split" / "random").rename(d / "split" / "time")
    fx._split(d, "species")
    with pytest.raises(UserError, match="several split schemes \\(species, time\\): choose one with --split-scheme"):
        readers.read(d, None, client)
    raw = readers.read(d, None, client, split_scheme="time")
    assert raw.masks["train"].sum() == len(fx.TRAIN)


@pytest.mark.parametrize("damage, fragments", [
    ("missing", ["raw/edge.csv.gz", "file not found"]),
    ("short-features", ["node-feat.csv.gz", "6 feature rows, but the graph has 7 vertices"]),
    ("ragged-features", ["node-feat.csv.gz:4:", "expected 3 comma-separated values, found 2"]),
    ("id-out-of-range", ["edge.csv.gz:2:", "beyond the declared size 7"]),
    ("split-out-of-range", ["split/random/test.csv.gz", "vertex id 9 outside 0..6"]),
])
def test_bad_directories_are_one_line(tmp_path, client, damage, fragments):
    d = fx.ogb_csv(tmp_path / "bad")
    raw = d / "raw"
    if damage == "missing":
        (raw / "edge.csv.gz").unlink()
    elif damage == "short-features":
        (raw / "node-feat.csv.gz").write_bytes(gzip.compress(fx._floats(fx.FEATURES[:6]).encode()))
    elif damage == "ragged-features":
        lines = fx._floats(fx.FEATURES).splitlines()
        lines[3] = lines[3].rsplit(",", 1)[0]
        (raw / "node-feat.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    elif damage == "id-out-of-range":
        (raw / "edge.csv.gz").write_bytes(gzip.compress(b"0,1\n0,7\n"))
    else:
        (d / "split" / "random" / "test.csv.gz").write_bytes(gzip.compress(b"4\n9\n"))
    with pytest.raises(UserError) as e:
        readers.read(d, None, client)
    assert "\n" not in str(e.value)
    for f in fragments:
        assert f in str(e.value)


@pytest.mark.slow
def test_cli_unknown_split_scheme_and_wrong_shape_exit_2(tmp_path):
    d = fx.ogb_npz(tmp_path / "papers")
    one_line(build_cli(str(d), "--parts", "2", "--out", str(tmp_path / "o.zarr"), "--split-scheme", "time"),
             "no split scheme 'time'", "it has random", "--split-scheme")
    np.savez_compressed(d / "raw" / "data.npz", edge_index=np.zeros((3, 2), np.int64), num_nodes_list=np.array([7]))
    one_line(build_cli(str(d), "--parts", "2", "--out", str(tmp_path / "o.zarr")),
             "data.npz", "edge_index has shape (3, 2); expected (2, E)")
    assert not (tmp_path / "o.zarr").exists()


def _labels_csv(d, values):
    (d / "raw" / "node-label.csv.gz").write_bytes(gzip.compress("".join(f"{v}\n" for v in values).encode()))


@pytest.mark.parametrize("layout", ["csv", "npz"])
def test_a_negative_label_is_refused_for_ogbs_unlabelled_is_nan(tmp_path, client, layout):
    labels = [("nan" if y < 0 else str(y)) for y in fx.LABELS]
    labels[3] = "-3"
    if layout == "csv":
        d = fx.ogb_csv(tmp_path / "o")
        _labels_csv(d, labels)
        where = d / "raw" / "node-label.csv.gz"
    else:
        d = fx.ogb_npz(tmp_path / "o")
        where = d / "raw" / "node-label.npz"
        np.savez_compressed(where, node_label=np.array([float(v) for v in labels], np.float32)[:, None])
    with pytest.raises(UserError) as e:
        readers.read(d, None, client)
    assert str(e.value) == f"{where}: row 3: label -3.0 is not a class number (whole, 0 to 2,147,483,646; unlabelled is NaN)"


def test_an_empty_training_split_is_refused(tmp_path, client):
    d = fx.ogb_csv(tmp_path / "o")
    train = d / "split" / "random" / "train.csv.gz"
    train.write_bytes(gzip.compress(b""))
    with pytest.raises(UserError) as e:
        readers.read(d, None, client)
    assert str(e.value) == f"{train}: an empty training split (no vertex ids): nothing to train on"


def test_a_training_split_without_a_label_is_refused(tmp_path, client):
    d = fx.ogb_csv(tmp_path / "o")
    train = sorted(fx.TRAIN)
    _labels_csv(d, ["nan" if (i in train or y < 0) else str(y) for i, y in enumerate(fx.LABELS)])
    with pytest.raises(UserError) as e:
        readers.read(d, None, client)
    assert str(e.value) == (f"{d / 'raw' / 'node-label.csv.gz'}: none of the {len(train)} training vertices has a "
                            "label (NaN): nothing to train on")
    _labels_csv(d, ["nan" if (i in train[1:] or y < 0) else str(y) for i, y in enumerate(fx.LABELS)])
    assert readers.read(d, None, client).masks["train"].sum() == len(train)  # one labelled training vertex: enough


def test_an_empty_training_split_ends_the_build_in_one_line(tmp_path):
    d = fx.ogb_csv(tmp_path / "o")
    train = d / "split" / "random" / "train.csv.gz"
    train.write_bytes(gzip.compress(b""))
    res = build_cli(str(d), "--parts", "2", "--out", str(tmp_path / "s.zarr"))
    one_line(res, f"{train}: an empty training split (no vertex ids): nothing to train on")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


@pytest.mark.parametrize("compressed", [True, False])
def test_a_feature_beyond_float32_is_one_line_without_numpys_warning(tmp_path, compressed):
    d = fx.ogb_npz(tmp_path / "o", compressed=compressed)
    x = fx.FEATURES.astype(np.float64)
    x[2, 0] = 1e39
    save = np.savez_compressed if compressed else np.savez
    save(d / "raw" / "data.npz", edge_index=np.array(fx.EDGES, np.int64).T.copy(), num_nodes_list=np.array([fx.N]),
         num_edges_list=np.array([len(fx.EDGES)]), node_feat=x)
    res = build_cli(str(d), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, "o: non-finite feature at vertex 2, column 0 (NaN, infinity, or beyond float32's range)")
    assert "RuntimeWarning" not in res.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["o"]
