"""Seeded generators (pipeline/sources/synthetic.py): R-MAT in chunks that do not depend on the split, the SBM,
and their specs."""

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.sources import synthetic
from shgcn.pipeline.sources.synthetic import Rmat


def test_an_rmat_chunk_is_its_own_stream():
    stream, perm = Rmat(5, 0.57, 0.19, 0.19, 3), synthetic.rmat_labels(5, 3)
    whole = synthetic.rmat_chunk(stream, 0, 0, 40, perm)
    again = synthetic.rmat_chunk(stream, 0, 0, 40, perm)
    assert whole.n_lines == 40 and np.array_equal(whole.a, again.a) and np.array_equal(whole.b, again.b)
    assert whole.a.max() < 32 and sorted(perm.tolist()) == list(range(32))
    other = synthetic.rmat_chunk(stream, 1, 40, 80, perm)  # chunk 1 draws from its own seed
    assert not np.array_equal(other.a, whole.a)


def test_rmat_in_memory_equals_its_chunks():
    g = synthetic.rmat(6, edge_factor=2, seed=4)
    chunk = synthetic.rmat_chunk(Rmat(6, 0.57, 0.19, 0.19, 4), 0, 0, 128, synthetic.rmat_labels(6, 4))
    assert (g.lines, g.directed, g.n) == (128, True, None)
    assert g.src.tolist() == chunk.a.tolist() and g.dst.tolist() == chunk.b.tolist()
    a_only = synthetic.rmat(4, edge_factor=4, a=1.0, b=0.0, c=0.0, seed=0)  # every edge in the first quadrant
    label0 = synthetic.rmat_labels(4, 0)[0]
    assert set(a_only.src.tolist()) == {label0} and set(a_only.dst.tolist()) == {label0}


def test_sbm_is_seeded_with_class_labels():
    g = synthetic.sbm(n=30, classes=3, degree=4, p_in=1.0, features=5, seed=1)
    assert (g.n, g.lines, g.features.shape, g.labels.tolist()[:4]) == (30, 60, (30, 5), [0, 1, 2, 0])
    assert np.array_equal(g.src % 3, g.dst % 3)  # p_in = 1: every edge inside a class
    again = synthetic.sbm(n=30, classes=3, degree=4, p_in=1.0, features=5, seed=1)
    assert np.array_equal(g.src, again.src) and np.array_equal(g.features, again.features)
    with pytest.raises(UserError, match="sbm: need n >= 2"):
        synthetic.sbm(n=1)


def test_specs():
    assert synthetic.parse_spec_kind("rmat:scale=3") == "rmat" and synthetic.parse_spec_kind("g.txt") is None
    assert synthetic.parse_spec_kind("rmat") is None  # no colon: a file named rmat
    assert synthetic.parse_params("sbm:n=20,degree=2.5") == ("sbm", {"n": 20, "degree": 2.5})
    assert synthetic.parse_spec("g.txt") is None and synthetic.parse_spec("sbm:n=20,features=2").n == 20
    for spec, message in (("rmat:scale=3,x=1", "unknown parameter 'x' for rmat; known: scale, edge_factor, a, b, "
                                               "c, seed"),
                          ("sbm:n", "expected key=value, got 'n'"), ("sbm:n=inf", "n='inf' is not a finite number"),
                          ("rmat:scale=40", "need 1 <= scale <= 31"), ("rmat:", "missing 1 required")):
        with pytest.raises(UserError, match=message.replace("(", r"\(")):
            synthetic.parse_spec(spec)


def test_submit_generates_on_the_workers(client):
    tasks = Tasks(client)
    try:
        raw = synthetic.submit(tasks, "rmat:scale=5,edge_factor=3,seed=2")
        assert (raw.n, raw.directed, raw.lines, len(raw.chunks)) == (None, True, 96, 1)
        (c,) = tasks.gather(raw.chunks)
        assert c.a.tolist() == synthetic.rmat(5, edge_factor=3, seed=2).src.tolist()
        sbm = synthetic.submit(tasks, "sbm:n=40,classes=2,degree=2,features=3,seed=5")
        assert (sbm.n, sbm.directed, sbm.lines) == (40, False, 40) and sbm.nodes.result().features.shape == (40, 3)
        assert synthetic.submit(tasks, "cora") is None
        with pytest.raises(UserError, match="needs about"):
            synthetic.submit(tasks, "rmat:scale=20", limit=1 << 20)
    finally:
        tasks.release()


def test_compact_labels_are_int32_below_scale_31_and_the_same_permutation():
    from shgcn.pipeline.arrays import index_dtype

    wide, narrow = synthetic.rmat_labels(6, 2), synthetic.compact_labels(6, 2)
    assert narrow.dtype == np.int32 and narrow.tolist() == wide.tolist()
    assert index_dtype(1 << 30) is np.int32 and index_dtype(1 << 31) is np.int64  # the boundary compact_labels uses


def test_what_the_build_cannot_generate_is_refused_before_the_plan_says_fits():
    """A negative seed (numpy's generators refuse it: the build's traceback) and an R-MAT that draws more edges
    than 16 per vertex pair or 2^40 (the build ran out of memory while the plan said fits): one line, from the
    checks the plan and the build share; a small scale's default edge factor stays."""
    for spec, message in (("sbm:n=30,seed=-1", "seed=-1 must be in 0..2^63-1"),
                          ("rmat:scale=5,seed=-3", "seed=-3 must be in 0..2^63-1"),
                          ("rmat:scale=10,edge_factor=1e18", "draws 1,024,000,000,000,000,000,000 edges, more than "
                                                             "16,777,216"),
                          ("rmat:scale=31,edge_factor=1024", "and 2^40); choose an edge_factor of at most 512")):
        for check in (synthetic.check_params, synthetic.parse_spec):
            with pytest.raises(UserError) as e:
                check(spec)
            assert message in str(e.value) and "\n" not in str(e.value)
    synthetic.check_params("rmat:scale=3")  # 16 x 8 edges drawn: at most 16 x 64
