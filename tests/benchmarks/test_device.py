"""benchmarks/device (issue 60): the device run's pure parts (the budget's shares, the runs' order, the threads
model's check, the report's tables and the docs' blocks, bad input), and end to end what the CI runs between
visits to a GPU machine: ``prepare --dry-run``, ``run.sh --dry-run`` and ``report`` on tiny stores."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import psutil
import pytest
from helpers import REPO, one_line

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.common import commands as cm  # noqa: E402
from benchmarks.device import cpu, driver, gpu, prepare, profile_step, report  # noqa: E402
from benchmarks.device.common import LIMIT_MIB, PARTS, SHARES  # noqa: E402
from benchmarks.training.gpu_bench import Run  # noqa: E402

CLI = [sys.executable, "-m", "benchmarks.device"]


def test_each_part_gets_its_share_of_what_is_left():
    assert driver.share(400.0, "gpu", PARTS) == pytest.approx(400 * SHARES["gpu"])
    # what the first part left goes to the others, in their proportion
    rest = PARTS[1:]
    assert driver.share(300.0, "cpu", rest) == pytest.approx(300 * SHARES["cpu"] / (SHARES["cpu"] + SHARES["calibration"]))
    assert driver.share(50.0, "calibration", ("calibration",)) == 50.0
    assert driver.share(-5.0, "gpu", PARTS) == 0.0


@pytest.mark.mpi
def test_a_calibration_that_is_absent_or_writes_no_json_leaves_one_saying_why(tmp_path):
    absent = REPO / "benchmarks" / "training" / "no_such_calibration.py"
    rc, _, _ = driver.calibration(tmp_path, 60, True, script=absent)
    doc = json.loads((tmp_path / "calibration.json").read_text())
    assert rc == 0 and doc["skipped"] == "benchmarks/training/no_such_calibration.py is not in this checkout (issue 58)"
    # a benchmark that is there but fails on every rank (here: its module cannot be imported) writes no JSON
    rc, _, _ = driver.calibration(tmp_path, 60, True, script=Path(__file__), module="benchmarks.device._no_such_module")
    doc = json.loads((tmp_path / "calibration.json").read_text())
    assert rc != 0 and doc["error"].startswith(f"exit {rc} after"), doc
    assert "-n 2" in doc["command"] and doc["command"].endswith("--quick")


def test_the_sweep_runs_the_extreme_thread_counts_of_every_architecture_first_and_the_splits_last():
    keys = cpu.plan(("gcn", "gin"), [1, 2, 4, 16], [(2, 8), (16, 1)])
    assert len(keys) == len(set(keys)) == 2 * 2 * (4 + 2)
    assert keys[:4] == [("gcn", "full", 1, 1), ("gcn", "full", 1, 16), ("gin", "full", 1, 1), ("gin", "full", 1, 16)]
    assert keys[4:8] == [("gcn", "minibatch", 1, 1), ("gcn", "minibatch", 1, 16), ("gin", "minibatch", 1, 1),
                         ("gin", "minibatch", 1, 16)]
    assert all(k[2] == 1 for k in keys[:16]) and all(k[2] > 1 for k in keys[16:])


def _m(epoch, gemm, spmm, elem, attention=0.0):
    return {"epoch": epoch, "gemm": gemm, "spmm": spmm, "elementwise": elem, "attention": attention, "cpu_wall": 1.0}


def test_the_threads_model_divides_each_kernel_by_its_terms_speedup():
    med = {("gcn", "full", 1, 1): _m(1.0, 0.4, 0.2, 0.2), ("gcn", "full", 1, 2): _m(0.5, 0.2, 0.1, 0.1),
           ("gcn", "full", 2, 1): _m(0.5, 0.2, 0.1, 0.1)}
    fig = {"source": "t", "speedup": {"dense": {"2": 2.0}, "spmm": {"2": 4.0}, "elem": {"2": 1.0}}}
    rows = cpu.model_check(med, fig)
    assert len(rows) == 1  # the split and T = 1 are not predicted
    # 0.2 left as it is, 0.4 / 2 + 0.2 / 4 + 0.2 / 1
    assert rows[0]["predicted"] == pytest.approx(0.2 + 0.2 + 0.05 + 0.2)
    assert rows[0]["error"] == pytest.approx(0.65 / 0.5 - 1)


def test_losses_are_compared_over_the_epochs_both_runs_have():
    a = Run("a", [], extra={"losses": [2.0, 1.0, 0.5], "bytes": [8, 8, 8]})
    b = Run("b", [], extra={"losses": [2.0, 1.001], "bytes": [8, 8]})
    got = gpu.losses_against(a, b)
    assert got["epochs"] == 2 and got["max_abs"] == pytest.approx(1e-3) and got["bytes_equal"]
    assert gpu.losses_against(a, None) is None and gpu.losses_against(Run("c", []), a) is None
    runs = {"gcn torch cuda": Run("x", [], ms=6.0), "gcn pyg cuda": Run("y", [], ms=5.0),
            "gin torch cuda": Run("x", [], ms=9.0), "gin pyg cuda": Run("y", [], ms=3.0),
            "sage torch cuda": Run("x", [], error="timed out")}
    r = gpu.ratios(runs, "cuda")
    assert r == {"gcn": pytest.approx(1.2), "gin": pytest.approx(3.0)} and gpu.slowest(r) == "gin"


def test_a_profile_counts_launches_syncs_and_copies_per_step():
    rows = [("cudaLaunchKernel", 300), ("cuLaunchKernel", 30), ("cudaStreamSynchronize", 6), ("cudaMemcpyAsync", 9),
            ("aten::mm", 60), ("ProfilerStep*", 3), ("cudaMemcpy", 3)]
    got = profile_step.counts(rows, 3)
    assert got["per_step"] == {"kernel_launches": 110.0, "host_syncs": 3.0, "async_copies": 3.0, "aten_ops": 20.0}
    assert got["calls_per_step"]["cudaStreamSynchronize"] == 2.0


def test_the_prepared_folder_is_ignored_by_git_where_the_docs_put_it(tmp_path):
    folder = REPO / ".device"
    made = not folder.exists()
    folder.mkdir(exist_ok=True)  # git tells an ignored folder by its being one
    try:
        assert prepare.ignored(folder) is True
    finally:
        if made:
            folder.rmdir()
    assert prepare.ignored(REPO / "benchmarks") is False and prepare.ignored(tmp_path) is None


def test_wheels_and_sizes():
    assert prepare.missing_wheels(["zarr-3.1.6-py3-none-any.whl", "PyYAML-6.0.4-cp312-x.whl", "notes.txt"]) == \
        ["numcodecs", "donfig", "google_crc32c", "shgcn"]
    assert report.cores_text([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11" and report.cores_text([]) == ""


def test_the_report_renders_the_calibration_generically_and_the_docs_blocks(tmp_path):
    cal = {"part": "calibration", "rows": [{"ranks": 16, "bytes": 1024, "alpha": 1.5e-6}, {"ranks": 16, "beta": 2.0}],
           "fit": "ok", "constants": {"alpha": 2e-6, "beta": 1e10}, "date": "2027-01-01 10:00 UTC"}
    text = report.calibration_body(cal)
    assert "| ranks | bytes | alpha | beta |" in text and "| 16 | 1024 | 1.5e-06 |  |" in text and "fit: ok" in text
    assert "constants: alpha 2e-06, beta 1e+10" in text and "2027" not in text
    assert report.calibration_body({"skipped": "no module"}) == "Not run: no module.\n"
    doc = tmp_path / "page.md"
    doc.write_text("a\n<!-- device-run:gpu -->\nold\nlines\n<!-- /device-run:gpu -->\nb\n")
    (tmp_path / "other.md").write_text("nothing\n")
    assert report.update_docs(tmp_path, {"gpu": "new", "threads": "x"}) == [doc]
    assert doc.read_text() == "a\n<!-- device-run:gpu -->\nnew\n<!-- /device-run:gpu -->\nb\n"


def test_the_docs_have_the_blocks_the_report_rewrites():
    assert "<!-- device-run:gpu -->" in (REPO / "docs" / "gpus.md").read_text()
    assert "<!-- device-run:threads -->" in (REPO / "docs" / "threads.md").read_text()
    assert "/.device/" in (REPO / ".gitignore").read_text().splitlines()


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    def run(*args, **kw):
        return subprocess.run([*CLI, *args], cwd=REPO, capture_output=True, text=True, timeout=120, **kw)

    one_line(run("report", str(tmp_path / "nope.json")), "nope.json", "cannot read")
    (tmp_path / "bad.json").write_text("{")
    one_line(run("report", str(tmp_path / "bad.json")), "bad.json", "not JSON")
    (tmp_path / "x.json").write_text('{"part": "tea"}')
    one_line(run("report", str(tmp_path / "x.json")), "x.json", "part 'tea'")
    (tmp_path / "c.json").write_text('{"part": "calibration", "dry_run": true, "skipped": "absent"}')
    one_line(run("report", str(tmp_path / "c.json")), "dry run", "--results")
    one_line(run("run", str(tmp_path), "--out", str(tmp_path), "--work", str(tmp_path), "--started", "0"),
             "prepared.json")
    (tmp_path / "prepared.json").write_text("{}")
    shutil.copy2(REPO / "benchmarks" / "device" / "run.sh", tmp_path / "run.sh")
    sh = subprocess.run(["bash", str(tmp_path / "run.sh"), "--budget", "soon"], capture_output=True, text=True,
                        timeout=60)
    one_line(sh, "--budget 'soon'")
    sh = subprocess.run(["bash", str(tmp_path / "run.sh"), "--fast"], capture_output=True, text=True, timeout=60)
    one_line(sh, "unknown argument '--fast'")


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.timeout(2400)  # about 5 minutes on an idle 2-core machine; a budget that never binds under CI's load
def test_prepare_run_and_report_end_to_end_on_the_cpu(tmp_path):
    """What CI runs between visits to a GPU: the three steps with --dry-run. prepare downloads the wheels (for this
    Python) as it does for the GPU machine's."""
    folder, out = tmp_path / "device", tmp_path / "out"
    res = subprocess.run([*CLI, "prepare", str(folder), "--dry-run"], cwd=REPO, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    prepared = json.loads((folder / "prepared.json").read_text())
    assert prepared["dry_run"] and prepared["stores"] == {"1": "rmat8-p1.zarr", "2": "rmat8-p2.zarr"}
    assert prepared["bytes"]["total"] <= LIMIT_MIB * 2**20
    assert not prepare.missing_wheels(prepared["wheels"])
    assert sorted(p.name for p in folder.iterdir()) == ["prepared.json", "run.sh", "stores.tar.xz", "wheels"]

    # the size check: a limit below the folder is one line and exit 2
    small = subprocess.run([*CLI, "prepare", str(tmp_path / "small"), "--dry-run", "--wheels-from",
                            str(folder / "wheels"), "--limit-mib", "1"], cwd=REPO, capture_output=True, text=True,
                           timeout=600)
    one_line(small, "above the limit of 1 MiB")

    env = {**os.environ, "OUT": str(out), "SHGCN_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    run = subprocess.run(["bash", str(folder / "run.sh"), "--dry-run", "--budget", "1500"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=1700)
    assert run.returncode == 0, run.stderr[-3000:]
    docs = {p: json.loads((out / f"{p}.json").read_text()) for p in ("run", "gpu", "cpu", "calibration")}
    assert all(d["dry_run"] for d in docs.values())
    assert [p["part"] for p in docs["run"]["parts"]] == list(PARTS) and docs["run"]["complete"]
    assert "Successfully installed" in (out / "install.log").read_text()  # the wheels went in, with pip

    g = docs["gpu"]
    assert g["complete"] and g["device"] in ("cpu", "cuda")
    assert {k: r["error"] for k, r in g["runs"].items() if r["error"]} == {}  # nothing in the run has rotted
    dev = g["device"]
    for arch in gpu.ARCHS:  # every architecture ran on the device and on numpy, or says why not
        for key in (f"{arch} torch {dev}", f"{arch} numpy cpu", f"{arch} pyg {dev}"):
            assert g["runs"][key]["ms"] is not None or g["runs"][key]["error"], key
        assert g["losses"][arch]["bytes_equal"]  # the same exchange, the same bytes
    assert g["two_ranks"]["torch P=2 vs numpy P=2"]["bytes_equal"]
    assert g["torchdist"]["backend"] == ("nccl" if dev == "cuda" else "gloo")
    assert "per_step" in g["profile"] or "skipped" in g["profile"]

    c = docs["cpu"]
    assert c["complete"] and c["threads"] == [t for t in (1, 2) if t <= c["affinity_cores"]]
    assert [r for r in c["runs"] if "error" in r] == []
    keys = {(r["arch"], r["mode"], r["ranks"], r["threads"]) for r in c["runs"]}
    assert keys == set(cpu.plan(cpu.ARCHS, c["threads"], [tuple(s) for s in c["splits"]]))
    for split, ranks in c["ranks"].items():
        p, t = map(int, split.split("x"))
        assert [r["rank"] for r in ranks] == list(range(p)) and all(r["numba_threads"] == t for r in ranks)
    if (REPO / "benchmarks" / "training" / "net_calibration.py").exists():  # issue 58's benchmark: it ran, and ended well
        assert "skipped" not in docs["calibration"] and "error" not in docs["calibration"]
        assert [p["rc"] for p in docs["run"]["parts"] if p["part"] == "calibration"] == [0]
    else:
        assert "net_calibration.py is not in this checkout" in docs["calibration"]["skipped"]

    results, site = tmp_path / "RESULTS.md", tmp_path / "docs"
    shutil.copy2(REPO / "benchmarks" / "RESULTS.md", results)
    shutil.copytree(REPO / "docs", site)
    rep = subprocess.run([*CLI, "report", *map(str, sorted(out.glob("*.json"))), "--results", str(results),
                          "--docs", str(site)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr[-3000:]
    text = results.read_text()
    for title in (report.GPU_TITLE, report.CPU_TITLE, report.CAL_TITLE):
        assert f"## {title}" in text
    assert [str(p) for p in cm.check(text)] == []  # its commands run from the repository
    assert "results.md#the-device-run-the-trainer-on-one-gpu-against-pyg-issue-60" in (site / "gpus.md").read_text()
    assert "results.md#the-device-run-threads-on-the-gpu-machines-cores-issue-60" in (site / "threads.md").read_text()

    # a part stopped mid-way (the driver's SIGTERM when its time is up) keeps what it measured and leaves no run behind
    stores, cut = tmp_path / "stores", tmp_path / "cut"
    with tarfile.open(folder / "stores.tar.xz") as tar:
        tar.extractall(stores, filter="data")
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.device.cpu", "--stores", str(stores), "--out", str(cut),
                             "--dry-run"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if (cut / "cpu.json").exists() and json.loads((cut / "cpu.json").read_text()).get("runs"):
                break
            time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    doc = json.loads((cut / "cpu.json").read_text())
    assert doc["stopped"] and not doc["complete"] and all("epoch" in r for r in doc["runs"]) and doc["runs"]
    assert not [p.pid for p in psutil.process_iter(["cmdline"]) if str(stores) in " ".join(p.info["cmdline"] or [])]


def _synthetic(tmp_path):
    """A real (not dry) run's JSONs, written by hand: what a GPU machine returns."""
    machine = {"cpu": "Xeon", "cores": 16, "cpu_count": 16, "memory_gib": 125.9, "os": "Linux", "shgcn_rev": "abc"}
    runs = {f"{a} {k}": {"key": f"{a} {k}", "cmd": [], "ms": ms, "epochs_timed": 30, "seconds": 30.0, "error": None,
                         "extra": {"first_epoch": 20.0, "losses": [2.0, 1.0], "bytes": [0, 0]}}
            for a in gpu.ARCHS for k, ms in (("torch cuda", 6.0), ("pyg cuda", 5.0), ("numpy cpu", 100.0))}
    parts = {
        "run": {"part": "run", "dry_run": False, "budget_s": 480, "seconds": 470.0, "machine": machine,
                "versions": "python 3.12.3", "prepared": {"bytes": {"total": 30 * 2**20}},
                "parts": [{"part": "gpu", "budget_s": 232, "seconds": 230.0, "rc": 0}]},
        "gpu": {"part": "gpu", "dry_run": False, "date": "2027-01-01 10:00 UTC", "machine": machine, "device": "cuda",
                "gpu": {"cuda": True, "gpu": "NVIDIA H100", "gpu_memory_gib": 79.1, "cuda_version": "13.0"},
                "versions": "python 3.12.3, torch 2.11.0", "runs": runs, "ratios": {a: 1.2 for a in gpu.ARCHS},
                "losses": {a: {"epochs": 2, "max_abs": 3e-7, "max_rel": 1e-7, "bytes_equal": True} for a in gpu.ARCHS},
                "sizes": {"scale": 16, "hidden": 256}, "graph": {"n": 40486, "nnz": 534956}, "complete": True,
                "profile": {"arch": "gcn", "ratio": 1.2, "per_step": {"kernel_launches": 200.0, "host_syncs": 2.0},
                            "calls_per_step": {"cudaLaunchKernel": 200.0}, "top": [], "device": "cuda"}},
        "cpu": {"part": "cpu", "dry_run": False, "date": "2027-01-01 10:04 UTC", "machine": machine, "threads": [1, 16],
                "splits": [[2, 8]], "launcher": ["/usr/bin/mpirun", "--bind-to", "none"], "complete": True,
                "runs": [{"arch": "gcn", "mode": "full", "ranks": 1, "threads": t, **_m(e, 0.1, 0.1, 0.1)}
                         for t, e in ((1, 0.6), (16, 0.09))],
                "speedup_t_max": {"gcn full": 6.67}, "ranks": {"2x8": [{"rank": 0, "affinity": [0, 1, 2], "numba_threads": 8},
                                                                        {"rank": 1, "affinity": [3], "numba_threads": 8}]},
                "fit": {"source": "x", "speedup": {"dense": {"16": 6.0}}},
                "model": {"rows": [{"arch": "gcn", "mode": "full", "threads": 16, "measured": 0.09, "predicted": 0.1,
                                    "error": 0.11}], "max_abs_error": 0.11}},
        "calibration": {"constants": {"alpha": 1e-6}, "rows": [{"size": 8, "alpha": 1e-6}]},  # as the benchmark writes it
    }
    files = []
    for name, doc in parts.items():
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(doc))
    (tmp_path / "compute-node.json").write_text("{}")  # no part: left out
    return [*files, tmp_path / "compute-node.json"]


def test_the_report_writes_the_sections_and_the_docs_figures(tmp_path):
    files = _synthetic(tmp_path)
    results, site = tmp_path / "RESULTS.md", tmp_path / "docs"
    shutil.copy2(REPO / "benchmarks" / "RESULTS.md", results)
    shutil.copytree(REPO / "docs", site, ignore=shutil.ignore_patterns("reference"))
    res = subprocess.run([*CLI, "report", *map(str, files), "--results", str(results), "--docs", str(site)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    text = results.read_text()
    assert [str(p) for p in cm.check(text)] == []
    assert "| gcn | 6.00 | 5.00 | 1.20 (**not met**) | 20.0 | 100.00 | 3.0e-07 over 2 epochs (met) | equal |" in text
    assert "| gcn full | 6.67 | met |" in text and "| 2x8 | 1 | 3 | 8 |" in text and "| 8 | 1e-06 |" in text
    assert "200 kernel launches, 2 host synchronizations" in text
    assert "`mpirun --bind-to none`" in text  # the launcher's name, not the machine's path to it
    index = text[text.index("## Index"):text.index("\n# ", text.index("## Index"))]
    assert index.count("`bash .device/run.sh`") == 3
    gpus = (site / "gpus.md").read_text()
    assert "on NVIDIA H100 ([RESULTS.md](results.md#the-device-run-the-trainer-on-one-gpu-against-pyg-issue-60))" in gpus
    assert "gcn 1.20, sage 1.20, gin 1.20, gat 1.20" in gpus and "within 3.0e-07" in gpus
    assert "gcn full 6.7x" in (site / "threads.md").read_text()
    # a second report replaces the sections (the replaced ones go to the appendix), and the blocks again
    res = subprocess.run([*CLI, "report", *map(str, files), "--results", str(results), "--docs", str(site)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    again = results.read_text()
    appendix = again.index("# Appendix: superseded runs")
    assert res.returncode == 0 and again[:appendix].count(f"## {report.GPU_TITLE}") == 1
    assert again[appendix:].count(f"## {report.GPU_TITLE}") == 1
    assert (site / "gpus.md").read_text() == gpus
