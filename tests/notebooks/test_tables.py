"""What the report shows as tables (notebooks/tables.py): numbers to three significant digits, the build, the
quality of every model, the predicted epoch, the mini-batch quality and the runs, on a built store and run logs
written by hand."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from helpers.runs import header

from shgcn.core import runlog
from shgcn.core.errors import UserError
from shgcn.notebooks import report, tables
from shgcn.notebooks.tables import count, pct3, sig3

pytest.importorskip("matplotlib")


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
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


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
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


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
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


def test_numbers_for_people():
    assert [sig3(v) for v in (None, float("nan"), float("inf"), -0.0123, 999.4, 999.5, 1234567, 0.1, 12.345)] == \
        ["", "nan", "inf", "-0.0123", "999", "1,000", "1,234,567", "0.100", "12.3"]
    assert [pct3(v) for v in (None, 0.5, 1, 0.000123)] == ["", "50.0%", "100%", "0.0123%"]
    assert [count(v) for v in (1234.0, np.int64(5), 0, 2.5e6)] == ["1,234", "5", "0", "2,500,000"]


def test_warning_html_escapes_and_lists_every_message():
    html = tables.warning_html(["a <b> & c", "second"])
    assert html.count("<li>") == 2 and "<li>a &lt;b&gt; &amp; c</li><li>second</li>" in html
    assert 'class="shgcn-warning"' in html and tables.warning_html([]) == ""


def test_build_table_by_hand():
    attrs = {"dataset": "cora", "n": 2708, "edges": 5278, "directed": True, "nnz": 13264, "parts": 4,
             "models": ["rp", "hp"], "model": "hp", "eps": 0.03, "seed": 7, "feature_dim": 1433,
             "feature_norm": "row", "feature_dtype": "float16", "classes": 7, "label_kind": "multi",
             "command": "pipeline build cora", "versions": {"numpy": "2.0", "zarr": "3.1"}}
    assert tables.build_table(SimpleNamespace(attrs=attrs)) == [
        ("dataset", "cora"), ("vertices", "2,708"), ("edges", "5,278 (directed)"), ("nonzeros of Â", "13,264"),
        ("parts", "4"), ("models", "rp, hp"), ("layout model", "hp"), ("eps", "0.03"), ("seed", "7"),
        ("features", "1433 (row-normalized, float16)"), ("classes", "7 (multi-label: sigmoid loss, micro-F1)"),
        ("command", "pipeline build cora"), ("version of numpy", "2.0"), ("version of zarr", "3.1")]
    plain = {k: v for k, v in attrs.items() if k not in ("feature_norm", "feature_dtype", "label_kind", "versions")}
    rows = dict(tables.build_table(SimpleNamespace(attrs={**plain, "directed": False})))
    assert rows["features"] == "1433 (not normalized, float32)" and rows["classes"] == "7"
    assert rows["edges"] == "5,278 (undirected)" and len(rows) == 12


def test_build_table_of_a_built_store(built):
    from shgcn import store

    rows = dict(tables.build_table(store.open_store(built.path)))
    assert (rows["vertices"], rows["parts"], rows["models"], rows["layout model"]) == ("600", "3", "rp, gp, hp", "hp")
    assert rows["features"] == "8 (not normalized, float32)" and rows["classes"] == "4"


def test_quality_table_is_the_stores_quality(built):
    from shgcn import store

    s = store.open_store(built.path)
    t = tables.quality_table(s)
    q = s.quality()
    assert list(t.index) == ["rp", "gp", "hp"]
    assert t["total_volume"].tolist() == q["total_volume"].values.tolist()
    assert t["max_send_vs_rp"].tolist() == (q["max_send"].values / q["max_send"].values[0]).tolist()
    shown = tables.quality_display(s)
    assert shown[("rows per SpMM", "total")].tolist() == [f"{v:,}" for v in q["total_volume"].values.tolist()]
    assert shown[("relative to rp", "total volume")].iloc[0] == "1.00"


def test_simulation_table(built):
    from shgcn import store

    s = store.open_store(built.path)
    t = tables.simulation_table(s)
    assert list(t.index) == [(m, ex) for m in ("rp", "gp", "hp") for ex in ("p2p", "alltoallv", "bcast")]
    assert list(t.columns.get_level_values(0).unique()) == [
        "predicted epoch (infiniband preset, fluid contention, not this machine)", "slowest rank",
        "imbalance (max/avg - 1)", "speedup"]
    assert t.loc[("rp", "p2p"), ("speedup", "over rp")] == "1.00"
    assert t.loc[("hp", "bcast"), ("speedup", "over bcast")] == "1.00"


def simulated(**hp) -> pd.DataFrame:
    rp = {"model": "rp", "exchange": "p2p", "epoch": 0.010, "compute": 0.006, "comm": 0.004, "compute_imbalance": 0.01,
          "rows_imbalance": 0.0, "nnz_imbalance": 0.02}
    other = {**rp, "model": "hp", "epoch": 0.012, "compute": 0.009, "comm": 0.003, "compute_imbalance": 0.5,
             "rows_imbalance": 0.25, "nnz_imbalance": 0.4, **hp}
    return pd.DataFrame([rp, other, {**other, "exchange": "bcast", "epoch": 1.0}])


def test_simulation_note_explains_a_slower_model(monkeypatch):
    monkeypatch.setattr(tables, "_simulation", lambda s, network, hidden: simulated())
    note = tables.simulation_note(None)
    assert note == (
        "The slowest rank sets the epoch. Where a model is slower than rp, its busiest rank does more work than rp's, "
        "which deals rows evenly:\n\n"
        "- **hp** is predicted 20.0% slower than rp: its slowest rank computes 9.00 ms against rp's 6.00 ms (compute "
        "imbalance 50.0%, rp 1.00%; rows 25.0%, rp 0%; nonzeros 40.0%, rp 2.00%); its communication is 1.00 ms "
        "shorter, which does not make up for it.")
    monkeypatch.setattr(tables, "_simulation", lambda s, network, hidden: simulated(comm=0.005))
    assert tables.simulation_note(None).endswith("its communication is not shorter either (5.00 ms, rp 4.00 ms).")
    monkeypatch.setattr(tables, "_simulation", lambda s, network, hidden: simulated(epoch=0.01))
    assert tables.simulation_note(None) == "Every model is predicted at least as fast as rp with the p2p exchange."
    monkeypatch.setattr(tables, "_simulation", lambda s, network, hidden: simulated().iloc[1:])
    assert tables.simulation_note(None) == ""


def test_minibatch_table(built):
    from shgcn import store

    assert tables.minibatch_table(store.open_store(built.path)) is None  # no shp model
    ds = xr.Dataset({k: ("model", v) for k, v in {
        "heldout_volume_mean": [100.0, 50.0], "heldout_volume_ci": [1.0, 2.5], "heldout_max_send_mean": [40.0, 20.0],
        "heldout_max_send_ci": [0.5, 0.25], "heldout_connectivity": [1.5, 1.2], "expected_volume": [99.0, 49.0],
        "estimated_connectivity": [1.49, 1.21]}.items()}, coords={"model": ["rp", "hp"]})
    t = tables.minibatch_table(SimpleNamespace(minibatch=lambda: ds))
    batches = "held-out batches (mean ± 95% CI)"
    assert t[(batches, "volume")].tolist() == ["100 ± 1.00", "50.0 ± 2.50"]
    assert t[(batches, "max send")].tolist() == ["40.0 ± 0.500", "20.0 ± 0.250"]
    assert t[("volume relative to", "rp")].tolist() == ["1.00", "0.500"]
    assert t[("volume relative to", "hp")].tolist() == ["2.00", "1.00"] and list(t.index) == ["rp", "hp"]


def test_runs_table_and_labels(built, hand_log):
    from shgcn import store

    s = store.open_store(built.path)
    a = hand_log("a.jsonl", header(s), [runlog.Epoch(0, 1.5, 0.2), runlog.Epoch(1, 0.123456, 0.3, val_acc=0.5,
                                                                                test_acc=0.75)])
    b = hand_log("b.jsonl", header(s), [])
    c = hand_log("c.jsonl", header(s, exchange="bcast"), [runlog.Epoch(0, 2.0, 0.1)])
    assert tables.run_labels([a, c]) == ["P=3 p2p hp, full-batch", "P=3 bcast hp, full-batch"]
    assert tables.run_labels([a, b]) == ["P=3 p2p hp, full-batch [a.jsonl]", "P=3 p2p hp, full-batch [b.jsonl]"]
    t = tables.runs_table([a, b, c])
    assert list(t.index) == ["a.jsonl", "b.jsonl", "c.jsonl"] and t.columns.name == "log"
    assert t.loc["a.jsonl"].tolist() == ["P=3 p2p hp, full-batch [a.jsonl]", 2, "0.123", "0.750 (accuracy)"]
    assert t.loc["b.jsonl"].tolist() == ["P=3 p2p hp, full-batch [b.jsonl]", 0, "", ""]
    assert t.loc["c.jsonl", "final test score"] == ""


def test_load_runs(tmp_path, hand_log, built):
    from shgcn import store

    s = store.open_store(built.path)
    a = hand_log("a.jsonl", header(s), [runlog.Epoch(0, 1.5, 0.2)])
    assert tables.load_runs([a.path, a.path]) == [a, a] and tables.load_runs([]) == []
    with pytest.raises(UserError, match="run log not found"):
        tables.load_runs([str(tmp_path / "none.jsonl")])


def test_predicted_bytes_are_the_epoch_models(built, hand_log):
    """GCN [8, 16, 4] with p2p on an undirected graph: SpMMs of widths 8 (layer 0 aggregates first), 4, and 4
    backward (layer 0 needs none): each rank sends 4 B x 16 per row it sends in one SpMM (the hp volume's row)."""
    from shgcn import store

    s = store.open_store(built.path)
    v = s.quality()["volume"].sel(model="hp").values
    want = 4 * (8 + 4 + 4) * (v.sum(1) - np.diag(v))
    assert tables.predicted_bytes(s, header(s)).tolist() == want.tolist()
    assert tables.predicted_bytes(s, header(s, mode="minibatch")) is None
    assert tables.predicted_bytes(s, header(s, parts=2)) is None
    bcast = tables.predicted_bytes(s, header(s, exchange="bcast"))
    assert bcast.tolist() == (4 * 16 * s.partition_costs()[2].rows * (s.parts - 1)).tolist()
