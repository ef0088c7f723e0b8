"""The quality report: figures and tables for notebooks/quality_report.ipynb,
and ``pipeline report``, which executes that notebook headless and writes
HTML (figures embedded) or the executed notebook.

Each ``fig_*`` function returns a matplotlib Figure (or None when the store
or logs lack what it shows); the notebook displays them with short text.
"""

from __future__ import annotations

import logging
import os
import re
from importlib import resources
from pathlib import Path

import numpy as np

from shgcn import store as store_mod
from shgcn.store import costs, runlog

from . import batch_quality, quality
from .errors import UserError

log = logging.getLogger(__name__)

NOTEBOOK = "quality_report.ipynb"  # package data of shgcn.notebooks
SECTIONS = ("Dataset and build", "Partition quality", "Per-part volume", "Mini-batch partitioning",
            "Training runs")


# ------------------------------------------------------------------ data

def load_runs(paths: list[str]) -> list[runlog.RunLog]:
    """Parsed run logs (see :mod:`shgcn.store.runlog`)."""
    return [runlog.read_run_log(p) for p in paths]


def build_table(s: store_mod.Store) -> list[tuple[str, str]]:
    a = s.attrs
    rows = [("dataset", a["dataset"]), ("vertices", f"{a['n']:,}"),
            ("edges", f"{a['edges']:,} ({'directed' if a['directed'] else 'undirected'})"),
            ("nonzeros of Â", f"{a['nnz']:,}"), ("parts", str(a["parts"])), ("models", ", ".join(a["models"])),
            ("layout model", a["model"]), ("eps", str(a["eps"])), ("seed", str(a["seed"])),
            ("features", f"{a['feature_dim']} ({a.get('feature_norm', 'none')} normalization)"),
            ("classes", str(a["classes"])), ("command", a["command"])]
    rows += [(f"version of {k}", v) for k, v in a.get("versions", {}).items()]
    return rows


def quality_table(s: store_mod.Store):
    import pandas as pd
    rows = quality.table_from_dataset(s.quality())
    return pd.DataFrame(rows).set_index("model")


def minibatch_table(s: store_mod.Store):
    import pandas as pd
    mb = s.minibatch()
    return None if mb is None else pd.DataFrame(batch_quality.minibatch_rows(mb)).set_index("model")


# --------------------------------------------------------------- figures

def _plt():
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def fig_degrees(s: store_mod.Store):
    """Degree distribution of the input graph (log-log)."""
    plt = _plt()
    deg = np.diff(s.graph().indptr)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    values, counts = np.unique(deg[deg > 0], return_counts=True)
    ax.loglog(values, counts, ".", ms=3)
    ax.set_xlabel("degree")
    ax.set_ylabel("vertices")
    ax.set_title(f"{s.attrs['dataset']}: out-degree distribution")
    fig.tight_layout()
    return fig


def fig_quality(s: store_mod.Store):
    """Total volume, max send and messages of every model, relative to rp (Table 2)."""
    plt = _plt()
    t = quality_table(s)
    cols = [c for c in ("total_volume_vs_rp", "max_send_vs_rp", "avg_msgs_vs_rp") if c in t]
    if not cols:
        cols = ["total_volume"]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    x = np.arange(len(t.index))
    for i, c in enumerate(cols):
        ax.bar(x + (i - (len(cols) - 1) / 2) * 0.25, t[c].values, 0.25, label=c.replace("_vs_rp", " / rp"))
    ax.set_xticks(x, t.index)
    ax.set_ylabel("relative to rp" if "rp" in t.index else "rows")
    ax.legend(fontsize=8)
    ax.set_title("communication per full-batch SpMM")
    fig.tight_layout()
    return fig


def fig_parts(s: store_mod.Store):
    """Send and receive volume of every part, one panel per model."""
    plt = _plt()
    q = s.quality()
    models = [str(m) for m in q["model"].values]
    fig, axes = plt.subplots(1, len(models), figsize=(3.2 * len(models), 3), sharey=True, squeeze=False)
    for ax, m in zip(axes[0], models):
        send, recv = q["send_volume"].sel(model=m).values, q["recv_volume"].sel(model=m).values
        x = np.arange(send.size)
        ax.bar(x - 0.2, send, 0.4, label="send")
        ax.bar(x + 0.2, recv, 0.4, label="receive")
        ax.set_title(m)
        ax.set_xlabel("part")
    axes[0][0].set_ylabel("rows per SpMM")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig_volume_matrix(s: store_mod.Store):
    """The P x P volume matrix of the layout model as a heat map."""
    plt = _plt()
    v = s.quality()["volume"].sel(model=s.attrs["model"]).values
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    im = ax.imshow(v, cmap="viridis")
    fig.colorbar(im, ax=ax, label="rows sent per SpMM")
    ax.set_xlabel("receiver")
    ax.set_ylabel("sender")
    ax.set_title(f"volume matrix ({s.attrs['model']})")
    fig.tight_layout()
    return fig


def fig_convergence(s: store_mod.Store):
    """Running mean connectivity of the sampled nets against nets sampled,
    with the ±theta band at the Hoeffding count."""
    mb = s.minibatch()
    if mb is None or "convergence_nets" not in mb:
        return None
    plt = _plt()
    nets, mean = mb["convergence_nets"].values, mb["convergence_mean_connectivity"].values
    theta, req = mb.attrs["theta"], mb.attrs["required_nets"]
    held = float(mb["heldout_connectivity"].sel(model=mb.attrs["convergence_model"]))
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(nets, mean, label="running mean λ (sampled nets)")
    ax.axhline(held, color="k", lw=0.8, ls="--", label="held-out mean λ")
    est = float(mb["estimated_connectivity"].sel(model=mb.attrs["convergence_model"]))
    ax.fill_between([max(req, nets[0]), nets[-1]], est - theta, est + theta, alpha=0.15,
                    label=f"estimate ±θ = {theta} (1-δ = {1 - mb.attrs['delta']:.2f})")
    ax.axvline(req, color="r", lw=0.8, label=f"Hoeffding count {req:,}")
    ax.set_xlabel("nets sampled")
    ax.set_ylabel("mean connectivity λ")
    ax.legend(fontsize=7)
    ax.set_title(f"convergence ({mb.attrs['convergence_model']})")
    fig.tight_layout()
    return fig


def fig_minibatch(s: store_mod.Store):
    """Held-out expected mini-batch volume of every model with 95% CIs."""
    mb = s.minibatch()
    if mb is None:
        return None
    plt = _plt()
    models = [str(m) for m in mb["model"].values]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(models, mb["heldout_volume_mean"].values, yerr=mb["heldout_volume_ci"].values, capsize=4,
           label="held-out mean ± 95% CI")
    closed = mb["expected_volume"].values
    if np.isfinite(closed).all():
        ax.plot(models, closed, "k_", ms=20, mew=2, label="closed form")
    ax.set_ylabel("rows per mini-batch SpMM")
    ax.set_title(f"expected mini-batch volume ({mb.attrs['sampler']}, B = {mb.attrs['batch_size']:,})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig_training(runs: list[runlog.RunLog]):
    """Loss and accuracy against epochs for every run."""
    if not runs:
        return None
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.2))
    for r in runs:
        ep, label = r.epochs, r.header.label
        a1.plot([e.epoch for e in ep], [e.loss for e in ep], label=label)
        ev = [e for e in ep if e.test_acc is not None]
        a2.plot([e.epoch for e in ev], [e.test_acc for e in ev], label=label + " test")
        a2.plot([e.epoch for e in ev], [e.val_acc for e in ev], ls=":", label=label + " val")
    a1.set_xlabel("epoch")
    a1.set_ylabel("training loss")
    a2.set_xlabel("epoch")
    a2.set_ylabel("accuracy")
    a2.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig_time_split(runs: list[runlog.RunLog]):
    """Mean epoch time per rank, split into computation and communication wait."""
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(runs), figsize=(4 * len(runs), 3), squeeze=False)
    for ax, r in zip(axes[0], runs):
        comp = np.mean([e.compute_time for e in r.epochs], axis=0)
        comm = np.mean([e.comm_time for e in r.epochs], axis=0)
        x = np.arange(comp.size)
        ax.bar(x, comp * 1000, label="compute")
        ax.bar(x, comm * 1000, bottom=comp * 1000, label="communication wait")
        ax.set_xlabel("rank")
        ax.set_ylabel("ms per epoch")
        ax.set_title(r.header.label, fontsize=8)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
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
    pairs = [(r, p) for r in runs if r.epochs and (p := predicted_bytes(s, r.header)) is not None]
    if not pairs:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 4))
    top = 0.0
    for r, p in pairs:
        measured = np.array(r.epochs[-1].bytes_sent)
        ax.plot(p, measured, "o", label=r.header.label)
        top = max(top, p.max(), measured.max())
    ax.plot([0, top], [0, top], "k--", lw=0.8, label="measured = predicted")
    ax.set_xlabel("predicted bytes per epoch (store)")
    ax.set_ylabel("measured bytes per epoch (trainer)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- render

def render(store_path: str, runs: list[str], out: str, fmt: str = "html", timeout: int = 600) -> Path:
    """Execute the report notebook for ``store_path`` (and run logs) and
    write ``out`` (HTML with embedded figures, or the executed notebook).

    Raises :class:`UserError` for a missing store or log; a failing cell
    raises ``nbclient.exceptions.CellExecutionError``.
    """
    import nbformat
    from nbclient import NotebookClient

    store_mod.open_store(store_path)  # fail early, with the store's own message
    load_runs(runs)  # and with the run logs' own messages
    if fmt not in ("html", "ipynb"):
        raise UserError(f"--format {fmt!r}: choose html or ipynb")
    out_path = Path(out)
    if not out_path.parent.exists():
        raise UserError(f"{out_path.parent}: directory does not exist")
    nb = nbformat.reads((resources.files("shgcn.notebooks") / NOTEBOOK).read_text(encoding="utf-8"), as_version=4)
    params = (f"store_path = {str(Path(store_path).resolve())!r}\n"
              f"run_logs = {[str(Path(r).resolve()) for r in runs]!r}\n")
    idx = next((i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])), -1)
    injected = nbformat.v4.new_code_cell(params)
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(idx + 1, injected)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
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
    tmp = out_path.with_name(f".{out_path.name}.partial-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out_path)
    return out_path
