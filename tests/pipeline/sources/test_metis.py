"""METIS .graph files (pipeline/sources/metis.py): one adjacency line per vertex after the header, weights
skipped, and the header's sizes checked against the lines."""

import pytest
from helpers.reader_conformance import ReaderTests, pairs

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers
from shgcn.pipeline.sources.metis import metis_header
from shgcn.pipeline.sources.probe import Probe
from shgcn.pipeline.stages.ingest import to_graph


def write(tmp_path, name, text: bytes):
    p = tmp_path / name
    p.write_bytes(text)
    return p


class TestMetisReader(ReaderTests):
    fmt = "metis"
    edges = [(0, 1), (1, 0), (1, 2), (2, 1)]
    n, directed = 3, False

    def write(self, tmp_path):
        return write(tmp_path, "g.graph", b"% a path\n3 2\n2\n1 3\n2\n")

    def write_malformed(self, tmp_path):
        return write(tmp_path, "bad.graph", b"2 1\n2\n5\n"), ":3: neighbour id 5 outside 1..2"


def test_metis_graph_with_isolated_vertex(tmp_path, client):
    p = write(tmp_path, "g.graph", b"% comment\n4 2\n2\n1\n\n% another\n\n")
    raw = readers.read(p, None, client)
    assert raw.n == 4 and pairs(raw) == [(0, 1), (1, 0)]
    g = to_graph(raw, directed=False)
    assert g.n == 4 and g.edges == 1


def test_metis_edge_weights_are_skipped(tmp_path, client):
    p = write(tmp_path, "g.graph", b"3 2 001\n2 5 3 7\n1 5\n1 7\n")
    raw = readers.read(p, None, client)
    assert pairs(raw) == [(0, 1), (0, 2), (1, 0), (2, 0)]


def test_vertex_lines_across_chunks_are_numbered_globally(tmp_path, client):
    n = 600  # a ring: vertex i (1-based) next to i - 1 and i + 1
    lines = "".join(f"{(i - 2) % n + 1} {i % n + 1}\n" for i in range(1, n + 1))
    p = write(tmp_path, "ring.graph", f"{n} {n}\n{lines}".encode())
    raw = readers.read(p, None, client, chunk_bytes=512)
    assert pairs(raw) == sorted([(i, (i - 1) % n) for i in range(n)] + [(i, (i + 1) % n) for i in range(n)])


@pytest.mark.parametrize("text,msg", [
    (b"3 1\n2\n1\n", "declares 3 vertices but the file has 2"),
    (b"2 1\n2\n5\n", ":3: neighbour id 5 outside 1..2"),
    (b"2 1\n2\n1\n1\n", ":4: more adjacency lines than the 2 vertices in the header"),
    (b"% only a comment\n", "no METIS header line"),
    (b"3\n", ":1: METIS header needs 'n m'"),
    (b"2 1 100\n2\n1\n", ":1: METIS vertex sizes (fmt 1xx) are not supported"),
    (b"2 x\n2\n1\n", ":1: bad METIS header b'2 x'"),
])
def test_bad_input_names_file_line_and_problem(tmp_path, client, text, msg):
    p = write(tmp_path, "g.graph", text)
    with pytest.raises(UserError) as e:
        readers.read(p, None, client)
    assert msg in str(e.value) and str(p) in str(e.value)


def test_the_header_probe():
    text = b"% c\n5 4 011 2\n"
    pb = metis_header(Probe("g.graph", "metis", len(text)), text.splitlines(keepends=True))
    assert (pb.header_lines, pb.header_bytes, pb.n, pb.entries, pb.kind, pb.directed) == (2, 14, 5, 4, "adjacency",
                                                                                           False)
    assert pb.kwargs == {"max_id": 5, "base": 1, "stride": 2, "skip": 2}  # edge weights, two vertex weights
