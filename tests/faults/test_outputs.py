"""The fuzz and fault suite, what the commands write and read back (issue
24, cases 6, 10, 12, 15): a store is never built inside another, and
``--overwrite`` deletes only what a store holds; ``report --out`` and
``export --overwrite`` replace only what they wrote; ``info --verify``
finds the first bad rank block; ``--split 0,...`` is refused; with
``--log-format json`` the final error line is JSON too."""

import json
import shutil

import numpy as np
import pytest
from helpers import build_cli, one_line, run_cli, run_main

from shgcn import store

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"


def test_a_store_is_never_built_inside_another(copy, tmp_path):
    """Case 6: the inner store used to be deleted by the outer one's --overwrite."""
    for inner in (copy / "inner.zarr", copy / "ranks" / "x.zarr"):
        one_line(run_main("build", SBM, "--parts", "2", "--model", "rp", "--out", str(inner)), str(inner),
                 f"inside the store {copy}")
        assert not inner.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.zarr"]


def test_overwrite_deletes_only_what_a_store_holds(copy, built, tmp_path):
    """A store that holds something else (another store, a user's file) is left as it is."""
    shutil.copytree(built.path, copy / "inner.zarr")  # put there by hand (or by an older version)
    res = run_main("build", SBM, "--parts", "2", "--model", "rp", "--out", str(copy), "--overwrite")
    one_line(res, str(copy), "holds inner.zarr", "left as it is")
    store.open_store(copy / "inner.zarr")
    shutil.rmtree(copy / "inner.zarr")
    (copy / "ranks" / "0" / "notes.txt").write_text("mine")
    one_line(run_main("build", SBM, "--parts", "2", "--model", "rp", "--out", str(copy), "--overwrite"),
             "holds ranks/0/notes.txt")
    assert (copy / "ranks" / "0" / "notes.txt").read_text() == "mine"
    (copy / "ranks" / "0" / "notes.txt").unlink()
    assert build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(copy), "--overwrite").returncode == 0
    assert store.open_store(copy).attrs["parts"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.zarr"]


def test_a_foreign_entry_is_found_anywhere_in_a_store(copy):
    from shgcn.store._atomic import foreign_entries

    assert foreign_entries(copy) == []
    (copy / "permutation" / "c" / "0.bak").write_text("x")
    assert foreign_entries(copy) == [copy / "permutation" / "c" / "0.bak"]


def test_report_refuses_a_store_without_quality_tables(copy, tmp_path):
    """Case 10: a 92-line notebook traceback before."""
    pytest.importorskip("papermill")
    shutil.rmtree(copy / "quality")
    one_line(run_main("report", str(copy), "--out", str(tmp_path / "r.html")), str(copy), "no quality tables")
    assert not (tmp_path / "r.html").exists()


def test_report_never_overwrites_what_it_did_not_write(built, tmp_path):
    pytest.importorskip("papermill")
    page = tmp_path / "r.html"
    page.write_text("<html>my page</html>")
    one_line(run_cli("report", str(built.path), "--out", str(page)), str(page), "already exists", "--overwrite")
    one_line(run_main("report", str(built.path), "--out", str(page), "--overwrite"), str(page),
             "not a report this command wrote")
    assert page.read_text() == "<html>my page</html>"


@pytest.mark.slow
def test_report_overwrite_replaces_its_own_report(built, tmp_path):
    """A report of this command (its mark, as ``pipeline report`` writes it: tests/notebooks/test_render.py) is
    replaced by a new one, which carries the mark again."""
    pytest.importorskip("papermill")
    from shgcn.notebooks.render import MARK, is_report

    page = tmp_path / "r.html"
    page.write_text(f'<html><head><meta name="generator" content="{MARK}"></head>an older report</html>')
    res = run_cli("report", str(built.path), "--out", str(page), "--overwrite", timeout=600)
    assert res.returncode == 0, res.stderr
    text = page.read_text()
    assert "shgcn quality report" in text and "an older report" not in text and is_report(page)
    assert text.lstrip().startswith("<!DOCTYPE html>") and sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_export_overwrite_replaces_only_its_own_files(built, tmp_path):
    """Case 10: export --overwrite replaced any file."""
    mine = tmp_path / "parts.txt"
    mine.write_text("my notes\n")
    one_line(run_cli("export", str(built.path), str(mine), "--format", "assignment"), "already exists")
    one_line(run_main("export", str(built.path), str(mine), "--format", "assignment", "--overwrite"), str(mine),
             "not a file this command writes")
    assert mine.read_text() == "my notes\n"
    ours = tmp_path / "ours.txt"
    assert run_cli("export", str(built.path), str(ours), "--format", "assignment").returncode == 0
    res = run_main("export", str(built.path), str(ours), "--format", "assignment", "--model", "gp", "--overwrite")
    assert res.returncode == 0, res.stderr
    assert np.array_equal(np.loadtxt(ours, dtype=np.int32), store.open_store(built.path).partition("gp"))


def test_export_graph_overwrite_replaces_only_a_graph_file(tmp_path):
    mine = tmp_path / "g.parhip"
    mine.write_bytes(b"\x01" * 100)
    one_line(run_cli("export", "graph", SBM, str(mine), "--format", "parhip", "--overwrite"), str(mine),
             "not a file this command writes")
    assert mine.read_bytes() == b"\x01" * 100


def test_info_verify_finds_the_first_bad_rank_block(copy):
    """Case 12: info did not verify the rank blocks."""
    res = run_cli("info", str(copy), "--verify")
    assert res.returncode == 0 and "every checksum matches" in res.stdout, res.stderr
    for r in (2, 1):
        chunk = copy / "ranks" / str(r) / "indices" / "c" / "0"
        raw = bytearray(chunk.read_bytes())
        raw[-1] ^= 0x01
        chunk.write_bytes(bytes(raw))
    one_line(run_main("info", str(copy), "--verify"), "ranks/1", "checksum mismatch")
    assert run_main("info", str(copy)).returncode == 0  # without --verify: the attributes and tables only


def test_info_verify_finds_a_bad_partition(copy):
    chunk = copy / "partitions" / "gp" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 0x01
    chunk.write_bytes(bytes(raw))
    one_line(run_main("info", str(copy), "--verify"), "partitions/gp", "checksum mismatch")


@pytest.mark.parametrize("split,fragment,run", [("0,0.5,0.5", "the train fraction is 0", run_main),
                                                ("0,0,0", "train fraction", run_main),
                                                ("0.001,0.2,0.2", "no vertex at all", run_cli)])  # on the cluster
def test_a_split_without_training_vertices_is_refused(tmp_path, split, fragment, run):
    """Case 12: --split 0,... was accepted."""
    one_line(run("build", SBM, "--parts", "2", "--split", split, "--out", str(tmp_path / "s.zarr")), "--split ", fragment)
    assert list(tmp_path.iterdir()) == []


def test_json_logs_end_with_a_json_error(tmp_path):
    """Case 15: with --log-format json, every line on stderr is a JSON object, the error too."""
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3 x\n")
    res = run_cli("--log-format", "json", "build", str(bad), "--parts", "2", "--out", str(tmp_path / "s.zarr"))
    assert res.returncode == 2
    records = [json.loads(line) for line in res.stderr.splitlines() if line.strip()]
    last = records[-1]
    assert last["level"] == "ERROR" and last["exit_code"] == 2 and f"{bad}:2" in last["message"]
    assert {"time", "logger", "message"} <= set(last)
    res = run_cli("info", str(tmp_path / "none.zarr"), "--log-format", "json")
    assert res.returncode == 2 and json.loads(res.stderr.strip().splitlines()[-1])["level"] == "ERROR"


@pytest.mark.parametrize("name, fragment", [("labels", "nodes/labels: rows 0:"), ("features", "nodes/features"),
                                            ("file_id", "nodes/file_id")])
def test_info_verify_finds_corrupt_node_data(copy, name, fragment):
    """Issue 33, case 7: a flipped byte in the labels chunk (vertex 0's label became 255) passed --verify."""
    chunk = copy / "nodes" / name / "c" / "0"
    if chunk.is_dir():  # a 2-D array's first chunk
        chunk = chunk / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 0xFF
    chunk.write_bytes(bytes(raw))
    one_line(run_main("info", str(copy), "--verify"), fragment, "checksum mismatch")
