"""Edge lists (pipeline/sources/edgelist.py): SNAP and Network Repository text, gzip and BGZF, the header line
that states the file's size, and bad lines named by file and global line."""

import gzip

import pytest
from helpers.reader_conformance import ReaderTests, pairs

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import probe, readers


def write(tmp_path, name, text: bytes):
    p = tmp_path / name
    p.write_bytes(text)
    return p


class TestEdgeListReader(ReaderTests):
    fmt = "edgelist"
    edges = [(0, 1), (1, 2), (2, 0), (5, 1)]  # the file's own labels: an edge list declares no size
    n, directed = None, None

    def write(self, tmp_path):
        return write(tmp_path, "g.txt", b"# a comment\n0 1\n1\t2\n\n2 0\n5 1\n")

    def write_malformed(self, tmp_path):
        return write(tmp_path, "bad.txt", b"1 2\n3 x\n"), ":2: non-numeric token 'x'"


@pytest.mark.parametrize("chunk", [1024, 1 << 20])
def test_snap_edgelist_crlf_comments_tabs(tmp_path, client, chunk):
    body = b"# Directed graph\r\n# FromNodeId\tToNodeId\r\n" + b"".join(
        f"{i}\t{(i * 7) % 500}\r\n".encode() for i in range(500))
    p = write(tmp_path, "g.txt", body)
    raw = readers.read(p, None, client, chunk_bytes=chunk)
    assert raw.lines == 500
    assert pairs(raw) == sorted((i, (i * 7) % 500) for i in range(500))


def test_gzip_edgelist_in_blocks(tmp_path, client):
    text = b"".join(f"{i} {i + 1} {{}}\n".encode() for i in range(3000))
    p = tmp_path / "g.txt.gz"
    p.write_bytes(gzip.compress(text))
    raw = readers.read(p, None, client, chunk_bytes=1024)
    assert raw.lines == 3000 and pairs(raw)[-1] == (2999, 3000)


@pytest.mark.parametrize("header, first_is_an_edge", [("auto", False), ("no", True), ("yes", False)])
def test_a_first_line_stating_the_size_is_a_header(tmp_path, client, header, first_is_an_edge):
    """``4 3``: 4 vertices (at least the largest id), 3 edges after it: the file's size, skipped unless --header no."""
    p = write(tmp_path, "g.txt", b"4 3\n0 1\n1 2\n2 3\n")
    raw = readers.read(p, None, client, header=header)
    assert pairs(raw) == sorted([(0, 1), (1, 2), (2, 3)] + ([(4, 3)] if first_is_an_edge else []))


def test_a_first_line_that_is_not_the_size_stays_an_edge(tmp_path, client):
    p = write(tmp_path, "g.txt", b"1 3\n0 1\n1 2\n2 3\n")  # 3 edges follow, but 1 < the largest id 3
    assert pairs(readers.read(p, None, client)) == [(0, 1), (1, 2), (1, 3), (2, 3)]
    assert pairs(readers.read(p, None, client, header="yes")) == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("text,msg", [
    (b"", "empty file"),
    (b"# only a comment\n", "no edges found (only comments or blank lines)"),
    (b"1 2\n3 x\n", ":2: non-numeric token 'x'"),
    (b"1 2\n\n-3 4\n", ":3: negative id"),
    (b"1 2\n3\n", ":2: expected two vertex ids"),
])
def test_bad_input_names_file_line_and_problem(tmp_path, client, text, msg):
    p = write(tmp_path, "e.txt", text)
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
    assert pairs(a) == pairs(b) and b.lines == 30000
    bad = write(tmp_path, "bad.txt.gz", bgzf(text + b"12 x\n" + text))
    with pytest.raises(UserError, match=r"bad.txt.gz:30001: non-numeric token 'x'"):
        readers.read(bad, None, client, chunk_bytes=8192)


def test_a_plain_gzip_is_streamed_by_a_worker(tmp_path, client):
    text = "".join(f"{i} {i + 1}\n" for i in range(20000)).encode()
    p = write(tmp_path, "g.txt.gz", gzip.compress(text))
    assert probe.bgzf_members_of(p) is None
    raw = readers.read(p, None, client, chunk_bytes=4096)
    assert raw.lines == 20000 and pairs(raw)[0] == (0, 1)
