"""What the report shows as tables, read from a store and run logs only
(never from the pipeline): the build, the quality of every model, the
predicted epoch (:mod:`shgcn.store.epoch`), the mini-batch quality and the
training runs."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from shgcn import store as store_mod
from shgcn.store import costs, epoch, runlog
from shgcn.store.tables import minibatch_rows, table_from_dataset

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
    rows = table_from_dataset(s.quality())
    return pd.DataFrame(rows).set_index("model")


# (group, column, raw key, format) of the displayed quality table
QUALITY_COLUMNS = (
    ("rows per SpMM", "total", "total_volume", "{:,.0f}"), ("rows per SpMM", "avg send", "avg_send", "{:,.1f}"),
    ("rows per SpMM", "max send", "max_send", "{:,.0f}"), ("rows per SpMM", "max receive", "max_recv", "{:,.0f}"),
    ("messages per part", "avg", "avg_msgs", "{:,.1f}"), ("messages per part", "max", "max_msgs", "{:,.0f}"),
    ("imbalance (max/avg - 1)", "rows", "rows_imbalance", "{:.1%}"),
    ("imbalance (max/avg - 1)", "nonzeros", "imbalance", "{:.1%}"),
    ("imbalance (max/avg - 1)", "modelled compute", "work_imbalance", "{:.1%}"), ("graph", "edge cut", "edge_cut", "{:,.0f}"),
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

    return pd.DataFrame(epoch.predict_store(s, network, ["p2p", "alltoallv", "bcast"], hidden))


def simulation_table(s: store_mod.Store, network: str = "infiniband", hidden: tuple[int, ...] = (16,)):
    """Predicted full-batch epoch time of every model at the store's P, per
    exchange, on a network preset (:mod:`shgcn.store.epoch`)."""
    raw = _simulation(s, network, hidden).set_index(["model", "exchange"])
    raw[["epoch", "compute", "comm"]] *= 1000  # seconds -> ms
    return _display_table(raw, (
        ("predicted epoch", "ms", "epoch", "{:,.3f}"), ("predicted epoch", "compute ms", "compute", "{:,.3f}"),
        ("predicted epoch", "communication ms", "comm", "{:,.3f}"),
        ("slowest rank", "bytes sent", "max_bytes", "{:,.0f}"),
        ("imbalance", "rows", "rows_imbalance", "{:.1%}"), ("imbalance", "nonzeros", "nnz_imbalance", "{:.1%}"),
        ("imbalance", "compute", "compute_imbalance", "{:.1%}"),
        ("speedup", "over rp", "vs_rp", "{:.2f}"), ("speedup", "over bcast", "vs_bcast", "{:.2f}"),
    ))


def minibatch_table(s: store_mod.Store):
    """Held-out mini-batch quality of every model, as shown in the report (None without shp)."""
    import pandas as pd
    mb = s.minibatch()
    if mb is None:
        return None
    raw = pd.DataFrame(minibatch_rows(mb)).set_index("model")
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


def predicted_bytes(s: store_mod.Store, header: runlog.Header) -> np.ndarray | None:
    """Bytes each rank should send per full-batch training step: the store's
    send volume (receive volume for a directed graph's backward) times the
    SpMM row widths times 4."""
    if header.mode != "full" or header.parts != s.parts or header.exchange == "bcast":
        return None
    vol = s.quality()["volume"].sel(model=s.attrs["model"]).values
    return costs.step_bytes(vol.sum(1), vol.sum(0), header.dims, header.w_first, s.attrs["directed"],
                            itemsize=costs.WIRE_DTYPES.get(header.exchange_dtype, 4), arch=header.arch,
                            heads=header.heads)
