"""The quality report: figures and tables for notebooks/quality_report.ipynb,
and ``pipeline report``, which executes that notebook headless and writes
HTML (figures embedded) or the executed notebook.

Each ``fig_*`` function returns a matplotlib Figure (or None when the store
or logs lack what it shows); the notebook displays them with short text.
"""

from __future__ import annotations

import html
import logging
import os
import re
import tempfile
import textwrap
from importlib import resources
from pathlib import Path

import numpy as np

from shgcn import store as store_mod
from shgcn.store import costs, runlog

from . import batch_quality, quality
from .errors import UserError

log = logging.getLogger(__name__)

NOTEBOOK = "quality_report.ipynb"  # package data of shgcn.notebooks
SECTIONS = ("Dataset and build", "Partition quality", "Per-part volume", "Predicted epoch time",
            "Mini-batch partitioning", "Training runs")


# ------------------------------------------------------------------ data

def load_runs(paths: list[str]) -> list[runlog.RunLog]:
    """Parsed run logs (see :mod:`shgcn.store.runlog`)."""
    return [runlog.read_run_log(p) for p in paths]


def check_runs(s: store_mod.Store, runs: list[runlog.RunLog]) -> tuple[list[runlog.RunLog], list[str]]:
    """Split run logs into those of this store and refusals (one sentence
    each): a log whose part count or dataset differs from the store's
    belongs to another store, and its bytes and times would be compared
    with the wrong prediction."""
    kept, refused = [], []
    for r in runs:
        h, name = r.header, Path(r.path).name
        if h.parts != s.parts:
            refused.append(f"{name}: run on {h.parts} parts, but this store has {s.parts} parts; left out of the report.")
        elif h.dataset != s.attrs["dataset"]:
            refused.append(f"{name}: run on dataset {h.dataset!r}, but this store holds {s.attrs['dataset']!r}; "
                           "left out of the report.")
        else:
            kept.append(r)
    return kept, refused


def warning_html(messages: list[str]) -> str:
    """A visible warning box (HTML) listing ``messages``; empty when none."""
    if not messages:
        return ""
    items = "".join(f"<li>{html.escape(m)}</li>" for m in messages)
    return ('<div class="shgcn-warning" style="border-left: 6px solid #c62828; background: #fdecea; color: #4a0d0d; '
            'padding: 8px 16px; margin: 8px 0;"><strong>&#9888; Run logs refused</strong><ul style="margin: 4px 0;">'
            f"{items}</ul></div>")


def run_labels(runs: list[runlog.RunLog]) -> list[str]:
    """The runs' labels (P, exchange, layout model, mode and sampler), with the
    log's file name added where two runs would otherwise look alike."""
    labels = [r.header.label for r in runs]
    return [f"{lab} [{Path(r.path).name}]" if labels.count(lab) > 1 else lab for lab, r in zip(labels, runs)]


def runs_table(runs: list[runlog.RunLog]):
    """One row per run: its log file, label, epochs and final numbers."""
    import pandas as pd
    rows = [{"log": Path(r.path).name, "run": lab, "epochs": len(r.epochs),
             "final loss": f"{r.epochs[-1].loss:.4f}" if r.epochs else "",
             "final test accuracy": next((f"{e.test_acc:.3f}" for e in reversed(r.epochs) if e.test_acc is not None), "")}
            for r, lab in zip(runs, run_labels(runs))]
    out = pd.DataFrame(rows).set_index("log")
    out.columns.name, out.index.name = "log", None  # one header row, "log" over the index column
    return out


_NORMS = {"none": "not normalized", "row": "row-normalized"}


def build_table(s: store_mod.Store) -> list[tuple[str, str]]:
    a = s.attrs
    rows = [("dataset", a["dataset"]), ("vertices", f"{a['n']:,}"),
            ("edges", f"{a['edges']:,} ({'directed' if a['directed'] else 'undirected'})"),
            ("nonzeros of Â", f"{a['nnz']:,}"), ("parts", str(a["parts"])), ("models", ", ".join(a["models"])),
            ("layout model", a["model"]), ("eps", str(a["eps"])), ("seed", str(a["seed"])),
            ("features", f"{a['feature_dim']} ({_NORMS.get(a.get('feature_norm', 'none'), a.get('feature_norm'))})"),
            ("classes", str(a["classes"])), ("command", a["command"])]
    rows += [(f"version of {k}", v) for k, v in a.get("versions", {}).items()]
    return rows


def quality_table(s: store_mod.Store):
    """Raw quality metrics of every model (column names as in :mod:`quality`)."""
    import pandas as pd
    rows = quality.table_from_dataset(s.quality())
    return pd.DataFrame(rows).set_index("model")


# (group, column, raw key, format) of the displayed quality table
QUALITY_COLUMNS = (
    ("rows per SpMM", "total", "total_volume", "{:,.0f}"), ("rows per SpMM", "avg send", "avg_send", "{:,.1f}"),
    ("rows per SpMM", "max send", "max_send", "{:,.0f}"), ("rows per SpMM", "max receive", "max_recv", "{:,.0f}"),
    ("messages per part", "avg", "avg_msgs", "{:,.1f}"), ("messages per part", "max", "max_msgs", "{:,.0f}"),
    ("load", "imbalance", "imbalance", "{:.1%}"), ("graph", "edge cut", "edge_cut", "{:,.0f}"),
    ("graph", "connectivity − 1", "km1", "{:,.0f}"), ("relative to rp", "total volume", "total_volume_vs_rp", "{:.3f}"),
    ("relative to rp", "max send", "max_send_vs_rp", "{:.3f}"), ("relative to rp", "avg messages", "avg_msgs_vs_rp",
                                                                  "{:.3f}"),
    ("time", "partitioning (s)", "seconds", "{:.3g}"),
)


def _display_table(raw, columns):
    """A DataFrame of formatted strings with two-level, human column names."""
    import pandas as pd
    cols = [c for c in columns if c[2] in raw]
    out = pd.DataFrame({(g, name): [fmt.format(v) for v in raw[key]] for g, name, key, fmt in cols}, index=raw.index)
    out.columns = pd.MultiIndex.from_tuples(out.columns, names=["", "model"])  # "model" heads the index column
    out.index.name = None
    return out


def quality_display(s: store_mod.Store):
    """The quality table as shown in the report: grouped, human column names,
    formatted numbers (fits a 1400 px page)."""
    return _display_table(quality_table(s), QUALITY_COLUMNS)


def _simulation(s: store_mod.Store, network: str, hidden: tuple[int, ...]):
    """Predicted epoch of every model under each exchange, one row each (a DataFrame)."""
    import pandas as pd

    from . import simulate

    return pd.DataFrame(simulate.predict_store(s, None, network, ["p2p", "alltoallv", "bcast"], hidden))


def simulation_table(s: store_mod.Store, network: str = "infiniband", hidden: tuple[int, ...] = (16,)):
    """Predicted full-batch epoch time of every model at the store's P, per
    exchange, on a network preset (:mod:`shgcn.pipeline.simulate`)."""
    raw = _simulation(s, network, hidden).set_index(["model", "exchange"])
    raw[["epoch", "compute", "comm"]] *= 1000  # seconds -> ms
    return _display_table(raw, (
        ("predicted epoch", "ms", "epoch", "{:,.3f}"), ("predicted epoch", "compute ms", "compute", "{:,.3f}"),
        ("predicted epoch", "communication ms", "comm", "{:,.3f}"),
        ("slowest rank", "bytes sent", "max_bytes", "{:,.0f}"),
        ("speedup", "over rp", "vs_rp", "{:.2f}"), ("speedup", "over bcast", "vs_bcast", "{:.2f}"),
    ))


def minibatch_table(s: store_mod.Store):
    """Held-out mini-batch quality of every model, as shown in the report (None without shp)."""
    import pandas as pd
    mb = s.minibatch()
    if mb is None:
        return None
    raw = pd.DataFrame(batch_quality.minibatch_rows(mb)).set_index("model")
    raw["volume"] = [f"{m:,.2f} ± {c:,.2f}" for m, c in zip(raw["heldout_volume_mean"], raw["heldout_volume_ci"])]
    raw["max_send"] = [f"{m:,.2f} ± {c:,.2f}" for m, c in zip(raw["heldout_max_send_mean"], raw["heldout_max_send_ci"])]
    return _display_table(raw, (
        ("held-out batches (mean ± 95% CI)", "volume", "volume", "{}"),
        ("held-out batches (mean ± 95% CI)", "max send", "max_send", "{}"),
        ("held-out batches (mean ± 95% CI)", "connectivity λ", "heldout_connectivity", "{:.3f}"),
        ("closed form", "volume", "expected_volume", "{:,.2f}"),
        ("sampled nets", "estimated λ", "estimated_connectivity", "{:.3f}"),
        ("volume relative to", "rp", "vs_rp", "{:.3f}"), ("volume relative to", "hp", "vs_hp", "{:.3f}"),
    ))


# --------------------------------------------------------------- figures

def _plt():
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def _figure(ncols: int = 1, width: float = 6.0, height: float = 3.2, **kw):
    """A figure with constrained layout, so that legends placed "outside" get room of their own."""
    plt = _plt()
    return plt.subplots(1, ncols, figsize=(width, height), squeeze=False, layout="constrained", **kw)


def _legend(fig, handles=None, labels=None, where: str = "right upper", **kw):
    """A figure legend outside every axes: it never covers data."""
    if handles is None:
        handles, labels = [], []
        for ax in fig.axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc=f"outside {where}", fontsize=8, frameon=False, **kw)


def _integer_ticks(axis, n: int) -> None:
    """Ticks at whole numbers only (parts, ranks): every one up to 8, else a few."""
    from matplotlib.ticker import MaxNLocator
    if n <= 8:
        axis.set_ticks(np.arange(n))
    else:
        axis.set_major_locator(MaxNLocator(nbins=6, integer=True))


def fig_degrees(s: store_mod.Store):
    """Degree distribution of the input graph (log-log)."""
    deg = np.diff(s.graph().indptr)
    fig, axes = _figure(width=5)
    ax = axes[0][0]
    values, counts = np.unique(deg[deg > 0], return_counts=True)
    ax.loglog(values, counts, ".", ms=3)
    ax.set_xlabel("degree")
    ax.set_ylabel("vertices")
    ax.set_title(f"{s.attrs['dataset']}: out-degree distribution", fontsize=10)
    return fig


def fig_quality(s: store_mod.Store):
    """Total volume, max send and messages of every model, relative to rp (Table 2)."""
    t = quality_table(s)
    names = {"total_volume_vs_rp": "total volume", "max_send_vs_rp": "max send", "avg_msgs_vs_rp": "avg messages"}
    cols = [c for c in names if c in t] or ["total_volume"]
    fig, axes = _figure(width=6.5)
    ax = axes[0][0]
    x = np.arange(len(t.index))
    w = 0.8 / len(cols)
    for i, c in enumerate(cols):
        ax.bar(x + (i - (len(cols) - 1) / 2) * w, t[c].values, w, label=names.get(c, "total volume"))
    ax.set_xticks(x, t.index)
    ax.set_ylabel("relative to rp" if "rp" in t.index else "rows per SpMM")
    ax.set_title("communication per full-batch SpMM", fontsize=10)
    _legend(fig)
    return fig


def fig_simulation(s: store_mod.Store, network: str = "infiniband", hidden: tuple[int, ...] = (16,)):
    """Predicted epoch time of every model, computation and communication of
    the slowest rank stacked, one panel per exchange (what :func:`simulation_table` lists)."""
    t = _simulation(s, network, hidden)
    exchanges = list(dict.fromkeys(t["exchange"]))
    fig, axes = _figure(len(exchanges), width=2.6 * len(exchanges) + 1.2, height=3, sharey=True)
    for ax, ex in zip(axes[0], exchanges):
        sub = t[t["exchange"] == ex]
        x = np.arange(len(sub))
        compute, comm = sub["compute"].to_numpy() * 1000, sub["comm"].to_numpy() * 1000
        ax.bar(x, compute, 0.6, label="computation")
        ax.bar(x, comm, 0.6, bottom=compute, label="communication")
        ax.set_xticks(x, sub["model"].tolist(), rotation=45 if len(sub) > 4 else 0)
        ax.set_title(ex, fontsize=10)
    axes[0][0].set_ylabel("predicted epoch, ms")
    _legend(fig)
    return fig


def fig_parts(s: store_mod.Store):
    """Send and receive volume of every part, one panel per model."""
    q = s.quality()
    models = [str(m) for m in q["model"].values]
    fig, axes = _figure(len(models), width=2.6 * len(models) + 1.2, height=3, sharey=True)
    for ax, m in zip(axes[0], models):
        send, recv = q["send_volume"].sel(model=m).values, q["recv_volume"].sel(model=m).values
        x = np.arange(send.size)
        ax.bar(x - 0.2, send, 0.4, label="send")
        ax.bar(x + 0.2, recv, 0.4, label="receive")
        _integer_ticks(ax.xaxis, send.size)
        ax.set_title(m, fontsize=10)
        ax.set_xlabel("part")
    axes[0][0].set_ylabel("rows per SpMM")
    _legend(fig)
    return fig


def fig_volume_matrix(s: store_mod.Store):
    """The P x P volume matrix of the layout model as a heat map (values written in for P <= 8)."""
    v = s.quality()["volume"].sel(model=s.attrs["model"]).values
    fig, axes = _figure(width=4.6, height=3.8)
    ax = axes[0][0]
    im = ax.imshow(v, cmap="viridis")
    fig.colorbar(im, ax=ax, label="rows sent per SpMM")
    _integer_ticks(ax.xaxis, v.shape[1])
    _integer_ticks(ax.yaxis, v.shape[0])
    if v.shape[0] <= 8:
        top = v.max() or 1
        for (i, j), val in np.ndenumerate(v):
            ax.text(j, i, f"{val:,}", ha="center", va="center", fontsize=8, color="white" if val < top / 2 else "black")
    ax.set_xlabel("receiver")
    ax.set_ylabel("sender")
    ax.set_title(f"volume matrix ({s.attrs['model']})", fontsize=10)
    return fig


def fig_convergence(s: store_mod.Store):
    """Running mean connectivity of the sampled nets against nets sampled,
    with the ±theta band at the Hoeffding count."""
    mb = s.minibatch()
    if mb is None or "convergence_nets" not in mb:
        return None
    nets, mean = mb["convergence_nets"].values, mb["convergence_mean_connectivity"].values
    theta, req = mb.attrs["theta"], mb.attrs["required_nets"]
    held = float(mb["heldout_connectivity"].sel(model=mb.attrs["convergence_model"]))
    fig, axes = _figure(width=7.5)
    ax = axes[0][0]
    ax.plot(nets, mean, label="running mean λ (sampled nets)")
    ax.axhline(held, color="k", lw=0.8, ls="--", label="held-out mean λ")
    est = float(mb["estimated_connectivity"].sel(model=mb.attrs["convergence_model"]))
    ax.fill_between([max(req, nets[0]), nets[-1]], est - theta, est + theta, alpha=0.15,
                    label=f"estimate ±θ = {theta}\n(1-δ = {1 - mb.attrs['delta']:.2f})")
    ax.axvline(req, color="r", lw=0.8, label=f"Hoeffding count {req:,}")
    ax.set_xlabel("nets sampled")
    ax.set_ylabel("mean connectivity λ")
    ax.set_title(f"convergence ({mb.attrs['convergence_model']})", fontsize=10)
    _legend(fig)
    return fig


def fig_minibatch(s: store_mod.Store):
    """Held-out expected mini-batch volume of every model with 95% CIs."""
    mb = s.minibatch()
    if mb is None:
        return None
    models = [str(m) for m in mb["model"].values]
    fig, axes = _figure(width=6.5)
    ax = axes[0][0]
    ax.bar(models, mb["heldout_volume_mean"].values, yerr=mb["heldout_volume_ci"].values, capsize=4,
           label="held-out mean ± 95% CI")
    closed = mb["expected_volume"].values
    if np.isfinite(closed).all():
        ax.plot(models, closed, "k_", ms=20, mew=2, label="closed form")
    ax.set_ylabel("rows per mini-batch SpMM")
    ax.set_title(f"expected mini-batch volume ({mb.attrs['sampler']}, B = {mb.attrs['batch_size']:,})", fontsize=10)
    _legend(fig)
    return fig


def fig_training(runs: list[runlog.RunLog]):
    """Loss and accuracy against epochs for every run: one colour per run;
    test accuracy solid, validation dotted. The legend names the runs."""
    if not runs:
        return None
    from matplotlib.lines import Line2D
    fig, axes = _figure(2, width=10, height=3.6 + 0.22 * len(runs))
    a1, a2 = axes[0]
    for k, (r, label) in enumerate(zip(runs, run_labels(runs))):
        ep, color = r.epochs, f"C{k % 10}"
        a1.plot([e.epoch for e in ep], [e.loss for e in ep], color=color, label=label)
        ev = [e for e in ep if e.test_acc is not None]
        a2.plot([e.epoch for e in ev], [e.test_acc for e in ev], color=color)
        a2.plot([e.epoch for e in ev], [e.val_acc for e in ev], color=color, ls=":")
    a1.set_xlabel("epoch")
    a1.set_ylabel("training loss")
    a1.set_title("loss", fontsize=10)
    a2.set_xlabel("epoch")
    a2.set_ylabel("accuracy")
    a2.set_title("accuracy", fontsize=10)
    handles, labels = a1.get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3"), Line2D([], [], color="0.3", ls=":")]
    labels += ["test accuracy", "validation accuracy"]
    _legend(fig, handles, labels, where="lower center", ncols=1 if len(runs) > 2 else 2)
    return fig


def fig_time_split(runs: list[runlog.RunLog]):
    """Mean epoch time per rank, split into computation and communication wait."""
    if not runs:
        return None
    fig, axes = _figure(len(runs), width=3.8 * len(runs) + 1.6, height=3.4)
    for ax, r, label in zip(axes[0], runs, run_labels(runs)):
        comp = np.mean([e.compute_time for e in r.epochs], axis=0)
        comm = np.mean([e.comm_time for e in r.epochs], axis=0)
        x = np.arange(comp.size)
        ax.bar(x, comp * 1000, label="compute")
        ax.bar(x, comm * 1000, bottom=comp * 1000, label="communication wait")
        _integer_ticks(ax.xaxis, comp.size)
        ax.set_xlabel("rank")
        ax.set_ylabel("ms per epoch")
        ax.set_title(textwrap.fill(label, 34), fontsize=8)
    _legend(fig)
    return fig


def predicted_bytes(s: store_mod.Store, header: runlog.Header) -> np.ndarray | None:
    """Bytes each rank should send per full-batch training step: the store's
    send volume (receive volume for a directed graph's backward) times the
    SpMM row widths times 4."""
    if header.mode != "full" or header.parts != s.parts or header.exchange == "bcast":
        return None
    vol = s.quality()["volume"].sel(model=s.attrs["model"]).values
    return costs.step_bytes(vol.sum(1), vol.sum(0), header.dims, header.w_first, s.attrs["directed"])


def fig_bytes(s: store_mod.Store, runs: list[runlog.RunLog]):
    """Measured bytes per rank against the store's prediction (the diagonal)."""
    from matplotlib.ticker import EngFormatter, MaxNLocator
    pairs = [(r, lab, p) for r, lab in zip(runs, run_labels(runs))
             if r.epochs and (p := predicted_bytes(s, r.header)) is not None]
    if not pairs:
        return None
    fig, axes = _figure(width=7, height=4)
    ax = axes[0][0]
    top = 0.0
    for r, label, p in pairs:
        measured = np.array(r.epochs[-1].bytes_sent)
        ax.plot(p, measured, "o", label=label)
        top = max(top, p.max(), measured.max())
    ax.plot([0, top], [0, top], "k--", lw=0.8, label="measured = predicted")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(EngFormatter(unit="B"))
        axis.set_major_locator(MaxNLocator(5))
    ax.set_xlabel("predicted bytes per epoch (store)")
    ax.set_ylabel("measured bytes per epoch (trainer)")
    _legend(fig)
    return fig


# ---------------------------------------------------------------- render

FORMATS = {".html": "html", ".htm": "html", ".ipynb": "ipynb"}


def output_format(out: str | Path, fmt: str | None = None) -> str:
    """``html`` or ``ipynb``: ``fmt`` when given (an override), else from
    ``out``'s extension; :class:`UserError` (one line) for anything else."""
    if fmt is not None:
        if fmt not in ("html", "ipynb"):
            raise UserError(f"--format {fmt!r}: choose html or ipynb")
        return fmt
    ext = Path(out).suffix.lower()
    if ext not in FORMATS:
        raise UserError(f"{out}: unknown report format {ext or '(no extension)'!r}: "
                        "name the output .html or .ipynb (or pass --format html|ipynb)")
    return FORMATS[ext]


def _kernel_config(tmp: str):
    """Run the kernel over Unix sockets in ``tmp`` where the platform has them:
    over TCP, ipykernel warns on stderr that the traffic is not encrypted."""
    from traitlets.config import Config
    c = Config()
    if os.name == "posix":
        c.KernelManager.transport = "ipc"
        c.KernelManager.ip = str(Path(tmp) / "kernel")
    return c


def render(store_path: str, runs: list[str], out: str, fmt: str | None = None, timeout: int = 600) -> Path:
    """Execute the report notebook for ``store_path`` (and run logs) and
    write ``out``: HTML with embedded figures, or the executed notebook;
    ``fmt`` overrides the format that ``out``'s extension names.

    Raises :class:`UserError` for a missing store or log or an unknown
    format; a failing cell raises ``nbclient.exceptions.CellExecutionError``.
    Run logs of another store (part count, dataset) are left out of the
    report with a warning in it, and logged here.
    """
    import nbformat
    from nbclient import NotebookClient

    s = store_mod.open_store(store_path)  # fail early, with the store's own message
    _, refused = check_runs(s, load_runs(runs))  # and with the run logs' own messages
    fmt = output_format(out, fmt)
    out_path = Path(out)
    if not out_path.parent.exists():
        raise UserError(f"{out_path.parent}: directory does not exist")
    for message in refused:
        log.warning("%s", message)
    nb = nbformat.reads((resources.files("shgcn.notebooks") / NOTEBOOK).read_text(encoding="utf-8"), as_version=4)
    params = (f"store_path = {str(Path(store_path).resolve())!r}\n"
              f"run_logs = {[str(Path(r).resolve()) for r in runs]!r}\n")
    idx = next((i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])), -1)
    injected = nbformat.v4.new_code_cell(params)
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(idx + 1, injected)
    with tempfile.TemporaryDirectory(prefix="shgcn-kernel-") as tmp:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", config=_kernel_config(tmp),
                       resources={"metadata": {"path": str(Path.cwd())}}).execute()
    if fmt == "ipynb":
        text = nbformat.writes(nb)
    else:
        from nbconvert import HTMLExporter
        exporter = HTMLExporter()
        exporter.exclude_input = True
        exporter.exclude_input_prompt = True
        exporter.exclude_output_prompt = True
        text, _ = exporter.from_notebook_node(nb)
        # self-contained: the report needs no require.js or MathJax from a CDN
        text = re.sub(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', "", text)
    tmp_out = out_path.with_name(f".{out_path.name}.partial-{os.getpid()}")
    tmp_out.write_text(text, encoding="utf-8")
    os.replace(tmp_out, out_path)
    return out_path
