"""The report notebook, `pipeline report`, and build monitoring."""

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
from helpers import run_cli
from helpers.mpi import train

from shgcn import store
from shgcn.core import runlog
from shgcn.core.errors import UserError
from shgcn.notebooks import figures, render, report
from shgcn.notebooks.report import SECTIONS
from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig

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


@pytest.mark.slow
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


# ------------------------------------------------ how the report reads (issue 15)

def all_figures(s, runs):
    """Every figure of the report for a store and its runs."""
    figs = [report.fig_degrees(s), report.fig_quality(s), report.fig_parts(s), report.fig_parts_vs_metis(s),
            report.fig_volume_matrix(s),
            report.fig_convergence(s), report.fig_minibatch(s), report.fig_training(runs), report.fig_time_split(runs),
            report.fig_bytes(s, runs)]
    assert all(f is not None for f in figs)
    for f in figs:
        f.canvas.draw()
    return figs


def integer_axes(fig):
    """(axis, tick labels) of every part / rank / sender / receiver axis."""
    out = []
    for ax in fig.axes:
        for axis, label in ((ax.xaxis, ax.get_xlabel()), (ax.yaxis, ax.get_ylabel())):
            if label in ("part", "rank", "sender", "receiver"):
                lo, hi = sorted(axis.get_view_interval())
                out.append((label, [t.get_text() for t, v in zip(axis.get_ticklabels(), axis.get_ticklocs())
                                    if lo <= v <= hi]))
    return out


@pytest.fixture(scope="module")
def opened(stores):
    full, _, log = stores
    return store.open_store(full), report.load_runs([str(log)])


def test_part_and_rank_ticks_are_integers(opened):
    s, runs = opened
    found = []
    for fig in (report.fig_parts(s), report.fig_volume_matrix(s), report.fig_time_split(runs)):
        fig.canvas.draw()
        found += integer_axes(fig)
    assert {name for name, _ in found} == {"part", "rank", "sender", "receiver"}
    for name, labels in found:  # P = 2: the ticks are 0 and 1, nothing in between
        assert [lab.replace("\u2212", "-") for lab in labels] == ["0", "1"], (name, labels)


def test_ticks_stay_integers_for_many_parts():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.bar(np.arange(64), np.ones(64))
    figures._integer_ticks(ax.xaxis, 64)
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    locs = [v for v in ax.get_xticks() if lo <= v <= hi]
    assert 2 <= len(locs) <= 8 and all(float(v).is_integer() for v in locs)
    plt.close(fig)


def test_legends_sit_outside_every_axes(opened):
    s, runs = opened
    legends = 0
    for fig in all_figures(s, runs):
        for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
            legends += 1
            box = leg.get_window_extent()
            for ax in fig.axes:
                assert not box.overlaps(ax.get_window_extent()), (fig.axes[0].get_title(), leg)
    assert legends >= 8  # every figure but the degree plot and the heat map has one


def test_loss_plot_has_a_legend_naming_every_run(opened, stores):
    s, runs = opened
    full, _, log = stores
    twin = report.load_runs([str(log), str(log)])  # the same run twice: told apart by the log's name
    fig = report.fig_training(twin)
    loss = fig.axes[0]
    assert loss.get_ylabel() == "training loss"
    texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    labels = [line.get_label() for line in loss.get_lines()]
    assert labels == [f"{runs[0].header.label} [{log.name}]"] * 2 and labels[0] in texts
    assert "test accuracy (solid line)" in texts and "validation accuracy (dotted line)" in texts


def test_degree_name_log_axes_and_parts_against_metis(opened, tmp_path, client):
    s, _ = opened
    assert not s.attrs["directed"] and report.fig_degrees(s).axes[0].get_xlabel() == "degree"
    assert all(ax.get_yscale() in ("log", "symlog") for ax in report.fig_parts(s).axes)
    fig = report.fig_parts_vs_metis(s)
    texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert texts == ["rp", "gp (kaminpar; --gp-backend metis for METIS)", "hp", "shp"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["parts, busiest first"] * 2
    directed = tmp_path / "d.zarr"
    build(BuildConfig(source="rmat:scale=7,edge_factor=4,seed=1", out=str(directed), parts=2, models=("rp", "gp"),
                      options={"gp_backend": "metis"}), client, echo=lambda *a: None)
    d = store.open_store(directed)
    assert report.fig_degrees(d).axes[0].get_xlabel() == "out-degree"
    assert "gp (METIS)" in [t.get_text() for leg in report.fig_parts_vs_metis(d).legends for t in leg.get_texts()]
    bare = store.open_store(stores_bare(opened))
    assert report.fig_parts_vs_metis(bare) is None


def stores_bare(opened):
    s, _ = opened
    return s.path.parent / "bare.zarr"


def test_three_significant_digits(opened):
    import re

    from shgcn.notebooks.tables import pct3, sig3

    assert [sig3(v) for v in (0.9996, 0.00195, 12345.6, 1, 0.536, 0.0000830, 99.96, 0)] == \
        ["1.00", "0.00195", "12,346", "1.00", "0.536", "0.0000830", "100", "0"]
    assert pct3(0.00672) == "0.672%"
    s, _ = opened
    t = report.quality_display(s)
    exact = {("rows per SpMM", "total"), ("rows per SpMM", "max send"), ("rows per SpMM", "max receive"),
             ("messages per part", "max"), ("graph", "edge cut"), ("graph", "connectivity − 1")}
    for col in t.columns:
        for v in t[col]:
            if col in exact:
                assert re.fullmatch(r"[\d,]+", v), (col, v)
            else:  # three significant digits: the digits after the leading zeros, without separators
                digits = re.sub(r"^0*", "", v.rstrip("%").replace(",", "").replace(".", ""))
                assert len(digits) == 3 or float(v.rstrip("%").replace(",", "")) in (0, ) or \
                    float(v.rstrip("%").replace(",", "")) >= 1000, (col, v)
    note = report.simulation_note(s)
    assert note and all(f"**{m}** is predicted" in note for m in [m for m in s.models if f"**{m}**" in note])


def test_run_labels_name_mode_and_sampler():
    base = dict(store="s", dataset="d", parts=4, exchange="p2p", model="hp", dims=[8, 16, 4], w_first=[False, True],
                train_count=10)
    full = runlog.Header(mode="full", config={}, **base)
    mini = runlog.Header(mode="minibatch", config={}, sampler="rw", batch_size=1200, **base)
    old = runlog.Header(mode="minibatch", config={"sampler": "edge", "batch_size": 0}, **base)  # older log
    assert full.label == "P=4 p2p hp, full-batch"
    assert mini.label == "P=4 p2p hp, mini-batch, rw sampler, B=1,200"
    assert old.label == "P=4 p2p hp, mini-batch, edge sampler"


def test_quality_table_has_human_names_and_fits_a_1400px_page(opened):
    s, _ = opened
    t = report.quality_display(s)
    names = [name for col in t.columns for name in col]
    assert not any("_" in name for name in names), names
    assert ("rows per SpMM", "total") in t.columns and ("relative to rp", "total volume") in t.columns
    assert list(t.index) == ["rp", "gp", "hp", "shp"]
    # width at 13 px text (7.5 px a character), 12 px padding a cell; a header wraps at its spaces
    width = 60 + sum(12 + 7.5 * max(*(len(w) for w in col[1].split()), *(len(str(v)) for v in t[col]))
                     for col in t.columns)
    assert width <= 1400 - 2 * 40, width
    mb = report.minibatch_table(s)
    assert not any("_" in name for col in mb.columns for name in col)


def test_a_run_of_another_store_is_refused(opened):
    s, runs = opened
    h = runs[0].header
    other = runlog.RunLog("/x/p4.jsonl", runlog.Header(**{**h.__dict__, "parts": 4}), runs[0].epochs, [])
    alien = runlog.RunLog("/x/cora.jsonl", runlog.Header(**{**h.__dict__, "dataset": "cora"}), runs[0].epochs, [])
    kept, refused = report.check_runs(s, [runs[0], other, alien])
    assert kept == [runs[0]]
    assert refused == ["p4.jsonl: run on 4 parts, but this store has 2 parts; left out of the report.",
                       f"cora.jsonl: run on dataset 'cora', but this store holds {s.attrs['dataset']!r}; "
                       "left out of the report."]
    assert "p4.jsonl: run on 4 parts" in report.warning_html(refused) and report.warning_html([]) == ""


@pytest.mark.parametrize("out, fmt, want", [("r.html", None, "html"), ("R.HTML", None, "html"), ("r.ipynb", None, "ipynb"),
                                            ("r.html", "ipynb", "ipynb"), ("r.txt", "html", "html")])
def test_format_follows_the_extension(out, fmt, want):
    assert render.output_format(out, fmt) == want


@pytest.mark.parametrize("out", ["report.pdf", "report"])
def test_unknown_extension_is_one_line(out):
    with pytest.raises(UserError) as e:
        render.output_format(out)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{out}: unknown report format")


@pytest.mark.slow
def test_render_writes_the_format_its_extension_names_without_kernel_warnings(stores, tmp_path):
    full, _, log = stores
    nb = render.render(str(full), [str(log)], str(tmp_path / "r.ipynb"))
    assert json.loads(nb.read_text())["cells"]  # a notebook, not HTML
    res = run_cli("report", str(full), "--run", str(log), "--out", str(tmp_path / "r.html"))
    assert res.returncode == 0 and (tmp_path / "r.html").read_text().lstrip().startswith("<!DOCTYPE html>")
    assert "IPKernelApp" not in res.stderr and "WARNING" not in res.stderr, res.stderr


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


@pytest.mark.slow
def test_cli_format_follows_the_extension(stores, tmp_path):
    full, _, _ = stores
    assert run_cli("report", str(full), "--out", str(tmp_path / "r.ipynb")).returncode == 0
    assert json.loads((tmp_path / "r.ipynb").read_text())["cells"]
    res = run_cli("report", str(full), "--out", str(tmp_path / "r.pdf"))
    assert res.returncode == 2 and "unknown report format '.pdf'" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "r.pdf").exists()


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


def test_report_loads_in_a_headless_browser_with_every_figure_drawn(stores, tmp_path):
    exe = browser()
    if exe is None:
        pytest.skip("no chromium installed (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    full, _, log = stores
    out = tmp_path / "report.html"
    res = run_cli("report", str(full), "--run", str(log), "--out", str(out))
    assert res.returncode == 0, res.stderr
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
