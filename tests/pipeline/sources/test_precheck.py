"""``pipeline build --plan`` plans only what would build (issue 51): the build's own checks of its input, each its
one line and exit 2, before any plan is printed; nothing read from a FIFO or a device."""

import os

import numpy as np
import pytest
from helpers import run_main
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.plan import make_plan
from shgcn.pipeline.sources import datasets
from shgcn.pipeline.sources.counts import input_counts
from shgcn.pipeline.sources.precheck import check_source

KNOWN = ", ".join(sorted(datasets.REGISTRY))


def plan(tmp_path, source: str, *more: str):
    return run_main("build", source, "--out", str(tmp_path / "s.zarr"), "--parts", "2", "--plan", *more)


def refused(res, line: str) -> None:
    assert (res.returncode, res.stdout, res.stderr) == (2, "", f"pipeline: error: {line}\n")


def test_a_path_the_build_refuses_is_refused_by_the_plan(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    os.mkfifo(tmp_path / "fifo.txt")
    os.mkfifo(tmp_path / "fifo.npy")
    (tmp_path / "adir").mkdir()
    (tmp_path / "neg.graph").write_text("-5 -3\n")
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\nx y z\n")
    t = str(tmp_path)
    refused(plan(tmp_path, "cora_typo"), f"{os.getcwd()}/cora_typo: no such file, and not a known dataset ({KNOWN}) "
                                         "or rmat:/sbm: spec")
    refused(plan(tmp_path, f"{t}/missing.txt"), f"{t}/missing.txt: no such file, and not a known dataset ({KNOWN}) "
                                                "or rmat:/sbm: spec")
    refused(plan(tmp_path, f"{t}/empty.txt"), f"{t}/empty.txt: empty file")
    refused(plan(tmp_path, f"{t}/fifo.txt"), f"{t}/fifo.txt: is a FIFO or pipe (such as <(...)), not a regular file: "
                                             "write the data to a file first")
    refused(plan(tmp_path, "/dev/zero"), "/dev/zero: is a character device, not a regular file: write the data to a "
                                         "file first")
    refused(plan(tmp_path, f"{t}/adir"), f"{t}/ind.adir.graph: file not found")
    refused(plan(tmp_path, f"{t}/neg.graph"), f"{t}/neg.graph:1: declared size -5: a graph needs at least one vertex")
    refused(plan(tmp_path, f"{t}/bad.mtx"), f"{t}/bad.mtx:2: bad size line b'x y z'")
    refused(plan(tmp_path, "sbm:n=100", "--features", f"{t}/fifo.npy"),
            f"{t}/fifo.npy: is a FIFO or pipe (such as <(...)), not a regular file: write the data to a file first")
    refused(plan(tmp_path, "cora", "--features", f"{t}/no.npy"), f"{t}/no.npy: file not found")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "bad.mtx", "empty.txt", "fifo.npy", "fifo.txt",
                                                          "neg.graph"]


@pytest.mark.parametrize("spec, line", [
    ("rmat:scale=-3", "rmat: need 1 <= scale <= 31, edge_factor >= 1, a,b,c >= 0 and a+b+c <= 1 (got scale=-3, "
                      "edge_factor=16, a=0.57, b=0.19, c=0.19)"),
    ("rmat:scale=100", "rmat: need 1 <= scale <= 31, edge_factor >= 1, a,b,c >= 0 and a+b+c <= 1 (got scale=100, "
                       "edge_factor=16, a=0.57, b=0.19, c=0.19)"),
    ("sbm:n=0", "sbm: need n >= 2, 1 <= classes <= n, degree > 0, 0 <= p_in <= 1, features >= 1"),
    ("sbm:n=10,classes=11", "sbm: need n >= 2, 1 <= classes <= n, degree > 0, 0 <= p_in <= 1, features >= 1"),
    ("sbm:n=inf", "sbm:n=inf: n='inf' is not a finite number"),
    ("rmat:seed=1", "rmat:seed=1: missing a required argument: 'scale'"),
])
def test_a_generator_the_build_refuses_is_refused_by_the_plan(tmp_path, spec, line):
    refused(plan(tmp_path, spec), line)


def test_a_huge_generator_or_header_is_planned_and_refused_by_its_memory(tmp_path):
    res = plan(tmp_path, "sbm:n=1e30")  # was a TypeError traceback
    assert res.returncode == 2 and res.stderr.startswith("pipeline: error: sbm:n=1e30: the plan needs ")
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    f = tmp_path / "huge.npz"
    np.savez(f, shape=np.array([10**12, 10**12]), indices=np.zeros(3, np.int32), indptr=np.zeros(2, np.int32),
             data=np.ones(3), format=np.array(b"csr"))
    res = plan(tmp_path, str(f))  # was planned at 472 MiB: the npz's shape is read as a header
    assert res.returncode == 2 and res.stderr.startswith(f"pipeline: error: {f}: the plan needs ")
    assert "1,000,000,000,000 vertices" in res.stdout


def test_more_parts_than_vertices_is_refused_where_the_counts_are_exact(tmp_path):
    refused(run_main("build", "sbm:n=100", "--out", str(tmp_path / "s.zarr"), "--parts", "1000000", "--plan"),
            "--parts 1000000: more parts than the 100 vertices of sbm:n=100")
    refused(run_main("build", "cora", "--out", str(tmp_path / "s.zarr"), "--parts", "3000", "--plan"),
            "--parts 3000: more parts than the 2,708 vertices of cora")
    refused(run_main("build", "rmat:scale=4", "--out", str(tmp_path / "s.zarr"), "--parts", "17", "--plan"),
            "--parts 17: more parts than the 16 vertices of rmat:scale=4")
    fine = run_main("build", "sbm:n=100", "--out", str(tmp_path / "s.zarr"), "--parts", "100", "--plan")
    assert fine.returncode == 0 and fine.stdout.splitlines()[-1].startswith("verdict    fits"), fine.stderr


SPEC_VALUES = st.one_of(st.integers(-3, 40).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                        st.sampled_from(["", "1e30", "1e308", "-0", "0.5", "abc", "2", "1e3"]))
SPEC_ITEMS = st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["scale", "edge_factor", "a", "b", "c", "seed", "n",
                                                                 "classes", "degree", "p_in", "features", "noise",
                                                                 "bogus"]), SPEC_VALUES) | st.text(max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["rmat:", "sbm:"]), st.lists(SPEC_ITEMS, max_size=4))
@example("sbm:", ["degree=1e308"])  # was an OverflowError in the plan and the build
@example("sbm:", ["n=1e300", "degree=1e300"])
def test_any_generator_spec_is_planned_or_one_line(kind, items):
    """The plan's inputs: a generator spec is refused in one line, as the build refuses it, or planned (its counts
    finite and at least one vertex), never another exception."""
    spec = kind + ",".join(items)
    try:
        check_source(spec, None, None)
        counts = input_counts(spec)
        make_plan(counts, ("gp",))
    except UserError as e:
        assert "\n" not in str(e)
        return
    assert counts.n >= 1 and counts.nnz >= counts.n, counts


def test_an_sbm_of_infinitely_many_edges_is_one_line(tmp_path):
    refused(plan(tmp_path, "sbm:degree=1e308"), "sbm: n * degree (2e+03 x 1e+308), twice the edges, must be a finite "
                                                "number")
