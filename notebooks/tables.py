"""What the report shows as tables, read from a store and run logs only
(never from the pipeline): the build, the quality of every model, the
predicted epoch (:mod:`shgcn.core.epoch`), the mini-batch quality and the
training runs."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from shgcn import store as store_mod
from shgcn.core import epoch, runlog
from shgcn.core.exchanges import EXCHANGES
from shgcn.core.tables import BASELINE, minibatch_rows, table_from_dataset


def sig3(x) -> str:
    """A number to 3 significant digits (never in exponent notation; an
    integer part is never cut: 12,346), thousands separated."""
    import math

    if x is None:
        return ""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 999.5:
        return f"{x:,.0f}"
    digits = 2 - math.floor(math.log10(abs(float(f"{x:.3g}")))) if x else 0  # after rounding: 0.9996 -> 1.00
    return f"{x:.{max(0, digits)}f}"


def pct3(x) -> str:
    """A fraction as a percentage to 3 significant digits (0.0123 -> 1.23%)."""
    return "" if x is None else sig3(100 * float(x)) + "%"


def count(x) -> str:
    """An exact count (rows, messages, bytes), thousands separated."""
    return f"{float(x):,.0f}"


SECTIONS = ("Dataset and build", "Partition quality", "Per-part volume", "Predicted epoch time",
            "Mini-batch partitioning", "Training runs")


# ------------------------------------------------------------------ data

def load_runs(paths: list[str]) -> list[runlog.RunLog]:
    """Parsed run logs (see :mod:`shgcn.core.runlog`)."""
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
             "final loss": sig3(r.epochs[-1].loss) if r.epochs else "",
             "final test score": next((f"{sig3(e.test_acc)} ({r.header.metric})" for e in reversed(r.epochs)
                                       if e.test_acc is not None), "")}
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
            ("features", f"{a['feature_dim']} ({_NORMS.get(a.get('feature_norm', 'none'), a.get('feature_norm'))}, "
                         f"{a.get('feature_dtype', 'float32')})"),
            ("classes", str(a["classes"]) + (" (multi-label: sigmoid loss, micro-F1)"
                                             if a.get("label_kind") == "multi" else "")), ("command", a["command"])]
    rows += [(f"version of {k}", v) for k, v in a.get("versions", {}).items()]
    return rows


def quality_table(s: store_mod.Store):
    """Raw quality metrics of every model (column names as in :mod:`quality`)."""
    import pandas as pd
    rows = table_from_dataset(s.quality())
    return pd.DataFrame(rows).set_index("model")


# (group, column, raw key, format) of the displayed quality table
# counts are exact; every other number has 3 significant digits
QUALITY_COLUMNS = (
    ("rows per SpMM", "total", "total_volume", count), ("rows per SpMM", "avg send", "avg_send", sig3),
    ("rows per SpMM", "max send", "max_send", count), ("rows per SpMM", "max receive", "max_recv", count),
    ("messages per part", "avg", "avg_msgs", sig3), ("messages per part", "max", "max_msgs", count),
    ("imbalance (max/avg - 1)", "rows", "rows_imbalance", pct3),
    ("imbalance (max/avg - 1)", "nonzeros", "imbalance", pct3),
    ("imbalance (max/avg - 1)", "modelled compute", "work_imbalance", pct3), ("graph", "edge cut", "edge_cut", count),
    ("graph", "connectivity − 1", "km1", count), ("relative to rp", "total volume", "total_volume_vs_rp", sig3),
    ("relative to rp", "max send", "max_send_vs_rp", sig3), ("relative to rp", "avg messages", "avg_msgs_vs_rp", sig3),
    ("time", "partitioning (s)", "seconds", sig3),
    ("between nodes (placed)", "node-aware rows", "inter_volume", count),
    ("between nodes (placed)", "in block order", "inter_volume_block", count),
    ("between nodes (placed)", "flat rows", "inter_volume_flat", count),
    ("between nodes (placed)", "max node send", "max_node_send", count),
    ("between nodes (placed)", "max node messages", "max_node_msgs", count),
)


def _display_table(raw, columns):
    """A DataFrame of formatted strings with two-level, human column names
    (a column's format: a function of the value, or a format string)."""
    import pandas as pd
    cols = [c for c in columns if c[2] in raw]
    out = pd.DataFrame({(g, name): [fmt(v) if callable(fmt) else fmt.format(v) for v in raw[key]]
                        for g, name, key, fmt in cols}, index=raw.index)
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

    dims = epoch.dims_of(s.attrs["feature_dim"], hidden, s.attrs["classes"])
    k = int(s.attrs.get("ranks_per_node") or 1)
    exchanges = [x for x, spec in EXCHANGES.items() if k > 1 or not spec.node_aware]  # placed: node-aware too
    return pd.DataFrame(epoch.predict(s.partition_costs(), epoch.Job(tuple(dims), ranks_per_node=k,
                                                                          input_density=s.feature_density()), network,
                                      exchanges=exchanges))


def preset_words(network: str) -> str:
    """How a prediction names its machine and the network model it used, so it is never read as a time
    measured here: ``infiniband preset, fluid contention, not this machine``."""
    from shgcn.core.machine import machine_of

    m = machine_of(network)
    net = f"{m.contention} contention" if m.link_rate else "no shared link"
    return f"{network} preset, {net}, not this machine" if network != "this" else f"this machine's preset ({net}; a model)"


def simulation_table(s: store_mod.Store, network: str = "infiniband", hidden: tuple[int, ...] = (16,)):
    """Predicted full-batch epoch time of every model at the store's P, per
    exchange, on a network preset (:mod:`shgcn.core.epoch`)."""
    raw = _simulation(s, network, hidden).set_index(["model", "exchange"])
    raw[["epoch", "compute", "comm"]] *= 1000  # seconds -> ms
    head = f"predicted epoch ({preset_words(network)})"
    return _display_table(raw, (
        (head, "ms", "epoch", sig3), (head, "compute ms", "compute", sig3), (head, "communication ms", "comm", sig3),
        ("slowest rank", "bytes sent", "max_bytes", count),
        ("imbalance (max/avg - 1)", "rows", "rows_imbalance", pct3),
        ("imbalance (max/avg - 1)", "nonzeros", "nnz_imbalance", pct3),
        ("imbalance (max/avg - 1)", "compute", "compute_imbalance", pct3),
        ("speedup", "over rp", "vs_rp", sig3), ("speedup", "over bcast", "vs_bcast", sig3),
    ))


def _comm_words(r, rp) -> str:
    saved = (rp["comm"] - r["comm"]) * 1000
    if saved > 0:
        return f"its communication is {sig3(saved)} ms shorter, which does not make up for it."
    return f"its communication is not shorter either ({sig3(r['comm'] * 1000)} ms, rp {sig3(rp['comm'] * 1000)} ms)."


def simulation_note(s: store_mod.Store, network: str = "infiniband", hidden: tuple[int, ...] = (16,)) -> str:
    """One sentence per model predicted slower than rp (p2p): why, from its
    busiest rank's compute, rows and nonzeros against rp's, and its bytes."""
    t = _simulation(s, network, hidden)
    t = t[t["exchange"] == epoch.Job(()).exchange].set_index("model")  # the trainer's default exchange
    if BASELINE not in t.index:
        return ""
    rp = t.loc[BASELINE]
    out = []
    for m, r in t.iterrows():
        if m == BASELINE or r["epoch"] <= rp["epoch"]:
            continue
        out.append(f"- **{m}** is predicted {pct3(r['epoch'] / rp['epoch'] - 1)} slower than rp: its slowest rank "
                   f"computes {sig3(r['compute'] * 1000)} ms against rp's {sig3(rp['compute'] * 1000)} ms (compute "
                   f"imbalance {pct3(r['compute_imbalance'])}, rp {pct3(rp['compute_imbalance'])}; rows "
                   f"{pct3(r['rows_imbalance'])}, rp {pct3(rp['rows_imbalance'])}; nonzeros "
                   f"{pct3(r['nnz_imbalance'])}, rp {pct3(rp['nnz_imbalance'])}); " + _comm_words(r, rp))
    if not out:
        return "Every model is predicted at least as fast as rp with the p2p exchange."
    return ("The slowest rank sets the epoch. Where a model is slower than rp, its busiest rank does more work "
            "than rp's, which deals rows evenly:\n\n" + "\n".join(out))


def minibatch_table(s: store_mod.Store):
    """Held-out mini-batch quality of every model, as shown in the report (None without shp)."""
    import pandas as pd
    mb = s.minibatch()
    if mb is None:
        return None
    raw = pd.DataFrame(minibatch_rows(mb)).set_index("model")
    raw["volume"] = [f"{sig3(m)} ± {sig3(c)}" for m, c in zip(raw["heldout_volume_mean"], raw["heldout_volume_ci"])]
    raw["max_send"] = [f"{sig3(m)} ± {sig3(c)}" for m, c in zip(raw["heldout_max_send_mean"], raw["heldout_max_send_ci"])]
    return _display_table(raw, (
        ("held-out batches (mean ± 95% CI)", "volume", "volume", "{}"),
        ("held-out batches (mean ± 95% CI)", "max send", "max_send", "{}"),
        ("held-out batches (mean ± 95% CI)", "connectivity λ", "heldout_connectivity", sig3),
        ("closed form", "volume", "expected_volume", sig3),
        ("sampled nets", "estimated λ", "estimated_connectivity", sig3),
        ("volume relative to", "rp", "vs_rp", sig3), ("volume relative to", "hp", "vs_hp", sig3),
    ))


def predicted_bytes(s: store_mod.Store, header: runlog.Header) -> np.ndarray | None:
    """Bytes each rank should send per full-batch training step: the epoch model's exact count for the run's
    job (:meth:`shgcn.core.runlog.Header.job`) on the store's layout partition."""
    if header.mode != "full" or header.parts != s.parts:
        return None
    cost = next(c for c in s.partition_costs() if c.model == s.attrs["model"])
    return epoch.rank_traffic(cost, header.job())["bytes_sent"]
