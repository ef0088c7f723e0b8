"""Property-based fuzzing of every reader: random bytes, truncations, huge
ids, unicode, mismatched headers. A reader either returns a graph or raises
the documented one-line UserError; nothing else, ever."""

import gzip
import os
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers

EXAMPLES = int(os.environ.get("SHGCN_FUZZ_EXAMPLES", "40"))  # more for a deeper run
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

lines = st.lists(st.one_of(
    st.tuples(st.integers(-5, 2**63 + 5), st.integers(-5, 2**63 + 5)).map(lambda t: f"{t[0]} {t[1]}"),
    st.tuples(st.integers(0, 50), st.integers(0, 50)).map(lambda t: f"{t[0]}\t{t[1]}"),
    st.text(max_size=30),
    st.sampled_from(["#c", "%c", "", "1 2 {}", "3  4", " 5 6", "7 8\r", "1", "x y", "9 9 9 9"]),
), max_size=40)


def check(tmp_path, name: str, data: bytes, fmt=None, client=None):
    p = tmp_path / name
    p.write_bytes(data)
    try:
        raw = readers.read(p, fmt, client, chunk_bytes=1024)
    except UserError as e:
        message = str(e)
        assert "\n" not in message.strip() and message, message
        return None
    assert raw.src.shape == raw.dst.shape
    if raw.n is not None:
        assert raw.src.size == 0 or (raw.src.min() >= 0 and max(raw.src.max(), raw.dst.max()) < raw.n)
    return raw


@FUZZ
@given(body=lines, gz=st.booleans(), cut=st.integers(0, 200))
def test_edge_lists(tmp_path_factory, client, body, gz, cut):
    data = "\n".join(body).encode("utf-8", "surrogatepass") if body else b""
    if gz:
        data = gzip.compress(data)
        data = data[: max(1, len(data) - cut % max(1, len(data)))] if cut % 3 == 0 else data
    check(tmp_path_factory.mktemp("el"), "g.txt.gz" if gz else "g.txt", data, None, client)


@FUZZ
@given(body=lines, banner=st.booleans(), size=st.tuples(st.integers(-3, 10**13), st.integers(0, 60),
                                                         st.integers(-1, 80)))
def test_matrix_market(tmp_path_factory, client, body, banner, size):
    head = "%%MatrixMarket matrix coordinate pattern general\n" if banner else ""
    rows, cols, nnz = size
    data = (head + f"{rows} {rows if cols % 7 else cols} {nnz}\n" + "\n".join(body)).encode("utf-8", "surrogatepass")
    check(tmp_path_factory.mktemp("mtx"), "g.mtx", data, None, client)


@FUZZ
@given(body=lines, head=st.tuples(st.integers(-2, 10**13), st.integers(-2, 100), st.sampled_from(["", "1", "11", "100"])))
def test_metis(tmp_path_factory, client, body, head):
    data = (f"{head[0]} {head[1]} {head[2]}\n" + "\n".join(body)).encode("utf-8", "surrogatepass")
    check(tmp_path_factory.mktemp("metis"), "g.graph", data, None, client)


@FUZZ
@given(blob=st.binary(max_size=300), shape=st.tuples(st.integers(-1, 10**13), st.integers(-1, 10**13)))
def test_npz(tmp_path_factory, client, blob, shape):
    d = tmp_path_factory.mktemp("npz")
    check(d, "raw.npz", blob, None, client)
    p = d / "g.npz"
    np.savez(p, shape=np.array(shape), format=np.array("csr"), data=np.ones(2), indices=np.array([0, 5]),
             indptr=np.array([0, 1, 2]))
    check(d, "g2.npz", p.read_bytes(), None, client)


@FUZZ
@given(graph=st.one_of(st.dictionaries(st.integers(-3, 20), st.lists(st.integers(-3, 25), max_size=4), max_size=8),
                       st.dictionaries(st.text(max_size=3), st.lists(st.integers(0, 5), max_size=3), max_size=3),
                       st.lists(st.integers(0, 5), max_size=4), st.binary(max_size=40)),
       rows=st.integers(0, 6), test_index=st.text(max_size=20))
def test_planetoid(tmp_path_factory, client, graph, rows, test_index):
    d = tmp_path_factory.mktemp("planetoid")
    arrays = {"x": np.zeros((rows, 3)), "y": np.eye(3)[:rows % 4], "tx": np.zeros((1, 3)), "ty": np.eye(3)[:1],
              "allx": np.zeros((rows + 1, 3)), "ally": np.eye(3)[np.arange(rows + 1) % 3]}
    for ext, obj in {**arrays, "graph": graph}.items():
        (d / f"ind.fz.{ext}").write_bytes(obj if isinstance(obj, bytes) else pickle.dumps(obj, protocol=2))
    (d / "ind.fz.test.index").write_text(test_index)
    try:
        readers.read(d / "ind.fz.graph", "planetoid", client)
    except UserError as e:
        assert str(e) and "\n" not in str(e).strip()


@pytest.mark.parametrize("fmt,name", [("edgelist", "g.txt"), ("mtx", "g.mtx"), ("metis", "g.graph")])
def test_unicode_and_binary_are_one_line(tmp_path, client, fmt, name):
    for data in ("ünïcödé 1 2\n".encode(), b"\xff\xfe\x00\x01" * 50, "1 2\n3 ४\n".encode()):
        check(tmp_path, name, data, fmt, client)
