"""The build's plan: the model by hand, its growth, the refusals and ``--plan`` through the command line."""

import json
import os
from dataclasses import replace

import pytest
from helpers import build_cli, one_line

from shgcn.pipeline import plan
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.models.gp import COMPRESS_EDGES, KAMINPAR_EPS_SHARE, LEVELS_SHARE, METIS_BYTES_PER_NNZ
from shgcn.pipeline.sources.counts import Counts, input_counts

MIB, GIB = 2**20, 2**30
T = plan.Term


def small_coefficients() -> plan.Coefficients:
    """Round figures: 100 MiB a process, 10 bytes a nonzero, 1 a vertex, 4 a feature value; gp's child the largest."""
    term = T(100 * MIB, 10, 1, 4)
    stages = [s for s in plan.STAGES if s != "partition"]
    return plan.Coefficients(memory={**{s: term for s in stages}, "partition:gp": T(200 * MIB, 20), "partition:hp": term},
                             child={"gp": T(50 * MIB, 300), "hp": T(50 * MIB, 100)},
                             disk={"store": T(0, 8, 16, 8), "scratch": T(0, 16)},
                             seconds={**{s: T(1, 1e-6) for s in stages}, "partition:gp": T(10, 1e-5)})


C = Counts(n=1000, nnz=1_000_000, edges=999_000, features=10, classes=3, directed=True, how="test", name="g")


def test_a_small_case_by_hand():
    p = plan.make_plan(C, ("gp",), coef=small_coefficients())
    rows = {(r.stage, r.process): r for r in p.rows}
    assert rows[("ingest", plan.BUILD)].memory == 100 * MIB + 10e6 + 1000 + 4 * 1000 * 10
    assert rows[("partition", plan.BUILD)].memory == 200 * MIB + 20e6
    assert rows[("partition", "child gp (KaMinPar)")].memory == 50 * MIB + 300e6
    total, stage, held = p.at_once()
    assert (total, stage, len(held)) == (250 * MIB + 320e6, "partition", 2)
    # scratch, counted: during the partition the graph file (8 B an entry of A + A^T, 2 * 999,000, a row pointer and
    # a vertex weight) and A's and A^T's patterns (4 B an entry, 8 a row pointer) with no store yet; at the end the
    # store alone (the write lets A's pattern go as it cuts it); the layout's pieces go straight into the store
    pattern = 4 * (1_000_000 - 1000) + 8 * 1001
    graph_file = 8 * (3 + 1001 + 2 * 999_000 + 1000)
    assert p.store == 8e6 + 16 * 1000 + 8 * 1000 * 10 and p.disk == p.store + p.scratch
    assert p.scratch == graph_file + 2 * pattern - p.store and p.disk == graph_file + 2 * pattern
    assert (p.partition_disk, p.pattern) == (graph_file + 2 * pattern, pattern)
    assert p.seconds == pytest.approx(6 * (1 + 1) + 10 + 10)
    half = plan.make_plan(C, ("gp",), feature_bytes=2, coef=small_coefficients())
    assert half.store == p.store - 4 * 1000 * 10 and half.disk == p.disk  # the peak is the partition's
    undirected = plan.make_plan(replace(C, directed=False), ("gp",), coef=small_coefficients())
    undirected_file = 8 * (3 + 1001 + 999_000 + 1000)  # one pattern, and a smaller graph file
    assert undirected.partition_disk == undirected_file + pattern and undirected.pattern == pattern
    assert undirected.disk == max(undirected.store, undirected_file + pattern)
    featured = plan.make_plan(replace(C, features=3000), ("gp",), coef=small_coefficients())
    assert featured.store > featured.partition_disk and featured.scratch == 0  # the end's peak: the store alone
    lean = plan.make_plan(C, ("gp",), {"kaminpar_eps": 0.05}, coef=small_coefficients())  # KaMinPar coarsens further
    kid = [r for r in lean.rows if r.process == "child gp (KaMinPar)"][0]
    assert kid.memory == pytest.approx(50 * MIB + KAMINPAR_EPS_SHARE * 300e6) and "--kaminpar-eps" in kid.note
    assert [r.memory for r in lean.rows if r.process != kid.process] == [r.memory for r in p.rows if r.process != kid.process]
    big = replace(C, symmetric=COMPRESS_EDGES)  # KaMinPar's lean eps by default from its compressed size on
    auto = [r for r in plan.make_plan(big, ("gp",), coef=small_coefficients()).rows if r.process == kid.process][0]
    assert auto.memory == pytest.approx(50 * MIB + LEVELS_SHARE * 300e6) and "levels of our own" in auto.note
    leveled = plan.make_plan(big, ("gp",), coef=small_coefficients())  # their files beside the graph file: one more
    big_file = 8 * (3 + 1001 + COMPRESS_EDGES + 1000)
    assert leveled.partition_disk == 2 * big_file + 2 * pattern
    unleveled = plan.make_plan(big, ("gp",), {"gp_levels": "0"}, coef=small_coefficients())
    kid = [r for r in unleveled.rows if r.process == kid.process][0]
    assert kid.memory == pytest.approx(50 * MIB + KAMINPAR_EPS_SHARE * 300e6) and "default from 50M" in kid.note
    assert unleveled.partition_disk == big_file + 2 * pattern


def test_the_graph_files_scratch_only_when_a_model_reads_it():
    """rp, and gp with METIS, write no graph file and spill no pattern: nothing beyond the store (the layout writes
    each rank's rows into it)."""
    assert plan.make_plan(C, ("rp",), coef=small_coefficients()).scratch == 0
    assert plan.make_plan(C, ("gp",), {"gp_backend": "metis"}, coef=small_coefficients()).scratch == 0
    both = plan.make_plan(C, ("rp", "gp"), coef=small_coefficients())
    assert both.scratch == plan.file_disk(C)[0] - both.store > 0 and both.partition_disk == plan.file_disk(C)[0]


def test_models_run_one_after_another_so_the_largest_child_counts():
    p = plan.make_plan(C, ("gp", "hp"), coef=small_coefficients())
    total, stage, held = p.at_once()
    assert stage == "partition" and total == max(200 * MIB + 20e6, 100 * MIB + 10e6 + 1000 + 40_000) + 50 * MIB + 300e6
    assert [r.process for r in held] == [plan.BUILD, "child gp (KaMinPar)"]
    assert len([r for r in p.rows if r.process.startswith("child")]) == 2


def test_the_partition_stage_holds_the_larger_of_before_the_child_and_beside_it():
    """The build's process peaks writing the graph file, before the child starts; beside the child it holds less."""
    coef = small_coefficients()  # the build's process: 200 MiB + 20 B/nnz; gp's child 50 MiB + 300 B/nnz
    with_beside = plan.Coefficients(coef.memory, coef.child, coef.disk, coef.seconds, beside={"gp": T(10 * MIB, 2)})
    p = plan.make_plan(C, ("gp",), coef=with_beside)
    assert [r.memory for r in p.rows if r.process == plan.BESIDE] == [10 * MIB + 2e6]
    total, stage, held = p.at_once()
    assert (total, stage) == (10 * MIB + 2e6 + 50 * MIB + 300e6, "partition")
    assert [r.process for r in held] == [plan.BESIDE, "child gp (KaMinPar)"]
    assert p.seconds == plan.make_plan(C, ("gp",), coef=coef).seconds  # the row beside the child has no time
    text = plan.format_plan(p, 64 * GIB, "test", 100 * GIB, "/x")
    assert f"{plan.BESIDE} 11.9 MiB + child gp (KaMinPar)" in text
    small_child = plan.Coefficients(coef.memory, {**coef.child, "gp": T(0, 100)}, coef.disk, coef.seconds,
                                    beside={"gp": T(0, 1)})
    total, stage, held = plan.make_plan(C, ("gp",), coef=small_child).at_once()
    assert (total, stage, [r.process for r in held]) == (200 * MIB + 20e6, "partition", [plan.BUILD])


def test_a_fit_without_the_build_beside_the_child_sums_the_stages_peaks():
    d = {k: {n: {"base": t.base, "nnz": t.nnz} for n, t in getattr(small_coefficients(), k).items()}
         for k in ("memory", "child", "disk", "seconds")}
    coef = plan.Coefficients.of(d)
    assert coef.beside == {} and plan.Coefficients.of({**d, "beside": {"gp": {"nnz": 3}}}).beside == {"gp": T(0, 3)}
    held = plan.make_plan(C, ("gp",), coef=coef).held("partition")
    assert [r.process for r in held] == [plan.BUILD, "child gp (KaMinPar)"]


def test_after_the_partition_a_model_with_its_own_figures_takes_the_larger():
    """hp keeps Â's blocks in memory to the layout: its stages after the partition are fitted apart."""
    coef = small_coefficients()
    own = plan.Coefficients({**coef.memory, "place:hp": T(0, 500)}, coef.child, coef.disk, coef.seconds)

    def place(models):
        return [r.memory for r in plan.make_plan(C, models, coef=own).rows if r.stage == "place"]

    assert place(("gp",)) == [coef.memory["place"].at(C)]
    assert place(("hp",)) == place(("gp", "hp")) == place(("shp",)) == [500e6]  # shp takes hp's figures
    ingest = [r.memory for r in plan.make_plan(C, ("hp",), coef=own).rows if r.stage == "ingest"]
    assert ingest == [coef.memory["ingest"].at(C)]  # before the partition: one figure for every model


def test_unfitted_models_borrow_and_say_so():
    p = plan.make_plan(C, ("rp", "shp"), coef=small_coefficients())
    notes = [(r.process, r.note) for r in p.rows if r.stage == "partition"]
    assert notes == [(plan.BUILD, "model rp; not fitted: gp's figures"), (plan.BUILD, "model shp; not fitted: hp's figures"),
                     ("child shp (KaMinPar, METIS, Mt-KaHyPar)", "model shp; not fitted: hp's figures")]
    assert not any(r.process.startswith("child rp") for r in p.rows)  # rp runs in the build's process
    metis = plan.make_plan(C, ("gp",), {"gp_backend": "metis"}, coef=small_coefficients())
    child = [r for r in metis.rows if r.process.startswith("child")][0]
    assert child.memory == 50 * MIB + METIS_BYTES_PER_NNZ * 1e6


def test_an_unfitted_model_with_its_own_seconds_takes_them_and_borrows_only_the_memory():
    coef = small_coefficients()
    own = plan.Coefficients(coef.memory, coef.child, coef.disk, {**coef.seconds, "partition:rp": T(0, 0, 1e-3)})
    borrowed, timed = (plan.make_plan(C, ("rp",), coef=k) for k in (coef, own))
    part = [[r for r in p.rows if r.stage == "partition"][0] for p in (borrowed, timed)]
    assert (part[0].seconds, part[1].seconds) == (pytest.approx(10 + 1e-5 * 1e6), pytest.approx(1e-3 * 1000))
    assert part[1].memory == part[0].memory and part[1].note == "model rp; not fitted: gp's memory figures"
    assert timed.seconds == pytest.approx(borrowed.seconds - part[0].seconds + 1.0)


def test_a_model_like_an_unfitted_one_takes_the_general_figures_and_a_documented_child_is_its_models_own():
    """shp-vb resembles shp, which is not fitted either: gp's figures; gp-vb takes gp's fitted KaMinPar child even
    under --gp-backend metis (METIS's documented figure is gp's own partition's), and the 2^31 flag names METIS
    only for gp itself."""
    p = plan.make_plan(C, ("shp-vb", "gp-vb"), {"gp_backend": "metis"}, coef=small_coefficients())
    shp, gp = "model shp-vb; not fitted: gp's figures", "model gp-vb; not fitted: gp's figures"
    assert [(r.process, r.note) for r in p.rows if r.stage == "partition"] == [
        (plan.BUILD, shp), ("child shp-vb (KaMinPar)", shp), (plan.BUILD, gp), ("child gp-vb (KaMinPar)", gp)]
    big = replace(C, symmetric=plan.INT32_LIMIT)
    assert "METIS" not in plan.make_plan(big, ("gp-vb",), {"gp_backend": "metis"}, coef=small_coefficients()).flags[0]
    assert "METIS" in plan.make_plan(big, ("gp",), {"gp_backend": "metis"}, coef=small_coefficients()).flags[0]


@pytest.mark.parametrize("models", [("gp",), ("hp",), ("rp", "gp", "hp")])
def test_the_fitted_plan_grows_with_the_graph(models):
    seen = []
    for scale in (12, 16, 20, 24, 28):
        p = plan.make_plan(input_counts(f"rmat:scale={scale}"), models)
        seen.append((p.at_once()[0], p.disk, p.seconds))
        assert len(seen) == 1 or all(a >= b for a, b in zip(seen[-1], seen[-2])), seen
    assert all(a > 10 * b for a, b in zip(seen[-1], seen[0]))
    wide = plan.make_plan(input_counts("rmat:scale=16", features=512), models)
    assert wide.at_once()[0] >= plan.make_plan(input_counts("rmat:scale=16"), models).at_once()[0]


def test_the_fitted_coefficients_name_their_fit():
    d = json.loads(plan.coefficients_path().read_text())
    assert "plan_check --fit" in d["source"] and set(d["memory"]) >= set(plan.STAGES) - {"partition"}


def test_refusals_are_one_line_naming_what_to_change():
    p = plan.make_plan(C, ("gp",), coef=small_coefficients())
    assert plan.refusal(p, 64 * GIB, 100 * GIB, "/x", True) is None
    mem = plan.refusal(p, 100 * MIB, 100 * GIB, "/x", True)
    assert mem.startswith("g: the plan needs") and "stage partition" in mem and "--memory-limit is 100.0 MiB" in mem
    assert "--kaminpar-eps 0.05" in mem and "--no-plan-check" in mem and "\n" not in mem
    disk = plan.refusal(p, 64 * GIB, 1 * MIB, "/x", True)
    assert "free on /x" in disk and "--out" in disk and "--no-plan-check" in disk
    assert "this machine has" in plan.refusal(p, 100 * MIB, 100 * GIB, "/x", False)


def test_the_2_31_limits_are_flagged_through_the_plan_alone():
    """R-MAT scale 28 crosses both limits: nothing is generated, the plan alone says so."""
    p = plan.make_plan(input_counts("rmat:scale=28"), ("gp",))
    assert len(p.flags) == 2
    assert "beyond 2^31: KaMinPar reads its ParHIP file with 64-bit edge ids" in p.flags[0]
    assert "int64" in p.flags[1]
    assert plan.make_plan(input_counts("rmat:scale=20"), ("gp",)).flags == []
    assert plan.make_plan(input_counts("rmat:scale=28"), ("rp",)).flags == [p.flags[1]]  # rp partitions no graph


def test_an_estimate_from_a_file_size_never_refuses(tmp_path):
    from shgcn.pipeline.config import BuildConfig

    f = tmp_path / "e.txt"
    f.write_text("1 2\n" * 1000)
    cfg = BuildConfig(source=str(f), out=str(tmp_path / "s.zarr"), parts=2, memory_limit=1)
    assert plan.plan_step(cfg, show=False) == ("", False)  # not checked: the readers' guard stays
    exact = BuildConfig(source="rmat:scale=12", out=str(tmp_path / "s.zarr"), parts=2)
    assert plan.plan_step(exact, show=False) == ("", True)  # checked from exact counts: the readers' guard goes
    assert plan.plan_step(exact, show=False, remote=True) == ("", False)  # another cluster's memory: not checked
    with pytest.raises(UserError, match="the plan needs"):
        plan.plan_step(BuildConfig(source="rmat:scale=12", out=str(tmp_path / "s.zarr"), parts=2, memory_limit=1),
                       show=False)


def test_plan_prints_and_writes_nothing(tmp_path):
    out = tmp_path / "deep" / "s.zarr"
    res = build_cli("rmat:scale=28", "--parts", "64", "--model", "gp", "--out", str(out), "--plan",
                    "--memory-limit", "64G", timeout=60)
    one_line(res, "rmat:scale=28: the plan needs", "--memory-limit is 64.0 GiB", "--no-plan-check")
    for text in ("expected counts of the generator", "child gp (KaMinPar)", "at once", "free on", "64-bit edge ids"):
        assert text in res.stdout
    # R-MAT 28's plan needs hundreds of GiB at once: the table ends with its verdict, and the command exits 2
    assert res.stdout.splitlines()[-1].startswith("verdict    does not fit: memory ")
    assert " at once over the limit of 64.0 GiB (--memory-limit); disk " in res.stdout.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []


def test_the_verdict_by_hand():
    """Memory held at once (250 MiB + 320 MB) against the limit, disk (its peak in the partition: the graph file
    and both patterns, 24.0 MB) against the free disk: fits, does not fit on either, not checked on an external
    cluster, estimated counts."""
    p = plan.make_plan(C, ("gp",), coef=small_coefficients())
    assert (plan.gib(p.at_once()[0]), plan.gib(p.disk)) == ("555.2 MiB", "22.9 MiB")
    assert plan.verdict(p, GIB, "--memory-limit", GIB, "/x") == (
        "verdict    fits: memory 555.2 MiB at once within the limit of 1.0 GiB (--memory-limit); "
        "disk 22.9 MiB within the 1.0 GiB free on /x", True)
    assert plan.verdict(p, 500 * MIB, "this machine's memory", 20 * MIB, "/x") == (
        "verdict    does not fit: memory 555.2 MiB at once over the limit of 500.0 MiB (this machine's memory); "
        "disk 22.9 MiB over the 20.0 MiB free on /x", False)
    assert plan.verdict(p, GIB, "--memory-limit", 20 * MIB, "/x")[1] is False  # the disk alone
    assert plan.verdict(p, MIB, "--memory-limit", GIB, "/x", remote=True) == (
        "verdict    fits: memory not checked (an external Dask cluster's workers); disk 22.9 MiB within the 1.0 GiB "
        "free on /x", True)
    guess = plan.make_plan(replace(C, how="estimated from the file's size", estimated=True), ("gp",),
                           coef=small_coefficients())
    assert plan.verdict(guess, MIB, "--memory-limit", GIB, "/x")[0].startswith(
        "verdict    does not fit (by estimated counts): memory 555.2 MiB at once over the limit of 1.0 MiB")
    table = plan.format_plan(p, GIB, "--memory-limit", GIB, "/x", remote=True).splitlines()
    assert table[-2].startswith("note       an external Dask cluster") and table[-1] == plan.verdict(
        p, GIB, "--memory-limit", GIB, "/x", remote=True)[0]


def test_plan_of_a_build_that_fits_exits_0_and_one_that_does_not_exits_2(tmp_path):
    out = str(tmp_path / "s.zarr")
    fits = build_cli("rmat:scale=10", "--parts", "2", "--model", "gp", "--memory-limit", "64G", "--out", out, "--plan",
                     timeout=60)
    assert fits.returncode == 0 and fits.stderr == "", fits.stderr
    assert fits.stdout.splitlines()[-1].startswith("verdict    fits: memory ")
    assert " at once within the limit of 64.0 GiB (--memory-limit); disk " in fits.stdout
    over = build_cli("rmat:scale=16", "--parts", "4", "--model", "gp", "--memory-limit", "100M", "--out", out, "--plan",
                     timeout=60)
    one_line(over, "rmat:scale=16: the plan needs", "--memory-limit is 100.0 MiB")
    assert over.stdout.splitlines()[-1].startswith("verdict    does not fit: memory ")
    assert " at once over the limit of 100.0 MiB (--memory-limit); disk " in over.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_build_that_does_not_fit_stops_at_the_start(tmp_path):
    res = build_cli("rmat:scale=16", "--parts", "4", "--model", "gp", "--memory-limit", "100M", "--out",
                    str(tmp_path / "s.zarr"), timeout=60)
    one_line(res, "rmat:scale=16: the plan needs", "--memory-limit is 100.0 MiB", "--no-plan-check")
    assert list(tmp_path.iterdir()) == []


def test_no_plan_check_leaves_the_limit_to_the_readers(tmp_path):
    res = build_cli("rmat:scale=16", "--parts", "4", "--model", "gp", "--memory-limit", "50M", "--no-plan-check",
                    "--out", str(tmp_path / "s.zarr"), timeout=120)
    one_line(res, "rmat:scale=16: 65,536 vertices, 1,048,576 edges", "will not fit")
    assert "the plan needs" not in res.stderr


def test_hp_above_metis_start_size_takes_the_figures_without_metis():
    from shgcn.pipeline.models.hp import METIS_START_NNZ

    coef = small_coefficients()
    coef = plan.Coefficients({**coef.memory, "partition:hp-fast": T(1)}, {**coef.child, "hp-fast": T(2)}, coef.disk,
                             coef.seconds)
    big = Counts(n=10, nnz=METIS_START_NNZ + 1, edges=METIS_START_NNZ - 9, features=1, classes=2, directed=True, how="t")
    for counts, options, child in ((C, {}, 50 * MIB + 100e6), (C, {"hp_preset": "fast"}, 2), (big, {}, 2)):
        rows = plan.make_plan(counts, ("hp",), options, coef=coef).rows
        assert [r.memory for r in rows if r.process.startswith("child hp")] == [child]


def test_the_fit_counts_a_lean_kaminpar_child_at_the_build_eps(monkeypatch):
    """A record where KaMinPar partitioned for a larger eps (its store says so) enters the child's fit over
    the plan's share, since the plan multiplies the fitted term by that share for such builds."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))  # the checkout's benchmarks/
    from benchmarks.build.plan_check import _child_at_build_eps

    def rec(partitions):
        return {"model": "gp", "info": {"peak_rss_mib_by_stage": {"partition": {"child gp": 700.0}},
                                        "partitions": partitions}}

    assert _child_at_build_eps(rec({"gp": {"backend": "kaminpar"}})) == 700 * 2**20
    lean = _child_at_build_eps(rec({"gp": {"backend": "kaminpar", "kaminpar_eps": 0.05}}))
    assert lean == pytest.approx(700 * 2**20 / KAMINPAR_EPS_SHARE)


SBM_SMALL = ("sbm:n=300,classes=3,degree=6,features=8", "--parts", "2")


def test_a_plan_needs_no_out_and_a_build_does(tmp_path, monkeypatch):
    """--plan writes nothing: without --out it plans the current directory's disk; a build without --out is one
    line (argparse's usage and exit 2 before); nothing is created either way."""
    from helpers import run_main

    monkeypatch.chdir(tmp_path)
    res = run_main("build", *SBM_SMALL, "--plan")
    assert res.returncode == 0 and res.stdout.strip().splitlines()[-1].startswith("verdict    fits"), res.stderr
    assert f"free on {tmp_path}" in res.stdout
    one_line(run_main("build", *SBM_SMALL), "--out: required to build a store")
    assert list(tmp_path.iterdir()) == []


def test_plan_json_is_json(tmp_path):
    from helpers import run_main

    res = run_main("build", *SBM_SMALL, "--plan", "--json", "--out", tmp_path / "s.zarr")
    doc = json.loads(res.stdout)
    assert res.returncode == 0 and doc["fits"] is True and doc["verdict"].startswith("fits: memory")
    assert doc["counts"]["n"] == 300 and {r["stage"] for r in doc["rows"]} >= {"ingest", "partition", "write"}
    assert doc["disk"] <= doc["free"] and doc["at_once"] <= doc["limit"]


def test_the_plan_refuses_an_out_the_build_refuses(tmp_path, built, monkeypatch):
    """--out under a regular file, onto an existing store, inside a store, or where nothing can be written: the
    store's own one line, not "fits"; nothing is created."""
    from helpers import run_main

    (tmp_path / "file").write_text("x")
    for out, fragment in ((tmp_path / "file" / "s.zarr", "file: not a directory"),
                          (built.path, "already exists (pass --overwrite"),
                          (built.path / "inner.zarr", "inside the store")):
        one_line(run_main("build", *SBM_SMALL, "--plan", "--out", out), fragment)
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p) == str(ro) else real(p, mode, **k))
    one_line(run_main("build", *SBM_SMALL, "--plan", "--out", ro / "s.zarr"), f"{ro} cannot be written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "ro"] and list(ro.iterdir()) == []


def test_the_partition_rows_name_their_models_and_the_advice_is_said_once():
    p = plan.make_plan(C, ("rp", "gp", "hp"))
    notes = [r.note for r in p.rows if r.stage == "partition"]
    assert {n.split(";")[0] for n in notes} == {"model rp", "model gp", "model hp"}, notes
    gp = plan.make_plan(C, ("gp",), coef=small_coefficients())
    row = next(r for r in gp.rows if r.process.startswith("child gp"))
    advised = replace(gp, rows=[replace(r, advice="partition with fewer models at once, or build on a machine with "
                                                  "more memory") if r is row else r for r in gp.rows])
    line = plan.refusal(advised, 1, 100 * GIB, "/x", False)
    assert line.count("more memory") == 1 and "\n" not in line


def test_the_plan_refuses_a_features_file_the_build_refuses(tmp_path):
    """A truncated --features file, or one of another row count than the graph's vertices: "fits" before, the
    build's refusal after; now the build's one line at the plan."""
    import numpy as np
    from helpers import run_main

    np.save(tmp_path / "ok.npy", np.zeros((300, 4), np.float32))
    np.save(tmp_path / "short.npy", np.zeros((299, 4), np.float32))
    whole = (tmp_path / "ok.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(whole[:len(whole) // 2])
    args = ("build", *SBM_SMALL, "--plan", "--out", tmp_path / "s.zarr", "--features")
    assert run_main(*args, tmp_path / "ok.npy").returncode == 0
    one_line(run_main(*args, tmp_path / "short.npy"), "short.npy: feature matrix has 299 rows but the graph has 300")
    one_line(run_main(*args, tmp_path / "cut.npy"), "cut.npy: not a .npy array")


def test_the_plan_refuses_a_scheduler_the_build_cannot_reach(tmp_path):
    """--plan --scheduler of a port nothing listens on: "fits" before; the build's one line now."""
    import socket

    from helpers import run_main

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    one_line(run_main("build", *SBM_SMALL, "--plan", "--scheduler", f"tcp://127.0.0.1:{port}"),
             f"cannot connect to the Dask scheduler at tcp://127.0.0.1:{port}")


def test_worker_processes_are_planned():
    """--processes --workers 8 was planned as one process (494 MiB; measured about 945): each worker process's
    interpreter is added to the build's process in every stage, and named."""
    from helpers import run_main

    one = plan.make_plan(C, ("gp",), coef=small_coefficients())
    eight = plan.with_workers(one, 8)
    assert eight.at_once()[0] == one.at_once()[0] + 8 * plan.WORKER_PROCESS
    assert all("with 8 worker processes" in r.note for r in eight.rows if r.process == plan.BUILD)
    assert plan.with_workers(one, 0) == one
    res = run_main("build", *SBM_SMALL, "--plan", "--json", "--processes", "--workers", "8")
    doc = json.loads(res.stdout)
    assert doc["at_once"] >= 8 * plan.WORKER_PROCESS and "with 8 worker processes" in doc["rows"][0]["note"]
