"""The ``pipeline`` command end to end, in subprocesses; the refusals that come before any work also in this
process (``run_main``: the same ``main``, without an interpreter and Dask per case)."""

import gzip
import json

import numpy as np
import pytest
from helpers import one_line, run_cli, run_main

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"


def one_line_error(res, *fragments):
    one_line(res, *fragments, prefix="pipeline: error:")


def test_help_is_help_and_lists_every_model_and_default():
    res = run_cli("build", "--help")
    assert res.returncode == 0 and "--parts" in res.stdout and "--scheduler" in res.stdout
    for m in ("rp:", "gp:", "hp:", "shp:"):
        assert m in res.stdout
    assert "(default: 0.01)" in res.stdout and "(default: auto)" in res.stdout
    assert run_cli("-h").returncode == 0


def test_build_info_json(tmp_path):
    out = tmp_path / "s.zarr"
    res = run_cli("build", SBM, "--parts", "3", "--model", "all", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "Dask dashboard: http://127.0.0.1:" in res.stderr and "vol/rp" in res.stdout
    assert "mini-batch (node sampler" in res.stdout
    info = json.loads(run_cli("info", str(out), "--json").stdout)
    assert info["parts"] == 3 and info["n"] == 300 and info["models"] == ["rp", "gp", "hp", "shp"]
    assert set(info["quality"]) == {"rp", "gp", "hp", "shp"}
    q = info["quality"]["hp"]
    assert q["total_volume"] == q["km1"] and q["total_volume_vs_rp"] < 1
    mb = info["minibatch"]
    assert mb["attrs"]["required_nets"] == 278  # (3-1)^2 / (2 x 0.1^2) x ln 4 = 277.3, rounded up
    assert set(mb["models"]) == {"rp", "gp", "hp", "shp"}
    assert mb["models"]["shp"]["heldout_volume_mean"] <= mb["models"]["gp"]["heldout_volume_mean"] * 1.05
    assert info["shp"]["rounds"][0]["step"] == "start"
    peaks = info["peak_rss_mib_by_stage"]  # per stage, per process (one here: the embedded cluster)
    assert list(peaks) == list(info["timings"])
    assert all(0 < v <= info["peak_rss_mib"] for p in peaks.values() for v in p.values())
    assert {"child hp", "child shp"} <= set(peaks["partition"])  # the partitioners ran in child processes
    assert all(0 < r["peak_rss_mib"] <= peaks["partition"]["child shp"] for r in info["shp"]["rounds"])
    beside = info["peak_rss_mib_while_partitioning"]  # the build's process once the partitioners started
    assert list(beside) == ["partition"] and set(beside["partition"]) == {p for p in peaks["partition"] if "child" not in p}
    assert all(0 < v <= peaks["partition"][k] for k, v in beside["partition"].items())
    text = run_cli("info", str(out)).stdout
    assert "layout model hp" in text and "edge cut" in text and "Hoeffding" in text
    assert "stages     ingest" in text and "MiB" in text


def test_build_from_file_path_json_puts_only_json_on_stdout(tmp_path):
    f = tmp_path / "edges.txt.gz"
    f.write_bytes(gzip.compress(b"# comment\n" + b"".join(f"{i}\t{(i * 13 + 5) % 200}\n".encode() for i in range(400))))
    out = tmp_path / "g.zarr"
    res = run_cli("build", str(f), "--parts", "2", "--model", "rp", "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    assert (out / "zarr.json").exists()
    summary = json.loads(res.stdout)  # the whole of stdout is one JSON document
    assert summary["parts"] == 2 and "Dask dashboard" in res.stderr


@pytest.mark.parametrize("args,fragments,run", [
    (["nosuchdataset", "--parts", "2"], ["nosuchdataset", "known dataset", "cora"], run_cli),
    ([SBM, "--parts", "0"], ["--parts 0"], run_main),
    ([SBM, "--parts", "301"], ["--parts 301", "300 vertices"], run_cli),  # found on the cluster
    ([SBM, "--parts", "2", "--eps", "0"], ["--eps 0"], run_main),
    ([SBM, "--parts", "2", "--model", "xx"], ["--model 'xx'"], run_main),
    ([SBM, "--parts", "2", "--features", "bogus"], ["--features 'bogus'"], run_main),
    ([SBM, "--parts", "2", "--model", "shp", "--theta", "0"], ["theta"], run_main),
    ([SBM, "--parts", "2", "--model", "shp", "--batch-size", "1000"], ["--batch-size 1000"], run_cli),
])
def test_bad_arguments(tmp_path, args, fragments, run):
    out = tmp_path / "x.zarr"
    one_line_error(run("build", *args, "--out", str(out)), *fragments)
    assert list(tmp_path.iterdir()) == []


def test_bad_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    one_line_error(run_cli("build", str(empty), "--parts", "2", "--out", str(tmp_path / "a.zarr")), str(empty), "empty file")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"1 2\n2 3\n3 y\n")
    one_line_error(run_cli("build", str(bad), "--parts", "2", "--out", str(tmp_path / "b.zarr")), f"{bad}:3", "'y'")
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(b"".join(f"{i} {i + 1}\n".encode() for i in range(5000)))[:200])
    one_line_error(run_cli("build", str(gz), "--parts", "2", "--out", str(tmp_path / "c.zarr")), str(gz), "truncated gzip")
    weird = tmp_path / "g.xyz"
    weird.write_bytes(b"1 2\n")
    one_line_error(run_cli("build", str(weird), "--parts", "2", "--out", str(tmp_path / "d.zarr")), "unknown format")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "empty.txt", "g.xyz", "t.txt.gz"]


def test_feature_rows_must_match(tmp_path):
    f = tmp_path / "x.npy"
    np.save(f, np.zeros((299, 4), np.float32))
    one_line_error(run_cli("build", SBM, "--parts", "2", "--features", str(f), "--out", str(tmp_path / "s.zarr")),
                   "299 rows", "300 vertices")


def test_existing_output_needs_overwrite(tmp_path):
    out = tmp_path / "s.zarr"
    out.mkdir()
    one_line_error(run_main("build", SBM, "--parts", "2", "--out", str(out)), "already exists", "--overwrite")


def test_info_on_missing_or_non_store(tmp_path):
    one_line_error(run_cli("info", str(tmp_path / "nope.zarr")), "store not found")
    one_line_error(run_main("info", str(tmp_path)), "not a store")


@pytest.mark.parametrize("args,env,message", [
    (["--workers", "-2"], {}, "--workers -2: from 0 (one per core) to 8 (4 per core of this machine's 2)"),
    (["--workers", "100000"], {}, "--workers 100000: from 0 (one per core) to 8 (4 per core of this machine's 2)"),
    (["--threads", "100000"], {}, "--threads 100000: partitioner threads, from 0 (all cores) to 8 (4 per core of "
                                  "this machine's 2)"),
    (["--memory-limit", "1e400"], {}, "--memory-limit: more bytes than can be counted (at most "
                                      "9,223,372,036,854,775,807, just under 8192P)"),
    ([], {"NUMBA_NUM_THREADS": "0"}, "NUMBA_NUM_THREADS='0' in the environment: threads, a whole number from 1 to 8 "
                                     "(4 per core of this machine's 2); unset it or fix it"),
    ([], {"OMP_NUM_THREADS": "100000"}, "OMP_NUM_THREADS='100000' in the environment: threads, a whole number from 1 "
                                        "to 8 (4 per core of this machine's 2); unset it or fix it")])
def test_thread_worker_and_size_counts_are_bounded(tmp_path, monkeypatch, args, env, message):
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    res = run_main("build", SBM, "--parts", "2", *args, "--out", str(tmp_path / "x.zarr"))
    assert (res.returncode, res.stderr) == (2, f"pipeline: error: {message}\n")
    assert list(tmp_path.iterdir()) == []


def test_numba_threads_zero_in_a_real_process_is_one_line(tmp_path):
    import os

    top = 4 * (os.cpu_count() or 1)
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "shgcn.pipeline", "build", SBM, "--parts", "2", "--out",
                          str(tmp_path / "x.zarr")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NUMBA_NUM_THREADS": "0"})
    assert (res.returncode, res.stderr) == (2, f"pipeline: error: NUMBA_NUM_THREADS='0' in the environment: threads, a "
                                               f"whole number from 1 to {top} (4 per core of this machine's "
                                               f"{os.cpu_count()}); unset it or fix it\n")
