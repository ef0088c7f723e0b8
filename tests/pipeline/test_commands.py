"""The pipeline command on bad input (issue 14): one line naming the file or
option and the problem, exit 2, no traceback, no store."""

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import build_cli, one_line, run_cli

from shgcn import store

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"


def test_non_finite_features_are_refused_at_build_with_row_and_column(tmp_path):
    x = np.ones((300, 4), np.float32)
    x[17, 2] = np.nan
    np.save(tmp_path / "x.npy", x)
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--features", str(tmp_path / "x.npy"),
                       "--out", str(tmp_path / "s.zarr")), "vertex 17, column 2")
    np.save(tmp_path / "s.npy", np.array([["a"] * 4] * 300))
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--features", str(tmp_path / "s.npy"),
                       "--out", str(tmp_path / "t.zarr")), "features must be a 2-D array of numbers, got shape (300, 4) of <U1")


def test_gzip_bomb_is_one_line_with_bounded_memory(tmp_path):
    bomb = tmp_path / "bomb.txt.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        block = b"\0" * (1 << 24)
        for _ in range(64):  # 1 GiB of zeros, about 1 MB compressed
            f.write(block)
    # the build runs under a wrapper that reports its own children's peak: this process's children include
    # partitioner processes of earlier in-process builds, reaped at any time, which would count here
    rss = tmp_path / "rss"
    wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[2:]); "
               "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
               "sys.exit(r.returncode)")
    res = subprocess.run([sys.executable, "-c", wrapper, str(rss), sys.executable, "-m", "shgcn.pipeline", "build",
                          str(bomb), "--parts", "2", "--out", str(tmp_path / "s.zarr")],
                         capture_output=True, text=True, timeout=300)
    one_line(res, str(bomb), "longer than")
    peak_mib = int(rss.read_text()) / 1024
    assert peak_mib < 1024, peak_mib


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_a_declared_size_that_cannot_fit_is_one_line(tmp_path):
    m = tmp_path / "huge.mtx"
    m.write_text("%%MatrixMarket matrix coordinate pattern general\n1000000000000 1000000000000 1\n1 2\n")
    # the build's plan refuses it first, from the header alone; without the plan the reader's own guard does
    one_line(build_cli(str(m), "--parts", "2", "--out", str(tmp_path / "a.zarr")), str(m), "the plan needs",
             "TiB at once", "--no-plan-check")
    one_line(build_cli(str(m), "--parts", "2", "--out", str(tmp_path / "a.zarr"), "--no-plan-check"), str(m),
             "declared size")
    z = tmp_path / "zero.mtx"
    z.write_text("%%MatrixMarket matrix coordinate pattern general\n0 0 0\n")
    one_line(build_cli(str(z), "--parts", "2", "--out", str(tmp_path / "b.zarr")), str(z), "at least one vertex")
    npz = tmp_path / "huge.npz"
    np.savez(npz, shape=np.array([10**12, 10**12]), format=np.array("csr"), data=np.ones(1),
             indices=np.zeros(1, np.int32), indptr=np.zeros(2, np.int64))
    # its shape is read as a header by the plan too (issue 51): the plan refuses it first, the reader without it
    one_line(build_cli(str(npz), "--parts", "2", "--out", str(tmp_path / "c.zarr")), str(npz), "the plan needs",
             "TiB at once", "--no-plan-check")
    one_line(build_cli(str(npz), "--parts", "2", "--out", str(tmp_path / "c.zarr"), "--no-plan-check"), str(npz),
             "declared size")


@pytest.mark.parametrize("args,fragment", [
    (["--eps", "inf"], "--eps inf"),
    (["--eps", "1e308"], "--eps 1e+308"),
    (["--split", "nan,0.2,0.2"], "--split nan"),
    (["--scheduler", "foo://bar"], "--scheduler 'foo://bar'"),
])
def test_bad_options_are_one_line(tmp_path, args, fragment):
    one_line(build_cli(SBM, "--parts", "2", "--out", str(tmp_path / "s.zarr"), *args), fragment)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", [".", ""])
def test_out_must_name_a_new_directory(tmp_path, out):
    one_line(build_cli(SBM, "--parts", "2", "--out", out, cwd=tmp_path), "--out")
    assert list(tmp_path.iterdir()) == []


def test_info_and_report_on_a_plain_file(tmp_path):
    f = tmp_path / "plain.txt"
    f.write_text("hello")
    one_line(run_cli("info", str(f)), str(f), "not a store")
    one_line(run_cli("report", str(f), "--out", str(tmp_path / "r.html")), str(f), "not a store")


def test_planetoid_with_unexpected_types_is_one_line(tmp_path):
    import pickle
    from collections import defaultdict

    d = tmp_path
    for ext, obj in {"x": np.zeros((1, 2)), "y": np.zeros((1, 2)), "tx": np.zeros((1, 2)), "ty": np.zeros((1, 2)),
                     "allx": np.zeros((2, 2)), "ally": np.zeros((2, 2)),
                     "graph": defaultdict(list, {"zero": [1], "one": [0]})}.items():
        (d / f"ind.bad.{ext}").write_bytes(pickle.dumps(obj, protocol=2))
    (d / "ind.bad.test.index").write_text("2\n")
    one_line(build_cli(str(d / "ind.bad.graph"), "--format", "planetoid", "--parts", "2",
                       "--out", str(tmp_path / "s.zarr")), "ind.bad")


def test_mtx_whose_entry_count_disagrees_is_one_line(tmp_path):
    m = tmp_path / "t.mtx"
    m.write_text("%%MatrixMarket matrix coordinate pattern general\n5 5 4\n1 2\n2 3\n")
    one_line(build_cli(str(m), "--parts", "2", "--out", str(tmp_path / "s.zarr")), str(m),
             "declares 4 entries but the file has 2")


def test_long_non_numeric_token_is_called_so(tmp_path):
    f = tmp_path / "e.txt"
    f.write_text("1 2\n3 notanintegeratallbutaverylongword\n")
    one_line(build_cli(str(f), "--parts", "2", "--out", str(tmp_path / "s.zarr")), f"{f}:2", "non-numeric token")


def test_a_size_header_line_is_skipped_with_a_warning(tmp_path):
    edges = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 1)]
    f = tmp_path / "enron.txt"
    f.write_text("5 10\n" + "".join(f"{u} {v}\n" for u, v in edges))
    res = build_cli(str(f), "--parts", "2", "--model", "rp", "--undirected", "--out", str(tmp_path / "a.zarr"))
    assert res.returncode == 0 and "is the file's size" in res.stderr
    s = store.open_store(tmp_path / "a.zarr")
    assert s.attrs["n"] == 5 and s.attrs["edges"] == 5
    res = build_cli(str(f), "--parts", "2", "--model", "rp", "--undirected", "--header", "no",
                    "--out", str(tmp_path / "b.zarr"))
    assert store.open_store(tmp_path / "b.zarr").attrs["n"] == 7  # ids 0..5 and 10: read as an edge when asked


def test_direction_is_said_and_a_one_way_list_is_flagged(tmp_path):
    f = tmp_path / "coauthors.txt"
    f.write_text("".join(f"{i} {i + 1}\n" for i in range(50)))
    res = build_cli(str(f), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "a.zarr"))
    assert res.returncode == 0
    assert "as directed (the default for edge lists; --undirected changes it)" in res.stderr
    assert "no edge has its reverse" in res.stderr


def test_a_named_dataset_without_network_is_one_line_naming_url_and_path(tmp_path):
    """The downloader fails as requests does without network (patched: no network is touched); exit 2."""
    code = ("import sys\nfrom shgcn.pipeline.sources import fetch\n"
            "class ConnectionError(OSError): pass\n"
            "def offline(ds, target): raise ConnectionError('Max retries exceeded')\n"
            "fetch.download = offline\nfrom shgcn.pipeline.cli import main\n"
            f"sys.exit(main(['build', 'cit-Patents', '--data-dir', {str(tmp_path / 'data')!r}, '--parts', '2', "
            f"'--out', {str(tmp_path / 's.zarr')!r}]))")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("SHGCN_DATA_DIR", None)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    one_line(res, "dataset 'cit-Patents'", "the network is unavailable",
             f"download https://snap.stanford.edu/data/cit-Patents.txt.gz to {tmp_path / 'data' / 'snap' / 'cit-Patents.txt.gz'}")
    assert not (tmp_path / "s.zarr").exists() and not (tmp_path / "cache" / "shgcn").exists()


def test_datasets_lists_counts_sizes_and_where_each_is(tmp_path):
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "amazon0601.txt.gz").write_bytes(b"")
    res = subprocess.run([sys.executable, "-m", "shgcn.pipeline", "datasets", "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SHGCN_DATA_DIR": ""})
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines()[1:-1]}
    assert rows["amazon0601"][:9] == ["amazon0601", "SNAP", "403,394", "3,387,388", "d", "-", "-", "?", "--data-dir"]
    assert rows["cit-Patents"][8] == "no" and rows["ogbn-products"][5:7] == ["100", "47"]
    assert rows["facebook"][7:10] == ["218.6", "kB", "no"]
    assert res.stdout.splitlines()[0].split()[:9] == ["name", "source", "vertices", "edges", "features", "classes",
                                                      "size", "present", "description"]
