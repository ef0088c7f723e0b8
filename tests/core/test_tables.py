"""The quality tables as rows and text (core/tables.py), on hand-made rows and tiny datasets."""

import math
import re

import numpy as np
import pytest
import xarray as xr

from shgcn.core.tables import (
    BASELINE,
    METRICS,
    format_epochs,
    format_grid,
    format_minibatch,
    format_table,
    minibatch_rows,
    table_from_dataset,
)


def cells(line: str) -> list[str]:
    """The cells of a fixed-width line (columns two spaces apart or more; a header holds single spaces)."""
    return re.split(r" {2,}", line.strip())


def quality(models=("rp", "hp"), drop=("work_imbalance",), **over) -> xr.Dataset:
    values = {"total_volume": [1200, 480], "avg_send": [300.0, 120.0], "max_send": [400, 200], "max_recv": [500, 200],
              "max_avg_send": [1.33, 1.67], "max_avg_recv": [1.5, 1.2], "avg_msgs": [2.0, 1.0], "max_msgs": [3, 1],
              "imbalance": [0.01, 0.03], "rows_imbalance": [0.0, 0.02], "work_imbalance": [0.01, 0.02],
              "edge_cut": [900, 300], "km1": [1000, 350], "seconds": [0.01, 2.5], **over}
    return xr.Dataset({k: ("model", v) for k, v in values.items() if k not in drop}, coords={"model": list(models)})


def test_rows_hold_every_metric_and_ratios_to_rp():
    rows = table_from_dataset(quality())
    assert [r["model"] for r in rows] == ["rp", "hp"] and BASELINE == "rp"
    hp = rows[1]
    assert hp["total_volume"] == 480 and type(hp["total_volume"]) is int and hp["seconds"] == 2.5
    assert math.isnan(hp["work_imbalance"])  # a store built before the metric
    assert (hp["total_volume_vs_rp"], hp["max_send_vs_rp"], hp["max_recv_vs_rp"], hp["avg_msgs_vs_rp"],
            hp["max_msgs_vs_rp"]) == (0.4, 0.5, 0.4, 0.5, 1 / 3)
    assert rows[0]["total_volume_vs_rp"] == 1.0
    assert set(hp) == {"model", *METRICS, *(f"{k}_vs_rp" for k in ("total_volume", "max_send", "max_recv", "avg_msgs",
                                                                     "max_msgs"))}


def test_no_ratios_without_rp_and_nan_for_a_zero_baseline():
    assert not any(k.endswith("_vs_rp") for k in table_from_dataset(quality(models=("gp", "hp")))[0])
    rows = table_from_dataset(quality(max_msgs=[0, 1]))
    assert math.isnan(rows[1]["max_msgs_vs_rp"]) and rows[1]["total_volume_vs_rp"] == 0.4


def test_format_table():
    lines = format_table(table_from_dataset(quality())).splitlines()
    assert len(lines) == 3 and len({len(line) for line in lines}) == 1  # fixed width
    assert cells(lines[0]) == ["model", "volume", "avg send", "max send", "max recv", "send max/avg", "recv max/avg",
                               "avg msgs", "max msgs", "rows imb", "nnz imb", "work imb", "edge cut", "km1", "time s",
                               "vol/rp", "max/rp", "maxrecv/rp", "msgs/rp"]
    assert cells(lines[1]) == ["rp", "1,200", "300.0", "400", "500", "1.33", "1.50", "2.0", "3", "0.000", "0.010",
                               "nan", "900", "1,000", "0.01", "1.000", "1.000", "1.000", "1.000"]
    assert cells(lines[2])[0] == "hp" and cells(lines[2])[-4:] == ["0.400", "0.500", "0.400", "0.500"]
    bare = format_table(table_from_dataset(quality(models=("gp", "hp")))).splitlines()
    assert cells(bare[0])[-1] == "time s" and len(bare) == 3


def epoch_row(**kw) -> dict:
    return {"parts": 4, "model": "hp", "exchange": "p2p", "ranks_per_node": 2, "epoch": 0.0123, "compute": 0.01,
            "comm": 0.0023, "max_bytes": 123456, "node_inter_bytes": 1000, "rows_imbalance": 0.05,
            "nnz_imbalance": 0.1, "compute_imbalance": 0.125, "vs_rp": 1.5, "vs_bcast": 3.0, **kw}


def test_format_epochs_shows_milliseconds():
    lines = format_epochs([epoch_row(), epoch_row(model="rp", epoch=0.5)]).splitlines()
    assert len(lines) == 3
    assert cells(lines[0]) == ["P", "model", "exchange", "ranks/node", "threads", "epoch ms", "compute ms", "comm ms",
                               "max bytes", "node inter bytes", "rows imb", "nnz imb", "compute imb", "vs rp", "vs bcast"]
    # a row without threads (made before they were modelled): one thread per rank
    assert cells(lines[1]) == ["4", "hp", "p2p", "2", "1", "12.300", "10.000", "2.300", "123,456", "1,000", "0.050",
                               "0.100", "0.125", "1.50", "3.00"]
    assert cells(lines[2])[5] == "500.000"
    assert format_epochs([]).splitlines() == lines[:1]


def test_format_grid_shows_milliseconds_and_mebibytes():
    row = {"ranks": 8, "algorithm": "1.5d", "replication": 2, "parts": 4, "model": "hp", "exchange": "p2p",
           "epoch": 0.002, "compute": 0.0015, "comm": 0.0005, "max_bytes": 4096, "inrow_bytes": 1024,
           "matrix_bytes": 0, "memory": 3 * 2**20}
    lines = format_grid([row]).splitlines()
    assert cells(lines[0]) == ["P", "algorithm", "c", "k", "model", "exchange", "epoch ms", "compute ms", "comm ms",
                               "max bytes", "in-row", "Â blocks", "memory MiB"]
    assert cells(lines[1]) == ["8", "1.5d", "2", "4", "hp", "p2p", "2.000", "1.500", "0.500", "4,096", "1,024", "0",
                               "3.0"]
    with pytest.raises(KeyError):
        format_grid([{k: v for k, v in row.items() if k != "memory"}])


def minibatch(models=("rp", "hp", "shp")) -> xr.Dataset:
    n = len(models)
    values = {"heldout_volume_mean": [100.0, 50.0, 25.0][:n], "heldout_volume_ci": [1.0, 2.0, 3.0][:n],
              "heldout_max_send_mean": [40.0, 20.0, 10.0][:n], "heldout_max_send_ci": [0.5] * n,
              "heldout_connectivity": [1.5, 1.2, 1.1][:n], "expected_volume": [99.0, np.nan, 24.0][:n],
              "estimated_connectivity": [1.49, 1.21, 1.12][:n]}
    ds = xr.Dataset({k: ("model", v) for k, v in values.items()}, coords={"model": list(models)})
    ds.attrs.update(sampler="node", batch_size=1200, eval_batches=20, required_nets=4500, theta=0.05, delta=0.01)
    return ds


def test_minibatch_rows_compare_with_rp_and_hp():
    rows = minibatch_rows(minibatch())
    assert [r["model"] for r in rows] == ["rp", "hp", "shp"]
    assert [r["vs_rp"] for r in rows] == [1.0, 0.5, 0.25] and [r["vs_hp"] for r in rows] == [2.0, 1.0, 0.5]
    assert math.isnan(rows[1]["expected_volume"]) and type(rows[0]["heldout_volume_mean"]) is float
    assert "vs_hp" not in minibatch_rows(minibatch(("rp", "shp")))[0]


def test_format_minibatch():
    head, *lines = format_minibatch(minibatch()).splitlines()
    assert head == ("mini-batch (node sampler, B = 1,200, 20 held-out batches; Hoeffding: 4,500 nets for "
                    "theta = 0.05, delta = 0.01)")
    assert cells(lines[0]) == ["model", "E[volume]", "±95%", "closed form", "E[max send]", "est. λ", "held-out λ",
                               "vol/rp", "vol/hp"]
    assert cells(lines[2]) == ["hp", "50.0", "2.0", "nan", "20.0", "1.210", "1.200", "0.500", "1.000"]
    assert len(lines) == 4
