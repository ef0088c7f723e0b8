"""The store's quality tables as rows and as text: what ``pipeline info``,
the build's summary and the report show. They read the store's ``quality``
and ``minibatch`` datasets only.

Ratios are to the random partition, the baseline of the paper's Table 2
(:data:`BASELINE`); the mini-batch table also compares with the
hypergraph model (:data:`MINIBATCH_REFERENCES`), and the report's figure of
every part's volume with the graph partition (:data:`REFERENCE`). These are
the report's names of partition models: it reads stores, not the pipeline's
registry (whose test checks that they are registered models).
"""

from __future__ import annotations

import numpy as np

BASELINE = "rp"  # every ratio column ("vs_rp") is to this model's partition
MINIBATCH_REFERENCES = (BASELINE, "hp")
REFERENCE = "gp"  # the graph partition (what DistDGL partitions with): the report's figure of every part against it
METRICS = ("total_volume", "avg_send", "max_send", "max_recv", "max_avg_send", "max_avg_recv", "avg_msgs",
           "max_msgs", "imbalance", "rows_imbalance", "work_imbalance", "edge_cut", "km1", "seconds")
# imbalance: of the nonzeros (the load); rows_imbalance: of the rows; work_imbalance: of the modelled compute
NODE_METRICS = ("ranks_per_node", "nodes", "inter_volume", "inter_volume_block", "inter_volume_flat", "max_node_send",
                "max_node_recv", "max_node_msgs", "avg_node_msgs")
# between nodes (a store built with --ranks-per-node): rows of H per SpMM that cross the network with the node-aware
# exchange (inter_volume; with the parts in the partitioner's order: inter_volume_block) and with a flat one
# (inter_volume_flat); per node: rows sent and received across, nodes sent to (the node-aware exchange's messages)


def table_from_dataset(ds) -> list[dict]:
    """One dict of metrics per model, plus ratios to the baseline (:data:`BASELINE`) when present."""
    models = [str(m) for m in ds["model"].values]
    rows = []
    for i, m in enumerate(models):
        row: dict = {"model": m}
        for key in METRICS:  # a store built before a metric existed: NaN
            row[key] = ds[key].values[i].item() if key in ds else float("nan")
        for key in NODE_METRICS:  # only a store placed on nodes has them
            if key in ds:
                row[key] = ds[key].values[i].item()
        rows.append(row)
    if BASELINE in models:
        ref = rows[models.index(BASELINE)]
        for row in rows:
            for key in ("total_volume", "max_send", "max_recv", "avg_msgs", "max_msgs"):
                row[f"{key}_vs_rp"] = row[key] / ref[key] if ref[key] else float("nan")
    return rows


def format_table(rows: list[dict]) -> str:
    """Fixed-width text table of :func:`table_from_dataset` rows."""
    cols = [("model", "model", "{}"), ("total_volume", "volume", "{:,}"), ("avg_send", "avg send", "{:,.1f}"),
            ("max_send", "max send", "{:,}"), ("max_recv", "max recv", "{:,}"),
            ("max_avg_send", "send max/avg", "{:.2f}"), ("max_avg_recv", "recv max/avg", "{:.2f}"),
            ("avg_msgs", "avg msgs", "{:.1f}"),
            ("max_msgs", "max msgs", "{}"), ("rows_imbalance", "rows imb", "{:.3f}"),
            ("imbalance", "nnz imb", "{:.3f}"), ("work_imbalance", "work imb", "{:.3f}"), ("edge_cut", "edge cut", "{:,}"),
            ("km1", "km1", "{:,}"), ("seconds", "time s", "{:.2f}")]
    if rows and "total_volume_vs_rp" in rows[0]:
        cols += [("total_volume_vs_rp", "vol/rp", "{:.3f}"), ("max_send_vs_rp", "max/rp", "{:.3f}"),
                 ("max_recv_vs_rp", "maxrecv/rp", "{:.3f}"),
                 ("avg_msgs_vs_rp", "msgs/rp", "{:.3f}")]
    if rows and "inter_volume" in rows[0]:
        cols += [("inter_volume", "inter-node", "{:,}"), ("inter_volume_block", "block", "{:,}"),
                 ("inter_volume_flat", "flat", "{:,}"), ("max_node_send", "node send", "{:,}"),
                 ("max_node_msgs", "node msgs", "{}")]
    cells = [[h for _, h, _ in cols]] + [[f.format(r[k]) for k, _, f in cols] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)


def minibatch_rows(ds) -> list[dict]:
    rows: list[dict] = []
    for i, m in enumerate(ds["model"].values):
        rows.append({"model": str(m), **{k: float(ds[k].values[i]) for k in (
            "heldout_volume_mean", "heldout_volume_ci", "heldout_max_send_mean", "heldout_max_send_ci",
            "heldout_connectivity", "expected_volume", "estimated_connectivity")}})
    models = [r["model"] for r in rows]
    for ref in MINIBATCH_REFERENCES:
        if ref in models:
            base = rows[models.index(ref)]["heldout_volume_mean"]
            for r in rows:
                r[f"vs_{ref}"] = r["heldout_volume_mean"] / base if base else float("nan")
    return rows


def format_minibatch(ds) -> str:
    rows = minibatch_rows(ds)
    a = ds.attrs
    head = (f"mini-batch ({a['sampler']} sampler, B = {a['batch_size']:,}, {a['eval_batches']} held-out batches; "
            f"Hoeffding: {a['required_nets']:,} nets for theta = {a['theta']}, delta = {a['delta']})")
    cols = [("model", "model", "{}"), ("heldout_volume_mean", "E[volume]", "{:,.1f}"),
            ("heldout_volume_ci", "±95%", "{:,.1f}"), ("expected_volume", "closed form", "{:,.1f}"),
            ("heldout_max_send_mean", "E[max send]", "{:,.1f}"), ("estimated_connectivity", "est. λ", "{:.3f}"),
            ("heldout_connectivity", "held-out λ", "{:.3f}")]
    for ref in MINIBATCH_REFERENCES:
        if rows and f"vs_{ref}" in rows[0]:
            cols.append((f"vs_{ref}", f"vol/{ref}", "{:.3f}"))
    cells = [[h for _, h, _ in cols]] + [[f.format(r[k]) for k, _, f in cols] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    return head + "\n" + "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)


def format_epochs(rows: list[dict]) -> str:
    """Fixed-width text table of :func:`shgcn.core.epoch.predict` rows."""
    cols = [("parts", "P", "{}"), ("model", "model", "{}"), ("exchange", "exchange", "{}"),
            ("ranks_per_node", "ranks/node", "{}"), ("threads", "threads", "{}"), ("epoch", "epoch ms", "{:.3f}"),
            ("compute", "compute ms", "{:.3f}"), ("comm", "comm ms", "{:.3f}"),
            ("max_bytes", "max bytes", "{:,}"), ("node_inter_bytes", "node inter bytes", "{:,}"),
            ("rows_imbalance", "rows imb", "{:.3f}"),
            ("nnz_imbalance", "nnz imb", "{:.3f}"), ("compute_imbalance", "compute imb", "{:.3f}"),
            ("vs_rp", "vs rp", "{:.2f}"), ("vs_bcast", "vs bcast", "{:.2f}")]
    scale = {"epoch": 1e3, "compute": 1e3, "comm": 1e3}
    cells = [[h for _, h, _ in cols]]
    for r in rows:
        cells.append([f.format(r.get(k, 1) * scale.get(k, 1)) for k, _, f in cols])  # rows before threads: 1
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)


def format_grid(rows: list[dict]) -> str:
    """Fixed-width text table of :func:`shgcn.core.epoch.predict_algorithm` rows."""
    cols = [("ranks", "P", "{}"), ("algorithm", "algorithm", "{}"), ("replication", "c", "{}"),
            ("parts", "k", "{}"), ("model", "model", "{}"), ("exchange", "exchange", "{}"),
            ("epoch", "epoch ms", "{:.3f}"), ("compute", "compute ms", "{:.3f}"), ("comm", "comm ms", "{:.3f}"),
            ("max_bytes", "max bytes", "{:,}"), ("inrow_bytes", "in-row", "{:,}"), ("matrix_bytes", "Â blocks", "{:,}"),
            ("memory", "memory MiB", "{:.1f}")]
    scale = {"epoch": 1e3, "compute": 1e3, "comm": 1e3, "memory": 2.0**-20}
    cells = [[h for _, h, _ in cols]]
    for r in rows:
        cells.append([f.format(r[k] * scale.get(k, 1)) for k, _, f in cols])
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)


def format_breakdown(row: dict, ranks_per_node: int) -> str:
    """Fixed-width text of one :func:`shgcn.pipeline.simulate.breakdown_rows` row: a heading, then every rank's
    terms (:data:`shgcn.core.epoch.BREAKDOWN`, in the row's order; ms per step), the slowest rank marked ``*``."""
    t = row["terms"]
    terms = list(t)
    slow = int(np.argmax(t["total"]))
    head = (f"P={row['parts']} {row['model']} {row['exchange']}, {row['ranks_per_node']} ranks per node x "
            f"{row['threads']} threads, contention {row.get('contention', '?')}: every rank's terms, ms per step "
            "(* the slowest)")
    names = {"link_send": "link send", "link_recv": "link recv"}
    cells = [["rank", "node #", *(names.get(k, k) for k in terms)]]
    for r in range(t["total"].size):
        cells.append([f"{r}{'*' if r == slow else ''}", str(r // max(1, ranks_per_node)),
                      *(f"{t[k][r] * 1e3:.4f}" for k in terms)])
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    return head + "\n" + "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)
