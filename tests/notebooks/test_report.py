"""The report notebook, `pipeline report`, and build monitoring."""

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from helpers import run_cli, run_main

from shgcn.core import runlog
from shgcn.notebooks.report import SECTIONS

pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")

SBM = "sbm:n=400,classes=4,degree=6,features=8,seed=2"


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


@pytest.fixture
def full_report(rendered):
    """The full store's HTML report with its run log (rendered once in the session: conftest.py)."""
    out, res = rendered("html")
    assert res.returncode == 0, res.stderr
    return out


def test_report_has_every_section_with_a_figure(full_report):
    html = full_report.read_text()
    for title, chunk in sections(html).items():
        assert "data:image/png;base64," in chunk, f"no figure in {title!r}"
    assert "src=\"http" not in html  # figures are embedded, not linked
    assert not list(full_report.parent.glob(".*partial*"))


@pytest.mark.slow
def test_report_without_shp_or_runs_explains_instead_of_failing(stores, tmp_path):
    _, bare, _ = stores
    out = tmp_path / "bare.html"
    res = run_cli("report", str(bare), "--out", str(out))
    assert res.returncode == 0, res.stderr
    parts = sections(out.read_text())
    assert "has no <code>shp</code> model" in parts["Mini-batch partitioning"]
    assert "No run logs were given" in parts["Training runs"]


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_report_as_executed_notebook(stores, rendered, tmp_path):
    """A ``.ipynb`` output (the format from its extension; the rules: test_render): the executed notebook
    with its parameters injected; ``.pdf``: refused, one line."""
    full, _, _ = stores
    out, res = rendered("ipynb")
    assert res.returncode == 0, res.stderr  # the format from the extension
    nb = json.loads(out.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert any("injected-parameters" in c["metadata"].get("tags", []) for c in code)
    assert all(c.get("execution_count") for c in code)
    res = run_main("report", str(full), "--out", str(tmp_path / "r.pdf"))  # before any work: in this process
    assert res.returncode == 2 and "unknown report format '.pdf'" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "r.pdf").exists()


def test_bad_run_log_is_one_line(stores, tmp_path):
    full, _, _ = stores
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "epoch"}\n')
    res = run_cli("report", str(full), "--run", str(bad), "--out", str(tmp_path / "x.html"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{bad}:1: not a run-log record" in res.stderr
    assert not (tmp_path / "x.html").exists()


@pytest.mark.slow
def test_failing_cell_fails_the_command(stores, tmp_path):
    full, _, _ = stores
    bad = tmp_path / "ragged.jsonl"  # well-formed records whose per-rank lists disagree: a cell fails
    header = runlog.Header(store=str(full), dataset=SBM, parts=2, exchange="p2p", mode="full", model="hp",
                           dims=[8, 16, 4], w_first=[False, True], config={}, train_count=1)
    epochs = [runlog.Epoch(epoch=0, loss=1.0, train_acc=0.5, compute_time=[0.1, 0.2], comm_time=[0.1, 0.2]),
              runlog.Epoch(epoch=1, loss=1.0, train_acc=0.5, compute_time=[0.1], comm_time=[0.1])]
    bad.write_text("".join(runlog.to_json(r) + "\n" for r in [header, *epochs]))
    res = run_cli("report", str(full), "--run", str(bad), "--out", str(tmp_path / "x.html"))
    assert res.returncode == 1 and "a notebook cell failed" in res.stderr
    assert not (tmp_path / "x.html").exists()


def test_report_without_the_extra_says_which_to_install(stores, tmp_path):
    full, _, _ = stores
    code = ("import sys; sys.modules['papermill'] = None; from shgcn.pipeline.cli import main; "
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


@pytest.mark.slow
def test_quiet_and_json_logs(tmp_path):
    res = run_cli("--quiet", "build", SBM, "--parts", "2", "--out", str(tmp_path / "q.zarr"))
    assert res.returncode == 0 and res.stdout == ""
    res = run_cli("--log-format", "json", "build", SBM, "--parts", "2", "--out", str(tmp_path / "j.zarr"))
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines and all(json.loads(line)["logger"] for line in lines)


@pytest.mark.slow
def test_report_refuses_a_run_log_of_another_part_count(stores, tmp_path):
    full, _, log = stores
    run = runlog.read_run_log(log)
    other = tmp_path / "p4.jsonl"
    run.header.parts = 4
    other.write_text("".join(runlog.to_json(r) + "\n" for r in [run.header, *run.epochs]))
    out = tmp_path / "r.html"
    res = run_cli("report", str(full), "--run", str(log), "--run", str(other), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "p4.jsonl: run on 4 parts, but this store has 2 parts; left out of the report." in res.stderr
    html = out.read_text()
    box = html[html.index('class="shgcn-warning"'):]
    assert "p4.jsonl: run on 4 parts, but this store has 2 parts" in box[:box.index("</div>")]
    training = sections(html)["Training runs"]
    assert "shgcn-warning" in training and f"<th>{log.name}</th>" in training and "<th>p4.jsonl</th>" not in training


# ------------------------------------------------ in a real browser (issue 25)

_IMAGES = """() => Array.from(document.images).map(img => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const d = c.width && c.height ? ctx.getImageData(0, 0, c.width, c.height).data : [];
  const seen = new Set();
  for (let i = 0; i < d.length && seen.size < 3; i += 4 * 97) seen.add(d[i] + ',' + d[i + 1] + ',' + d[i + 2]);
  return {width: img.naturalWidth, height: img.naturalHeight, colours: seen.size};
})"""


def browser() -> str | None:
    """Debian's chromium (playwright's own browser download cannot reach its host here)."""
    import os
    import shutil

    return os.environ.get("SHGCN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_report_loads_in_a_headless_browser_with_every_figure_drawn(full_report):
    exe = browser()
    if exe is None:
        pytest.skip("no chromium installed (apt-get install chromium, or SHGCN_CHROMIUM=/path/to/chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    out = full_report
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"], headless=True)
        try:
            page = b.new_page()
            page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning")
                    else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(out.as_uri(), wait_until="load", timeout=60_000)
            page.wait_for_timeout(300)
            images = page.evaluate(_IMAGES)
            titles = page.evaluate("() => Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
        finally:
            b.close()
    assert problems == []
    import re

    assert len(images) == len(re.findall(r'<img [^>]*src="data:image/png;base64,', out.read_text())) >= 10
    assert all(i["width"] > 100 and i["height"] > 100 and i["colours"] > 1 for i in images), images
    assert [t.rstrip("¶") for t in titles] == list(SECTIONS)
