import gzip
import pickle

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import planetoid, probe, readers
from shgcn.pipeline.stages.ingest import to_graph


def write(tmp_path, name, text: bytes):
    p = tmp_path / name
    p.write_bytes(text)
    return p


def edges(raw):
    return sorted(zip(raw.src.tolist(), raw.dst.tolist()))


@pytest.mark.parametrize("chunk", [1024, 1 << 20])
def test_snap_edgelist_crlf_comments_tabs(tmp_path, client, chunk):
    body = b"# Directed graph\r\n# FromNodeId\tToNodeId\r\n" + b"".join(
        f"{i}\t{(i * 7) % 500}\r\n".encode() for i in range(500))
    p = write(tmp_path, "g.txt", body)
    raw = readers.read(p, None, client, chunk_bytes=chunk)
    assert raw.lines == 500
    assert edges(raw) == sorted((i, (i * 7) % 500) for i in range(500))


def test_gzip_edgelist_in_blocks(tmp_path, client):
    text = b"".join(f"{i} {i + 1} {{}}\n".encode() for i in range(3000))
    p = tmp_path / "g.txt.gz"
    p.write_bytes(gzip.compress(text))
    raw = readers.read(p, None, client, chunk_bytes=1024)
    assert raw.lines == 3000 and edges(raw)[-1] == (2999, 3000)


def test_mtx_with_banner_and_size_line(tmp_path, client):
    p = write(tmp_path, "m.mtx", b"%%MatrixMarket matrix coordinate pattern symmetric\n% c\n5 5 3\n2 1\n3 1\n5 4\n")
    raw = readers.read(p, None, client)
    assert raw.n == 5 and raw.directed is False
    assert edges(raw) == [(1, 0), (2, 0), (4, 3)]


def test_mtx_without_banner_or_size_line_is_one_based_lower_triangle(tmp_path, client):
    p = write(tmp_path, "m.mtx", b"2 1\n3 2\n4 1\n")
    raw = readers.read(p, None, client)
    assert raw.n == 4 and raw.directed is False
    assert edges(raw) == [(1, 0), (2, 1), (3, 0)]


def test_mtx_size_line_without_banner_is_recognized_by_entry_count(tmp_path, client):
    p = write(tmp_path, "m.mtx", b"6 6 2\n2 1\n6 2\n")
    raw = readers.read(p, None, client)
    assert raw.n == 6 and raw.lines == 2


def test_metis_graph_with_isolated_vertex(tmp_path, client):
    p = write(tmp_path, "g.graph", b"% comment\n4 2\n2\n1\n\n% another\n\n")
    raw = readers.read(p, None, client)
    assert raw.n == 4 and edges(raw) == [(0, 1), (1, 0)]
    g = to_graph(raw, directed=False)
    assert g.n == 4 and g.edges == 1


def test_metis_edge_weights_are_skipped(tmp_path, client):
    p = write(tmp_path, "g.graph", b"3 2 001\n2 5 3 7\n1 5\n1 7\n")
    raw = readers.read(p, None, client)
    assert edges(raw) == [(0, 1), (0, 2), (1, 0), (2, 0)]


def test_npz(tmp_path, client):
    import scipy.sparse as sp
    m = sp.coo_matrix((np.ones(2), ([0, 2], [1, 0])), shape=(3, 3))
    sp.save_npz(tmp_path / "g.npz", m.tocsr())
    raw = readers.read(tmp_path / "g.npz", None, client)
    assert raw.n == 3 and edges(raw) == [(0, 1), (2, 0)]


@pytest.mark.parametrize("name,text,msg", [
    ("e.txt", b"", "empty file"),
    ("e.txt", b"# only a comment\n", "no edges"),
    ("e.txt", b"1 2\n3 x\n", ":2: non-numeric token 'x'"),
    ("e.txt", b"1 2\n\n-3 4\n", ":3: negative id"),
    ("e.txt", b"1 2\n3\n", ":2: expected two vertex ids"),
    ("m.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n4 1\n", ":4: id 4 beyond the declared size 3"),
    ("m.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n0 1\n", ":3: id 0 below 1"),
    ("g.graph", b"3 1\n2\n1\n", "declares 3 vertices but the file has 2"),
    ("g.graph", b"2 1\n2\n5\n", ":3: neighbour id 5 outside 1..2"),
    ("g.unknown", b"1 2\n", "unknown format"),
])
def test_bad_input_names_file_line_and_problem(tmp_path, client, name, text, msg):
    p = write(tmp_path, name, text)
    with pytest.raises(UserError) as e:
        readers.read(p, None, client)
    assert msg in str(e.value) and str(p) in str(e.value)


def test_error_line_numbers_are_global_across_chunks(tmp_path, client):
    good = b"".join(f"{i} {i + 1}\n".encode() for i in range(1000))
    p = write(tmp_path, "e.txt", good + b"5 oops\n")
    with pytest.raises(UserError, match=r":1001: non-numeric token 'oops'"):
        readers.read(p, None, client, chunk_bytes=1024)


def test_truncated_gzip(tmp_path, client):
    data = gzip.compress(b"".join(f"{i} {i + 1}\n".encode() for i in range(20000)))
    p = write(tmp_path, "t.txt.gz", data[: len(data) // 2])
    with pytest.raises(UserError, match="truncated gzip"):
        readers.read(p, None, client)


def test_missing_file(tmp_path, client):
    with pytest.raises(UserError, match="file not found"):
        readers.read(tmp_path / "nope.txt", None, client)


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
    from collections import defaultdict
    p = tmp_path / "ind.x.graph"
    p.write_bytes(pickle.dumps(defaultdict(list, {0: [1], 1: [0]}), protocol=2))
    assert planetoid.load_pickle(p) == {0: [1], 1: [0]}


def test_to_graph_dedupes_relabels_and_drops_self_loops():
    from shgcn.pipeline.sources.records import RawGraph
    raw = RawGraph(src=np.array([10, 10, 30, 20, 20]), dst=np.array([20, 20, 30, 10, 30]), n=None, directed=True,
                   source="t", lines=5)
    g = to_graph(raw, directed=True)
    assert g.node_ids.tolist() == [10, 20, 30]
    assert g.adj.toarray().astype(int).tolist() == [[0, 1, 0], [1, 0, 1], [0, 0, 0]]
    assert g.stats["self_loops"] == 1 and g.stats["duplicates"] == 1
    gu = to_graph(raw, directed=False)
    assert gu.edges == 2 and (gu.adj != gu.adj.T).nnz == 0


def bgzf(data: bytes, block: int = 4000) -> bytes:
    """BGZF: gzip members of at most ``block`` bytes, each naming its own size
    in a ``BC`` extra field (what bgzip writes)."""
    import struct
    import zlib

    out = []
    for i in range(0, len(data), block):
        chunk = data[i:i + block]
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        comp = c.compress(chunk) + c.flush()
        head = (b"\x1f\x8b\x08\x04\0\0\0\0\0\xff" + struct.pack("<H", 6) + b"BC" + struct.pack("<H", 2)
                + struct.pack("<H", 18 + len(comp) + 8 - 1))
        out.append(head + comp + struct.pack("<II", zlib.crc32(chunk), len(chunk)))
    return b"".join(out)


def test_bgzf_members_are_parsed_in_parallel_and_equal_the_plain_file(tmp_path, client):
    text = "".join(f"{i}\t{(i * 7919) % 30011}\n" for i in range(30000)).encode()
    plain = write(tmp_path, "g.txt", text)
    blocked = write(tmp_path, "g.txt.gz", bgzf(text))
    assert probe.bgzf_members_of(blocked) is not None and len(probe.bgzf_members_of(blocked)) > 50
    a = readers.read(plain, None, client, chunk_bytes=1 << 20)
    b = readers.read(blocked, None, client, chunk_bytes=8192)  # many groups of members, lines cut across them
    assert edges(a) == edges(b) and b.lines == 30000
    bad = write(tmp_path, "bad.txt.gz", bgzf(text + b"12 x\n" + text))
    with pytest.raises(UserError, match=r"bad.txt.gz:30001: non-numeric token 'x'"):
        readers.read(bad, None, client, chunk_bytes=8192)


def test_a_plain_gzip_is_streamed_by_a_worker(tmp_path, client):
    text = "".join(f"{i} {i + 1}\n" for i in range(20000)).encode()
    p = write(tmp_path, "g.txt.gz", gzip.compress(text))
    assert probe.bgzf_members_of(p) is None
    raw = readers.read(p, None, client, chunk_bytes=4096)
    assert raw.lines == 20000 and edges(raw)[0] == (0, 1)


@pytest.mark.parametrize("data", [
    b"1 2\n3 4\n",                               # space
    b"# c\n# d\n1\t2\n3\t4\n",                   # SNAP header, tabs
    b"1 2 {}\r\n3 4 {}\r\n",                     # Network Repository, CRLF
    b"%%MatrixMarket x\n% c\n1 2 0.5\n3 4 1e-3\n",  # comments and values
])
def test_fast_path_equals_the_tokenizer(data):
    from shgcn.pipeline.sources import parsing as ingest
    from shgcn.pipeline.sources.tokens import tokenize

    fast = ingest._fast_pairs(data, None, 0)
    if data.startswith(b"%%"):
        fast = ingest._fast_pairs(data.split(b"\n", 2)[2], None, 0)
        data = data.split(b"\n", 2)[2]
    assert fast is not None
    t = tokenize(data, max_cols=2)
    assert fast.a.tolist() == t.values[t.col == 0].tolist() and fast.b.tolist() == t.values[t.col == 1].tolist()
    assert fast.n_lines == t.n_lines


@pytest.mark.parametrize("tail", [b"7 8\r", b"7 8 ", b"7\t8\t", b"7 8\r\n"])
def test_matrix_market_chunk_ending_in_whitespace(tmp_path, client, tail):
    """scipy's Matrix Market reader segfaulted on whitespace at the very end
    of its input (found by the fuzz test); the fast path now hands it none."""
    p = tmp_path / "g.mtx"
    p.write_bytes(b"%%MatrixMarket matrix coordinate pattern general\n1000000 1000000 2\n1 2\n" + tail)
    raw = readers.read(p, None, client)
    assert sorted(zip(raw.src.tolist(), raw.dst.tolist())) == [(0, 1), (6, 7)]
