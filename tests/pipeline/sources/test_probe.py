"""Looking at a path before reading it (pipeline/sources/probe.py): the one place that decides a path's format,
by the readers' claims and their precedence; the file checks and header helpers the readers share."""

import gzip

import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import probe, registry
from shgcn.pipeline.sources.base import Recognizes


@pytest.mark.parametrize("name, fmt", [
    ("g.mtx", "mtx"), ("G.MTX.gz", "mtx"), ("g.graph", "metis"), ("g.metis", "metis"), ("g.npz", "npz"),
    ("ind.cora.graph", "planetoid"),  # Planetoid's graph file, not a METIS one
    ("ind.cora.x", "planetoid"), ("ind.cora", "planetoid"), ("ind.cora.mtx", "mtx"),  # a format's own suffix first
    ("g.txt", "edgelist"), ("g.txt.gz", "edgelist"), ("g.csv", "edgelist"), ("g.tsv", "edgelist"),
    ("g.el", "edgelist"), ("g.edges", "edgelist"), ("g.edgelist", "edgelist"), ("soc-edges", "edgelist"),
])
def test_file_names_of_the_registered_formats(tmp_path, name, fmt):
    assert registry.detect(tmp_path / name) == fmt  # the file need not exist: names decide


def test_an_unclaimed_name_lists_the_formats(tmp_path):
    with pytest.raises(UserError) as e:
        registry.detect(tmp_path / "g.xyz")
    assert str(e.value) == (f"{tmp_path / 'g.xyz'}: unknown format; pass --format, one of edgelist, mtx, metis, npz, "
                            "planetoid, ogb, saint")


class Claims:
    """A reader that only claims (detect_format reads nothing else)."""

    def __init__(self, name, **claims):
        self.name, self.recognizes = name, Recognizes(**claims)


def test_the_precedence_of_claims(tmp_path):
    readers = [Claims("loose", loose=(".dat",), bare=True), Claims("prefix", prefixes=("p.",)),
               Claims("sure", suffixes=(".dat",), unless=("q.",)), Claims("files", files=("x/y",)),
               Claims("folders", folders=("x",)), Claims("any", directory=True)]
    detect = lambda p: probe.detect_format(tmp_path / p, readers)
    assert detect("a.dat") == "sure" and detect("q.a.dat") == "loose"  # a sure suffix before a loose one, but not q.
    assert detect("p.a.dat") == "sure" and detect("p.a.txt") == "prefix" and detect("abc") == "loose"
    (tmp_path / "d.dat").mkdir()
    assert detect("d.dat") == "sure"  # a sure suffix names a directory too
    (tmp_path / "d" / "x").mkdir(parents=True)
    assert detect("d") == "folders"
    (tmp_path / "d" / "x" / "y").write_text("")
    assert detect("d") == "files"  # files before folders
    (tmp_path / "e").mkdir()
    assert detect("e") == "any"
    with pytest.raises(UserError, match="unknown format"):
        probe.detect_format(tmp_path / "e", readers[:-1])  # a directory no reader claims


def test_check_file(tmp_path):
    with pytest.raises(UserError, match="^" + str(tmp_path / "no.txt") + ": file not found$"):
        probe.check_file(str(tmp_path / "no.txt"), "edgelist")
    with pytest.raises(UserError, match="is a directory, expected a mtx file$"):
        probe.check_file(str(tmp_path), "mtx")
    (tmp_path / "e.txt").write_bytes(b"")
    with pytest.raises(UserError, match="e.txt: empty file$"):
        probe.check_file(str(tmp_path / "e.txt"), "edgelist")
    (tmp_path / "g.txt").write_bytes(b"0 1\n")
    assert probe.check_file(str(tmp_path / "g.txt"), "edgelist") == 4
    probe.readable(tmp_path)  # a directory: nothing to say


def test_probe_sees_size_and_compression(tmp_path):
    p = tmp_path / "g.txt"
    p.write_bytes(b"0 1\n1 2\n")
    assert probe.probe(str(p), "edgelist") == probe.Probe(str(p), "edgelist", 8)
    z = tmp_path / "g.txt.gz"
    z.write_bytes(gzip.compress(b"0 1\n"))
    pb = probe.probe(str(z), "edgelist")
    assert pb.gzip and pb.members is None and pb.size == z.stat().st_size


def test_head_lines_and_int_words(tmp_path):
    z = tmp_path / "h.gz"
    z.write_bytes(gzip.compress(b"% c\n3 2\n"))
    assert probe.head_lines(str(z), True) == [b"% c\n", b"3 2\n"]
    z.write_bytes(gzip.compress(b"x" * 1000)[:20])
    with pytest.raises(UserError, match="truncated gzip file"):
        probe.head_lines(str(z), True)
    assert probe.int_words(b"3 2 011\n", "f", 1, "header") == [3, 2, 11]
    with pytest.raises(UserError, match=r"^f:7: bad header b'3 x'$"):
        probe.int_words(b"3 x\n", "f", 7, "header")


def test_check_declared(tmp_path):
    with pytest.raises(UserError, match=r"^f:2: declared size 0: a graph needs at least one vertex$"):
        probe.check_declared("f", 0, 2)
    with pytest.raises(UserError, match="declared edge count -1: must not be negative"):
        probe.check_declared("f", 5, 1, None, -1)
    with pytest.raises(UserError, match=r"the declared size \(1,000 vertices, 5,000 edges\)"):
        probe.check_declared("f", 1000, 1, 1000, 5000)  # a budget of 1000 bytes
    probe.check_declared("f", 1000, 1, 10**9, 5000)
    # no budget: the build's plan checked the header's exact counts against --memory-limit already (a
    # limit above this machine's memory is the user's to give); the coarse guard would refuse 5e10 edges
    probe.check_declared("f", 10**9, 1, None, 5 * 10**10)
    with pytest.raises(UserError, match="will not fit"):
        probe.check_declared("f", 10**9, 1, 24 * 2**30, 5 * 10**10)
