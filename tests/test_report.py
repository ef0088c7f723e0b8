"""The report notebook, `pipeline report`, and build monitoring."""

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import run_cli
from mpi import train

from shgcn.pipeline.compose import BuildConfig, build
from shgcn.pipeline.report import SECTIONS

pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")

SBM = "sbm:n=400,classes=4,degree=6,features=8,seed=2"


@pytest.fixture(scope="module")
def stores(tmp_path_factory, client):
    root = tmp_path_factory.mktemp("report")
    full = root / "full.zarr"
    build(BuildConfig(source=SBM, out=str(full), parts=2, models=("rp", "gp", "hp", "shp")), client,
          echo=lambda *a: None)
    bare = root / "bare.zarr"
    build(BuildConfig(source=SBM, out=str(bare), parts=2, models=("hp",)), client, echo=lambda *a: None)
    log = root / "run.jsonl"
    res = train(2, full, "--epochs", 5, log=log)
    assert res.returncode == 0, res.stderr
    return full, bare, log


def sections(html: str) -> dict[str, str]:
    """HTML of each section, from its title to the next one."""
    starts = []
    for title in SECTIONS:
        i = html.find(f">{title}<")
        assert i >= 0, f"section {title!r} missing"
        starts.append(i)
    assert starts == sorted(starts)
    ends = starts[1:] + [len(html)]
    return {t: html[a:b] for t, a, b in zip(SECTIONS, starts, ends)}


def test_report_has_every_section_with_a_figure(stores, tmp_path):
    full, _, log = stores
    out = tmp_path / "report.html"
    res = run_cli("report", str(full), "--run", str(log), "--out", str(out))
    assert res.returncode == 0, res.stderr
    html = out.read_text()
    for title, chunk in sections(html).items():
        assert "data:image/png;base64," in chunk, f"no figure in {title!r}"
    assert "src=\"http" not in html  # figures are embedded, not linked
    assert not list(tmp_path.glob(".*partial*"))


def test_report_without_shp_or_runs_explains_instead_of_failing(stores, tmp_path):
    _, bare, _ = stores
    out = tmp_path / "bare.html"
    res = run_cli("report", str(bare), "--out", str(out))
    assert res.returncode == 0, res.stderr
    parts = sections(out.read_text())
    assert "has no <code>shp</code> model" in parts["Mini-batch partitioning"]
    assert "No run logs were given" in parts["Training runs"]


def test_report_as_executed_notebook(stores, tmp_path):
    full, _, log = stores
    out = tmp_path / "report.ipynb"
    assert run_cli("report", str(full), "--run", str(log), "--out", str(out), "--format", "ipynb").returncode == 0
    nb = json.loads(out.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert any("injected-parameters" in c["metadata"].get("tags", []) for c in code)
    assert all(c.get("execution_count") for c in code)


def test_bad_run_log_is_one_line(stores, tmp_path):
    full, _, _ = stores
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "epoch"}\n')
    res = run_cli("report", str(full), "--run", str(bad), "--out", str(tmp_path / "x.html"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{bad}:1: not a run-log record" in res.stderr
    assert not (tmp_path / "x.html").exists()


def test_failing_cell_fails_the_command(stores, tmp_path):
    from shgcn.store import runlog

    full, _, _ = stores
    bad = tmp_path / "ragged.jsonl"  # well-formed records whose per-rank lists disagree: a cell fails
    header = runlog.Header(store=str(full), dataset="x", parts=2, exchange="p2p", mode="full", model="hp",
                           dims=[8, 16, 4], w_first=[False, True], config={}, train_count=1)
    epochs = [runlog.Epoch(epoch=0, loss=1.0, train_acc=0.5, compute_time=[0.1, 0.2], comm_time=[0.1, 0.2]),
              runlog.Epoch(epoch=1, loss=1.0, train_acc=0.5, compute_time=[0.1], comm_time=[0.1])]
    bad.write_text("".join(runlog.to_json(r) + "\n" for r in [header, *epochs]))
    res = run_cli("report", str(full), "--run", str(bad), "--out", str(tmp_path / "x.html"))
    assert res.returncode == 1 and "a notebook cell failed" in res.stderr
    assert not (tmp_path / "x.html").exists()


def test_report_without_the_extra_says_which_to_install(stores, tmp_path):
    full, _, _ = stores
    code = ("import sys; sys.modules['nbclient'] = None; from shgcn.pipeline.cli import main; "
            f"sys.exit(main(['report', {str(full)!r}, '--out', {str(tmp_path / 'r.html')!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "pip install 'shgcn[report]'" in res.stderr and res.stderr.count("\n") == 1


def test_report_on_missing_store(tmp_path):
    res = run_cli("report", str(tmp_path / "nope.zarr"), "--out", str(tmp_path / "x.html"))
    assert res.returncode == 2 and "store not found" in res.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dashboard_answers_while_the_cluster_is_up(tmp_path):
    port = free_port()
    cmd = [sys.executable, "-m", "shgcn.pipeline", "build", SBM, "--parts", "2", "--out", str(tmp_path / "d.zarr"),
           "--dashboard-address", f"127.0.0.1:{port}", "--keep-dashboard"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        status = None
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as r:
                    status = r.status
                    break
            except OSError:
                time.sleep(0.3)
        assert status == 200
        seen = []
        while proc.poll() is None and time.time() < deadline:  # --keep-dashboard: up after the build too
            line = proc.stderr.readline()  # everything but the results goes to stderr
            seen.append(line)
            if "stays up" in line:
                break
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as r:
            assert r.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"Dask dashboard: http://127.0.0.1:{port}/status" in seen[0] and (tmp_path / "d.zarr").exists()


def test_quiet_and_json_logs(tmp_path):
    res = run_cli("--quiet", "build", SBM, "--parts", "2", "--out", str(tmp_path / "q.zarr"))
    assert res.returncode == 0 and res.stdout == ""
    res = run_cli("--log-format", "json", "build", SBM, "--parts", "2", "--out", str(tmp_path / "j.zarr"))
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines and all(json.loads(line)["logger"] for line in lines)
