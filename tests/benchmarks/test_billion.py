"""benchmarks/build/billion.py: the plan's lines read back, and the issue's targets against what was measured
or planned."""

import sys

from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.build import billion as bb  # noqa: E402

PLAN = """plan       32,804,130 vertices, 1,093,185,925 nonzeros of Â (directed), 64 features
stage      process                                      peak memory        disk      time
ingest     build (client+scheduler+worker)                 19.0 GiB                 782 s

at once    32.3 GiB in stage partition (build, while the child runs 2.1 GiB + child gp (KaMinPar) 30.2 GiB); limit 23.5 GiB
disk       the store 45.3 GiB, the temporary area 33.4 GiB more at its peak: 78.7 GiB; 66.5 GiB free on /x
time       about 3,766 s on this machine (measured rates; other jobs on it slow it)
verdict    does not fit: memory 32.3 GiB at once over the limit of 23.5 GiB (this machine's memory); disk 78.7 GiB over
"""


def test_the_plans_lines_are_read_back():
    p = bb.parse_plan(PLAN)
    assert p["memory"] == 32.3 * 2**30 and p["disk"] == 78.7 * 2**30 and p["seconds"] == 3766.0
    assert not p["fits"] and p["verdict"].startswith("does not fit: memory 32.3 GiB")
    assert p["where"].startswith("partition (build, while the child runs")


def test_a_real_plan_is_read(tmp_path):
    """The build's own --plan (a tiny graph: it fits), read by the same parser: the table's format and the
    parser agree."""
    p = bb.plan(10, "rp", 2, tmp_path)
    assert p["fits"] and 0 < p["memory"] < 2**34 and 0 < p["disk"] < 2**34 and p["seconds"] >= 0
    assert not list(tmp_path.iterdir())  # a plan writes nothing


def test_sizes_in_every_unit():
    assert bb.size("1,024 KiB") == 2**20 and bb.size("x 2.5 MiB y") == 2.5 * 2**20 and bb.size("1 TiB") == 2**40


def test_targets_use_the_measured_figure_and_fall_back_on_the_plan():
    planned = {"_plan": {"memory": 30 * 2**30, "disk": 40 * 2**30, "seconds": 3000.0}}
    big = [{"_anon": 2**30}, {"_anon": 1.5 * 2**30}]
    small = [{"_anon": 2**30}]
    rows = {r["target"]: r for r in bb.targets(planned, None, big, small)}
    assert rows["R-MAT 26 gp p64 memory at once (planned)"]["gap"] == "1.50x the target"
    assert rows["R-MAT 26 gp p64 disk at its peak (planned)"]["gap"] == "met"
    assert rows["R-MAT 26 gp p64 time (planned)"]["gap"] == "met"
    assert rows["RssAnon a rank, R-MAT 26 2-part store"]["gap"] == "met"
    assert rows["RssAnon against R-MAT 22's"]["gap"] == "1.25x the target"  # 1.5 / 1 against 1.2
    measured = {**planned, "_rec": {"tree_peak_bytes": 10 * 2**30, "partial_peak_bytes": 50 * 2**30, "wall": 60.0}}
    rows = {r["target"]: r for r in bb.targets(measured, None, [], [])}
    assert rows["R-MAT 26 gp p64 memory at once (measured)"]["gap"] == "met"
    assert rows["R-MAT 26 gp p64 disk at its peak (measured)"]["gap"] == f"{50 / 48:.2f}x the target"
    assert rows["RssAnon a rank, R-MAT 26 2-part store"]["value"] == "not measured"


def test_the_kernels_are_compiled_once_into_the_benchmarks_own_cache(mpi_stores, tmp_path):
    """The first run compiles the trainer's numba kernels into an emptied cache and reports its ranks' RssAnon;
    the cache then holds them for the measured runs (numba's index files), whatever the install had."""
    from argparse import Namespace

    from benchmarks.training.outofcore_minibatch import compile_kernels, kernel_cache

    where = tmp_path / "numba-cache"
    where.mkdir()
    (where / "stale.nbi").write_bytes(b"x")
    env = kernel_cache(where)
    assert env["NUMBA_CACHE_DIR"] == str(where) and not where.exists()
    run = Namespace(ranks=2, batch_size=40, sampler="node", timeout=600.0)
    anon = compile_kernels(mpi_stores["undirected", 2], run, tmp_path / "compile.jsonl", env)
    assert len(anon) == 2 and min(anon) > 0
    assert list(where.rglob("*.nbi")) and not (where / "stale.nbi").exists()


def test_the_notes_say_what_the_compiling_run_held():
    text = bb.notes({"_rec": {}}, {"_rec": {}}, [], [120 * 2**20, 119 * 2**20], 22)
    assert "one step on R-MAT 22's store" in text and "120.0 MiB / 119.0 MiB" in text


def _record(scale: int, **over) -> dict:
    rec = {"tag": f"rmat{scale}-gp-p64", "source": f"rmat:scale={scale},edge_factor=16,seed=1", "model": "gp",
           "parts": 64, "wall": 12.0, "tree_peak_bytes": 3 * 2**30, "partial_peak_bytes": 5 * 2**30,
           "store_bytes": 4 * 2**30, "info": {"nnz": 1000, "command": "pipeline build rmat:scale=10 --out X"}}
    return {**rec, **over}


def test_a_gp_record_stands_for_its_build_and_a_wrong_file_is_one_line(tmp_path):
    import json
    from types import SimpleNamespace

    import pytest

    good = tmp_path / "r10.json"
    good.write_text(json.dumps(_record(10)))
    got = bb.gp_records([good])
    assert list(got) == [10] and got[10][1] == good
    args = SimpleNamespace(dir=tmp_path, reuse=False, plan_only=True, gp_records=got)
    row, store = bb.build_row(10, "gp", 64, args, keep=False)  # planned only, but measured by its record
    assert store is None and row["measured at once"] == "3.0 GiB" and row["_rec"]["wall"] == 12.0
    assert "(the record r10.json: pipeline build rmat:scale=10)" in row["build"]
    rows = {r["target"]: r for r in bb.targets(row, row, [], [])}
    assert rows["R-MAT 25 gp p64 memory at once (measured)"]["gap"] == "met"
    for bad, why in ((_record(10, model="rp"), "not the record of an R-MAT gp p = 64 build"),
                     (_record(10, source="cora"), "not the record"), ("{", "Expecting")):
        f = tmp_path / "bad.json"
        f.write_text(bad if isinstance(bad, str) else json.dumps(bad))
        with pytest.raises(SystemExit, match=why):
            bb.gp_records([f])
