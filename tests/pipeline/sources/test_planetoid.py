"""Planetoid pickles (pipeline/sources/planetoid.py): a restricted unpickler that refuses code, test rows put
back at their ids, and the reader of ``ind.NAME.*`` files."""

import pickle
import re
from collections import defaultdict

import numpy as np
import pytest
from helpers.reader_conformance import ReaderTests

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import planetoid

GRAPH = {0: [1], 1: [0, 2], 2: [1, 3], 3: [2]}  # a path of 4 vertices; 2 and 3 are the test vertices


def write_planetoid(d, name="tiny", allx=True):
    """``ind.<name>.*``: vertex 0 labelled for training, 0 and 1 in allx/ally, test ids 3 then 2 in tx/ty."""
    arrays = {"x": np.array([[1, 0]], np.float32), "y": np.array([[1, 0]]),
              "allx": np.array([[1, 0], [0, 1]], np.float32), "ally": np.array([[1, 0], [0, 1]]),
              "tx": np.array([[3, 3], [2, 2]], np.float32), "ty": np.array([[0, 1], [1, 0]]),
              "graph": defaultdict(list, GRAPH)}
    for ext, obj in arrays.items():  # protocol 4: in protocol 2 Python 3 pickles an array's bytes with _codecs
        if ext != "allx" or allx:
            (d / f"ind.{name}.{ext}").write_bytes(pickle.dumps(obj, protocol=4))
    (d / f"ind.{name}.test.index").write_text("3\n2\n")
    return d / f"ind.{name}.graph"


class TestPlanetoidReader(ReaderTests):
    fmt = "planetoid"
    edges = [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)]
    n, directed = 4, False

    def write(self, tmp_path):
        return write_planetoid(tmp_path)  # ind.tiny.graph: Planetoid's, though METIS files end in .graph too

    def write_malformed(self, tmp_path):
        p = tmp_path / "ind.bad.graph"
        p.write_bytes(pickle.dumps([1, 2], protocol=2))
        return p, "expected a dict of adjacency lists"


def test_test_rows_go_back_to_their_ids(tmp_path):
    write_planetoid(tmp_path)
    g = planetoid.read_planetoid(str(tmp_path / "ind.tiny"))
    np.testing.assert_array_equal(g.features, [[1, 0], [0, 1], [2, 2], [3, 3]])
    np.testing.assert_array_equal(g.labels, [0, 1, 0, 1])
    assert g.masks["train"].tolist() == [True, False, False, False]
    assert g.masks["test"].tolist() == [False, False, True, True]
    assert g.node_ids.tolist() == [0, 1, 2, 3] and g.notes == []


def test_any_file_of_the_set_names_it_and_allx_may_be_missing(tmp_path):
    write_planetoid(tmp_path, allx=False)
    g = planetoid.read_planetoid(str(tmp_path / "ind.tiny.ty"))
    assert g.features is None and g.labels.tolist() == [0, 1, 0, 1]
    assert g.notes == [f"{tmp_path / 'ind.tiny'}.allx is missing: only 3 of 4 vertices have features; "
                       "use --features random:D"]


def test_the_whole_task_keeps_the_node_data(tmp_path):
    write_planetoid(tmp_path)
    w = planetoid.read_planetoid_whole(str(tmp_path / "ind.tiny"))
    assert w.n == 4 and w.directed is False and w.chunk.n_lines == 6
    np.testing.assert_array_equal(w.nodes.labels, [0, 1, 0, 1])


class _Evil:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned > /dev/null",))


def test_planetoid_unpickler_refuses_code(tmp_path):
    p = tmp_path / "ind.evil.graph"
    p.write_bytes(pickle.dumps(_Evil(), protocol=2))
    with pytest.raises(UserError, match="forbidden global"):
        planetoid.load_pickle(p)


def test_planetoid_unpickler_loads_allowed_types(tmp_path):
    p = tmp_path / "ind.x.graph"
    p.write_bytes(pickle.dumps(defaultdict(list, {0: [1], 1: [0]}), protocol=2))
    assert planetoid.load_pickle(p) == {0: [1], 1: [0]}


def test_a_neighbour_outside_the_graph_is_one_line(tmp_path):
    write_planetoid(tmp_path)
    (tmp_path / "ind.tiny.graph").write_bytes(pickle.dumps({0: [1], 1: [0, 9], 2: [1], 3: [2]}, protocol=2))
    with pytest.raises(UserError, match=r"ind.tiny.graph: neighbour id outside 0..3"):
        planetoid.read_planetoid(str(tmp_path / "ind.tiny"))


def test_a_prefix_names_its_files_and_the_precheck_opens_the_graph_file(tmp_path):
    """``DIR/ind.tiny`` (or any of its files) need not exist itself: the reader says so, and its check before a
    build names the graph file it would open first."""
    assert planetoid.READER.names_files
    assert planetoid.files_base(str(tmp_path / "ind.tiny.ty")) == planetoid.files_base(str(tmp_path / "ind.tiny")) \
        == tmp_path / "ind.tiny"
    with pytest.raises(UserError, match=f"^{re.escape(str(tmp_path / 'ind.tiny.graph'))}: file not found$"):
        planetoid.READER.precheck(str(tmp_path / "ind.tiny"), None)
    write_planetoid(tmp_path)
    planetoid.READER.precheck(str(tmp_path / "ind.tiny.x"), None)
