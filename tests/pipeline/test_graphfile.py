"""Graph files written by row blocks (pipeline/graphfile.py): A + Aᵀ without self loops, as ParHIP (read back
exactly) and as METIS text."""

import numpy as np

from shgcn.pipeline import graphfile as gf
from shgcn.pipeline.blocks import RowBlock

# a directed path 0 -> 1 -> 2 and 2 -> 0: A's rows and A^T's rows, in one block each
A = RowBlock(0, 3, 3, np.array([0, 1, 2, 3]), np.array([1, 2, 0]))
AT = RowBlock(0, 3, 3, np.array([0, 1, 2, 3]), np.array([2, 0, 1]))


def test_symmetric_block_is_a_plus_a_transposed():
    s = gf.symmetric_block(A, AT)
    assert s.indptr.tolist() == [0, 2, 4, 6] and s.indices.tolist() == [1, 2, 0, 2, 0, 1]
    assert gf.symmetric_block(A, None).indices.tolist() == [1, 2, 0]  # undirected: the block as it is
    assert gf.block_edges(s) == 6


def test_parhip_written_by_blocks_reads_back(tmp_path):
    s = gf.symmetric_block(A, AT)
    top, bottom = RowBlock(0, 1, 3, s.indptr[:2], s.indices[:2]), RowBlock(1, 3, 3, s.indptr[1:] - 2, s.indices[2:])
    weights = np.array([5, 6, 7])
    path = str(tmp_path / "g.parhip")
    with open(path, "wb") as f:
        f.write(gf.parhip_header(3, 6))
        f.truncate(gf.parhip_size(3, 6))
    assert gf.parhip_size(3, 6) == 24 + 8 * 4 + 8 * 6 + 8 * 3
    for b, first in ((bottom, 2), (top, 0)):  # any order: every piece has its offset
        gf.write_parhip_block(path, b, weights, first, 6)
    xadj, adjncy, w = gf.read_parhip(path)
    assert xadj.tolist() == [0, 2, 4, 6] and adjncy.tolist() == [1, 2, 0, 2, 0, 1] and w.tolist() == [5, 6, 7]
    assert np.fromfile(path, "<u8", count=3).tolist() == [gf.PARHIP_VERTEX_WEIGHTS, 3, 6]
    for chunk in (1, 4, 6, 100):  # by pieces of any size: the memory map's ids, int32
        ids = gf.read_neighbours(path, chunk)
        assert ids.dtype == np.int32 and ids.tolist() == adjncy.tolist()


def test_metis_text_of_a_block():
    s = RowBlock(0, 3, 3, np.array([0, 2, 2, 3]), np.array([1, 2, 0]))  # vertex 1 without neighbours
    assert gf.metis_header(3, 3) == b"3 3 010\n"
    assert gf.metis_text(s, np.array([4, 5, 6])) == b"4 2 3\n5\n6 1\n"
    assert gf.metis_text(RowBlock(0, 0, 3, np.array([0]), np.array([], np.int64)), np.zeros(3)) == b""


def test_write_at_places_bytes(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"........")
    assert gf.write_at(str(p), 2, b"ab") == 2 and p.read_bytes() == b"..ab...."


def test_symmetric_block_in_pieces_is_the_same():
    rng = np.random.default_rng(5)
    m = (rng.random((30, 30)) < 0.15) & ~np.eye(30, dtype=bool)
    a = RowBlock(4, 23, 30, *_csr(m[4:23]))
    at = RowBlock(4, 23, 30, *_csr(m.T[4:23]))
    whole = gf.symmetric_block(a, at, limit=10**9)
    expect = m | m.T
    assert whole.indptr.tolist() == np.concatenate([[0], np.cumsum(expect[4:23].sum(1))]).tolist()
    assert whole.indices.tolist() == np.nonzero(expect[4:23])[1].tolist()
    for limit in (1, 5, 17):
        s = gf.symmetric_block(a, at, limit=limit)
        assert s.indptr.tobytes() == whole.indptr.tobytes() and s.indices.tobytes() == whole.indices.tobytes()


def _csr(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([[0], np.cumsum(dense.sum(1))]).astype(np.int64), np.nonzero(dense)[1].astype(np.int32)
