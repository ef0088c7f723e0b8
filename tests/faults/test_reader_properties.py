"""The fault suite, property-based (issue 33): the OGB and GraphSAINT
readers given hostile values (overflow, NaN, infinities, fractions, empty
files, complex numbers, booleans, strings). Whatever they are given, they
return exactly the values given, or refuse with one :class:`UserError`
line (a chunk's error for edges); never a traceback of another kind, a
wrapped class id or a truncated vertex id. (The role reader's property is
in test_values.py.)"""

import gzip
import json
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import csvblocks
from shgcn.pipeline.sources.nodefiles import MAX_CLASS, csr_chunk, pair_chunk, write_labels
from shgcn.pipeline.sources.saint import class_map, csr_files

N = 7
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

HUGE = st.sampled_from([MAX_CLASS, MAX_CLASS + 1, 2**31, 2**32 + 1, 5_000_000_000, 10**12, 2**63 - 1, 2**64, 10**30,
                        math.inf, -math.inf, math.nan, 1e300])
NUMBERS = st.one_of(st.integers(-3, 12), HUGE, st.floats(allow_nan=True, allow_infinity=True), st.just(0.5),
                    st.just(-0.0))


def _one_line(e: UserError, where: str) -> None:
    assert str(e).startswith(where) and "\n" not in str(e), str(e)


def _class_of(v) -> int | None:
    """The class id a label value is, -1 for unlabelled, None for a value that must be refused."""
    if isinstance(v, float) and math.isnan(v):
        return -1
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isinf(v) or v != int(v) or v > MAX_CLASS:
        return None if not (isinstance(v, int | float) and not isinstance(v, bool) and v < 0) else -1
    return int(v) if v >= 0 else -1


LABEL_TOKENS = st.one_of(NUMBERS.map(lambda v: (repr(v) if isinstance(v, float) else str(v), v)),
                         st.sampled_from([("", "blank"), ("nan", math.nan), ("true", None), ("1+2j", None),
                                          ("0x10", None), ("1e3", 1000.0), ("abc", None)]))


@SETTINGS
@given(st.lists(LABEL_TOKENS, max_size=12))
def test_ogb_csv_labels_are_the_values_given_or_one_line(tmp_path_factory, tokens):
    d = tmp_path_factory.mktemp("labels")
    path = d / "node-label.csv.gz"
    path.write_bytes(gzip.compress("".join(f"{t}\n" for t, _ in tokens).encode()))
    try:
        view, classes, kind = write_labels(csvblocks.row_blocks(str(path), None, 64), d / "y.raw", str(path))
    except UserError as e:
        _one_line(e, str(path))
        return
    expected = [_class_of(v) for _, v in tokens if v != "blank"]  # a blank line is no row (the row count is
    assert kind == "single" and None not in expected, (tokens, np.asarray(view[:]))  # checked by the caller)
    assert np.asarray(view[:]).tolist() == expected and classes == max(expected, default=-1) + 1


@SETTINGS
@given(st.lists(NUMBERS, min_size=1, max_size=12), st.sampled_from(["float64", "float32", "complex128", "int64",
                                                                    "bool"]))
def test_ogb_npz_labels_are_the_values_given_or_one_line(tmp_path_factory, values, dtype):
    d = tmp_path_factory.mktemp("npz")
    with np.errstate(all="ignore"):
        y = np.array([v if abs(v) < 1e300 else np.inf for v in values], np.float64).astype(dtype)
    if dtype == "complex128":
        y = y + 1j
    try:
        view, classes, _ = write_labels(iter([y[:, None]]), d / "y.raw", "node-label.npz")
    except UserError as e:
        _one_line(e, "node-label.npz")
        return
    expected = [_class_of(v.item() if dtype != "bool" else int(v)) for v in y]
    assert None not in expected, (values, dtype, np.asarray(view[:]))
    assert np.asarray(view[:]).tolist() == expected and classes == max(expected, default=-1) + 1


EDGE_IDS = st.one_of(st.integers(0, N - 1), st.integers(-3, -1), st.integers(N, 2**63 - 1), st.just(0.5),
                     st.floats(allow_nan=True, allow_infinity=True), st.just(float(N - 1)), st.just(1e30))


def _whole_in_range(v) -> bool:
    return isinstance(v, int | float) and math.isfinite(v) and v == int(v) and 0 <= v < N


@SETTINGS
@given(st.lists(st.tuples(EDGE_IDS, EDGE_IDS), min_size=1, max_size=10), st.sampled_from(["float64", "int64"]))
def test_ogb_npz_edges_are_the_ids_given_or_a_chunk_error(tmp_path_factory, edges, dtype):
    d = tmp_path_factory.mktemp("edges")
    if dtype == "int64" and not all(isinstance(v, int) for e in edges for v in e):
        dtype = "float64"
    e = np.array(edges, dtype).T.copy()
    np.save(d / "s.npy", e[0])
    np.save(d / "t.npy", e[1])
    from shgcn.pipeline.sources.rowfiles import npy_view

    with np.errstate(all="ignore"):
        out = pair_chunk(npy_view(str(d / "s.npy")), npy_view(str(d / "t.npy")), 0, len(edges), N, "data.npz")
    ok = all(_whole_in_range(v) for pair in edges for v in pair)
    if out.error is not None:
        assert not ok and out.error.message.startswith("data.npz: edge ") and "\n" not in out.error.message
        assert "-9223372036854775808" not in out.error.message  # named as given, not as a cast wrapped it
        return
    assert ok, (edges, out)
    assert out.a.tolist() == [int(s) for s, _ in edges] and out.b.tolist() == [int(t) for _, t in edges]


@SETTINGS
@given(st.lists(EDGE_IDS, min_size=1, max_size=10))
def test_saint_adjacency_columns_are_the_ids_given_or_a_chunk_error(tmp_path_factory, cols):
    d = tmp_path_factory.mktemp("adj")
    indptr = np.array([0, len(cols)] + [len(cols)] * (N - 1), np.int64)
    np.savez(d / "adj_full.npz", data=np.ones(len(cols)), indices=np.array(cols, np.float64), indptr=indptr,
             format=b"csr", shape=np.array([N, N]))
    files = csr_files(str(d / "adj_full.npz"), str(d))
    with np.errstate(all="ignore"):
        out = csr_chunk(files[0], files[1], 0, N, N, "adj_full.npz")
    if out.error is not None:
        assert not all(_whole_in_range(v) for v in cols) and "\n" not in out.error.message
        return
    assert all(_whole_in_range(v) for v in cols), (cols, out)
    assert out.a.tolist() == [0] * len(cols) and out.b.tolist() == [int(v) for v in cols]


CLASS_VALUES = st.one_of(NUMBERS, st.booleans(), st.none(), st.text(max_size=3), st.just([]))


@SETTINGS
@given(st.dictionaries(st.integers(-2, N + 1).map(str), CLASS_VALUES, max_size=N + 2))
def test_saint_class_maps_are_the_classes_given_or_one_line(tmp_path_factory, cmap):
    d = tmp_path_factory.mktemp("cmap")
    path = d / "class_map.json"
    path.write_text(json.dumps(cmap))  # NaN and Infinity as Python's json writes them
    try:
        view, classes, kind = class_map(str(path), N, d / "y", chunk_bytes=16)
    except UserError as e:
        _one_line(e, str(path))
        return
    expected = [-1] * N
    for k, v in cmap.items():
        c = _class_of(v)
        assert c is not None and 0 <= int(k) < N and not (isinstance(v, float) and math.isnan(v)), (cmap, kind)
        expected[int(k)] = c
    assert kind == "single" and np.asarray(view[:]).tolist() == expected, (cmap, np.asarray(view[:]))
    assert classes == max(expected) + 1


def test_a_saint_class_map_of_bytes_that_never_end_is_refused(tmp_path):
    """Endless streams: a regular file of 1 MB without a separator is refused, not buffered whole."""
    path = tmp_path / "class_map.json"
    path.write_bytes(b"{" + b"1" * 2**20)
    try:
        class_map(str(path), N, tmp_path / "y", chunk_bytes=4096)
    except UserError as e:
        _one_line(e, str(path))
    else:
        raise AssertionError("accepted")
