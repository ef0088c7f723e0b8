"""The fuzz and fault suite, inputs (issue 24, cases 1-5): an unreadable
file, Planetoid pickles that claim huge sizes, a gzip bomb of valid edges,
hexadecimal ids, generated features that cannot fit. Each is one line
naming the file or option, exit code 2, and nothing written."""

import gzip

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import build_cli, one_line, run_cli
from helpers.faults import obeying_file_modes, planetoid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import budget, parsing, readers
from shgcn.pipeline.sources.tokens import tokenize

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"


def test_an_unreadable_file_is_one_line(tmp_path):
    """Case 1: permission denied, before the cluster starts."""
    import subprocess
    import sys

    f = tmp_path / "edges.txt"
    f.write_text("".join(f"{i} {i + 1}\n" for i in range(50)))
    f.chmod(0)
    cmd = obeying_file_modes([sys.executable, "-m", "shgcn.pipeline", "build", str(f), "--parts", "2",
                              "--model", "rp", "--out", str(tmp_path / "s.zarr")])
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    one_line(res, str(f), "permission denied")
    assert "Dask dashboard" not in res.stderr  # found before any cluster started
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.txt"]


def test_a_planetoid_key_that_claims_a_huge_graph_is_refused_before_allocating(tmp_path):
    """Case 2: a 3.6 TiB allocation was tried; now the sizes are checked first."""
    g = planetoid(tmp_path, graph={0: [1], 10**12: [0]})
    one_line(build_cli(str(g), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr")),
             "ind.t.graph", "largest vertex id (1,000,000,000,000", "1,000,000,000,001 vertices", "will not fit")


def test_a_planetoid_sparse_matrix_that_claims_a_huge_shape_is_refused(tmp_path):
    m = sp.csr_matrix(np.ones((4, 4), np.float32))
    m._shape = (4, 10**12)  # what the pickle says, not what it holds
    g = planetoid(tmp_path, allx=m)
    one_line(build_cli(str(g), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr")),
             "ind.t.allx", "4 x 1,000,000,000,000", "will not fit")


@pytest.mark.parametrize("data", [b"P", b"Q", b"\x80", b"N", b"}"])
def test_a_one_byte_planetoid_pickle_is_one_line(tmp_path, data):
    """Case 2: the 1-byte pickle gave a two-line message (the unpickler's own text has a newline)."""
    g = planetoid(tmp_path, graph=data)
    with pytest.raises(UserError) as e:
        readers.read_planetoid_whole(str(g))
    assert "\n" not in str(e.value) and "ind.t.graph: not a valid Planetoid pickle" in str(e.value)


def test_a_one_byte_planetoid_pickle_in_the_command(tmp_path):
    g = planetoid(tmp_path, graph=b"P")
    one_line(build_cli(str(g), "--parts", "2", "--out", str(tmp_path / "s.zarr")), "ind.t.graph",
             "not a valid Planetoid pickle")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.integers(0, 10**15), rows=st.integers(0, 10**10), test_id=st.integers(0, 10**13))
def test_planetoid_claims_never_allocate_beyond_the_budget(tmp_path_factory, key, rows, test_id):
    """Whatever sizes the pickles claim, the reader returns a graph within the
    budget or refuses in one line: it never tries the allocation."""
    d = tmp_path_factory.mktemp("claims")
    m = sp.csr_matrix(np.ones((1, 4), np.float32))
    m._shape = (1, max(rows, 1))
    g = planetoid(d, graph={0: [1], 1: [0], key: [0]}, tx=m, test_index=f"{test_id}\n")
    limit = 64 * 2**20
    try:
        raw = readers.read_planetoid_whole(str(g), limit)
    except UserError as e:
        assert "\n" not in str(e)
        return
    assert raw.n * budget.BYTES_PER_VERTEX <= limit


def _bomb(path, lines: int) -> None:
    """A gzip of ``lines`` valid edges ``1 2``, about 1 MB per 268M lines:
    members of 16 MiB of text each (any gzip reader takes concatenated members)."""
    block = b"1 2\n" * (1 << 22)
    member = gzip.compress(block, compresslevel=9)
    with open(path, "wb") as f:
        for _ in range(lines // (1 << 22)):
            f.write(member)


def test_a_gzip_bomb_of_valid_edges_stops_at_the_memory_limit(tmp_path):
    """Case 3: 1 MB that expands to 268M edges; the lines are counted before
    anything is parsed, and the build stops in one line."""
    bomb = tmp_path / "bomb.txt.gz"
    _bomb(bomb, 1 << 28)
    assert bomb.stat().st_size < 2 * 2**20
    res = build_cli(str(bomb), "--parts", "2", "--model", "rp", "--memory-limit", "1G", "--out",
                    str(tmp_path / "s.zarr"))
    one_line(res, str(bomb), f"more than {budget.max_edges(2**30):,} edges", "memory limit of 1.0 GiB", "will not fit")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.txt.gz"]


@pytest.mark.slow
def test_the_gzip_bomb_does_not_fit_this_machine_by_default(tmp_path):
    """Case 3, made larger than this machine: no --memory-limit; 537M edges need about 32 GiB."""
    if budget.graph_bytes(0, 1 << 29) <= budget.machine_memory():
        pytest.skip("this machine could hold the bomb's graph")
    bomb = tmp_path / "bomb.txt.gz"
    _bomb(bomb, 1 << 29)
    one_line(build_cli(str(bomb), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"), timeout=600),
             str(bomb), "will not fit")


def test_the_gzip_stream_never_parses_past_the_budget(tmp_path):
    bomb = tmp_path / "b.txt.gz"
    _bomb(bomb, 1 << 23)
    out = parsing.parse_gzip(str(bomb), 0, 1 << 20, 1 << 20, "pairs", {}, limit=2**20 * budget.BYTES_PER_EDGE)
    assert len(out) == 1 and out[0].a.size == 0 and "more than 1,048,576 edges" in out[0].error.message
    fits = parsing.parse_gzip(str(bomb), 0, 1 << 20, 1 << 20, "pairs", {}, limit=2**24 * budget.BYTES_PER_EDGE)
    assert sum(c.a.size for c in fits) == 1 << 23


def test_a_plain_file_past_the_budget_stops_as_its_chunks_are_parsed(tmp_path, client):
    f = tmp_path / "big.txt"
    f.write_bytes(b"1 2\n" * 300_000)
    with pytest.raises(UserError, match=r"big.txt: the file holds more than 100,000 edges"):
        readers.read(f, None, client, chunk_bytes=64 * 1024, memory_limit=100_000 * budget.BYTES_PER_EDGE)


def test_hexadecimal_ids_are_refused(tmp_path):
    """Case 4: pyarrow read 0x10 as 16."""
    f = tmp_path / "hex.txt"
    f.write_text("1 2\n0x10 3\n4 5\n")
    one_line(build_cli(str(f), "--parts", "2", "--out", str(tmp_path / "s.zarr")), f"{f}:2",
             "hexadecimal id '0x10'")


tokens = st.one_of(st.integers(0, 10**6).map(str), st.integers(0, 10**6).map(hex), st.integers(0, 10**6).map(
    lambda v: f"0X{v:X}"), st.integers(0, 99).map(lambda v: f"-{v}"), st.integers(0, 99).map(lambda v: f"+{v}"),
    st.integers(0, 99).map(lambda v: f"00{v}"))


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(tokens, tokens), min_size=1, max_size=20))
def test_the_fast_path_accepts_exactly_what_the_tokenizer_accepts(rows):
    """pyarrow (the fast path) and the tokenizer (the slow path that names
    the line) agree on every line: decimal ids only, the same values."""
    data = "".join(f"{a} {b}\n" for a, b in rows).encode()
    fast = parsing.parse_pairs(data)
    slow = tokenize(data, max_cols=2)
    assert (fast.error is None) == (slow.error is None), (data, fast.error, slow.error)
    if fast.error is None:
        assert np.array_equal(np.stack([fast.a, fast.b], 1).ravel(), slow.values)


def test_generated_features_that_cannot_fit_are_one_line(tmp_path):
    """Case 5: --features random:1e11 (and a width that fits one vertex but not the graph)."""
    one_line(build_cli(SBM, "--parts", "2", "--features", "random:1e11", "--out", str(tmp_path / "a.zarr")),
             "--features random:1e11", "100,000,000,000 features", "will not fit")
    one_line(build_cli(SBM, "--parts", "2", "--features", "random:1000000", "--memory-limit", "1G",
                       "--out", str(tmp_path / "b.zarr")),
             "--features random:1000000", "300 vertices x 1,000,000 features", "will not fit")
    assert list(tmp_path.iterdir()) == []


def test_a_generator_too_big_for_the_budget_is_one_line(tmp_path):
    one_line(build_cli("rmat:scale=31,edge_factor=16", "--parts", "2", "--out", str(tmp_path / "r.zarr")),
             "rmat:scale=31", "will not fit")


@pytest.mark.parametrize("text,value", [("8G", 8 * 2**30), ("512M", 512 * 2**20), ("1.5T", int(1.5 * 2**40)),
                                        ("24GiB", 24 * 2**30), ("1000", 1000), ("2k", 2048)])
def test_memory_limit_sizes(text, value):
    assert budget.parse_size(text) == value


def test_a_bad_memory_limit_is_a_usage_error(tmp_path):
    res = run_cli("build", SBM, "--parts", "2", "--memory-limit", "lots", "--out", str(tmp_path / "s.zarr"))
    assert res.returncode == 2 and "--memory-limit" in res.stderr and "Traceback" not in res.stderr


def test_pickled_claims_in_a_restricted_pickle_are_checked_by_type(tmp_path):
    """A key that is no integer is refused in one line, not a TypeError."""
    g = planetoid(tmp_path, graph={"zero": [1]})
    with pytest.raises(UserError, match="ind.t"):
        readers.read_planetoid_whole(str(g))


def test_a_partitioner_child_past_the_memory_limit_is_stopped_in_one_line(tmp_path):
    """``--memory-limit`` binds the partitioner's child too: with the plan skipped, a limit the build's
    process alone nearly fills stops Mt-KaHyPar's child as it grows (not the kernel's OOM killer), in one
    line with what to change, exit code 2, and no store. The embedded worker takes the same limit and does
    not pause under it (a pause would hang this build: its process is over the limit from the start)."""
    res = build_cli("sbm:n=20000,classes=8,degree=12,features=8,seed=1", "--parts", "8", "--model", "hp",
                    "--hp-preset", "mtkahypar-deterministic", "--memory-limit", "200M", "--no-plan-check",
                    "--out", str(tmp_path / "s.zarr"), timeout=240)
    one_line(res, "hp: the partitioner: stopped", "over --memory-limit 0.20 GiB", "raise --memory-limit")
    assert list(tmp_path.iterdir()) == []
