"""GraphSAINT directories written by hand give the same graph, features, labels (single- and multi-label)
and split as the same data from an edge list; bad ones give one line and exit 2."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import build_cli, one_line
from helpers import datasets as fx
from helpers.graphs import graph
from helpers.reader_conformance import ReaderTests

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers
from shgcn.pipeline.stages.ingest import to_graph


class TestSaintReader(ReaderTests):
    fmt = "saint"
    edges = [*fx.EDGES, *((b, a) for a, b in fx.EDGES)]  # adj_full.npz holds both directions
    n, directed = fx.N, False

    def write(self, tmp_path):
        return fx.saint(tmp_path / "flickr")

    def write_malformed(self, tmp_path):
        d = fx.saint(tmp_path / "bad")
        (d / "role.json").write_text(json.dumps({"tr": fx.TRAIN, "va": fx.VALID}))
        return d, "no 'te' list"


def test_either_file_names_a_saint_directory(tmp_path):
    from shgcn.pipeline.sources import registry

    for f in ("adj_full.npz", "role.json"):
        (tmp_path / f[:3]).mkdir()
        (tmp_path / f[:3] / f).write_bytes(b"")
        assert registry.detect(tmp_path / f[:3]) == "saint"  # the reader then names any file that is missing


@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize("compressed", [True, False])
def test_equals_the_edge_list(tmp_path, client, multi, compressed):
    d = fx.saint(tmp_path / "flickr", multi=multi)
    if not compressed:  # the adjacency stored uncompressed: read in place, row range by row range
        sp.save_npz(d / "adj_full.npz", sp.load_npz(d / "adj_full.npz"), compressed=False)
    raw = readers.read(d, None, client, chunk_bytes=1024)
    assert raw.n == fx.N and raw.directed is False
    g = to_graph(raw, directed=False)
    assert (g.adj != graph(fx.N, fx.EDGES).adj).nnz == 0
    np.testing.assert_array_equal(raw.features, fx.FEATURES)
    np.testing.assert_array_equal(raw.labels, fx.MULTI if multi else fx.LABELS)
    for k, m in fx.masks().items():
        np.testing.assert_array_equal(raw.masks[k], m)


def test_class_map_in_many_blocks(tmp_path):
    """A class map parsed in blocks of a few bytes equals json.load's."""
    from shgcn.pipeline.sources.saint import class_map

    rng = np.random.default_rng(0)
    for multi in (False, True):
        y = rng.integers(0, 2, (50, 5)) if multi else rng.integers(0, 9, 50)
        cmap = {str(i): (row.tolist() if multi else int(row)) for i, row in zip(rng.permutation(50), y)}
        (tmp_path / "c.json").write_text(json.dumps(cmap))
        rf, classes, kind = class_map(str(tmp_path / "c.json"), 50, tmp_path / f"y{multi}", chunk_bytes=7)
        want = np.zeros((50, 5), bool) if multi else np.full(50, -1)
        for k, v in cmap.items():
            want[int(k)] = v
        np.testing.assert_array_equal(rf.read(), want)
        assert kind == ("multi" if multi else "single") and classes == (5 if multi else int(y.max()) + 1)


@pytest.mark.parametrize("damage, fragments", [
    ("missing", ["role.json", "file not found"]),
    ("wrong-shape", ["feats.npy", "features of shape (6, 3), but adj_full.npz has 7 vertices"]),
    ("no-test-role", ["role.json", "no 'te' list"]),
    ("class-map-id", ["class_map.json", "vertex 12 outside 0..6"]),
])
def test_bad_directories_are_one_line(tmp_path, client, damage, fragments):
    d = fx.saint(tmp_path / "bad")
    if damage == "missing":
        (d / "role.json").unlink()
    elif damage == "wrong-shape":
        np.save(d / "feats.npy", fx.FEATURES[:6])
    elif damage == "no-test-role":
        (d / "role.json").write_text(json.dumps({"tr": fx.TRAIN, "va": fx.VALID}))
    else:
        (d / "class_map.json").write_text('{"0": 1, "12": 0}')
    with pytest.raises(UserError) as e:
        readers.read(d, None, client)
    assert "\n" not in str(e.value)
    for f in fragments:
        assert f in str(e.value)


def test_cli_wrong_shape_exits_2(tmp_path):
    d = fx.saint(tmp_path / "yelp", multi=True)
    np.save(d / "feats.npy", np.zeros((fx.N, 3, 2)))
    one_line(build_cli(str(d), "--parts", "2", "--out", str(tmp_path / "o.zarr")),
             "feats.npy", "features of shape (7, 3, 2)")
    assert not (tmp_path / "o.zarr").exists()
