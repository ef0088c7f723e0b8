"""The report's figures (notebooks/figures.py): what each one draws, read back from its artists, on a built store
and run logs written by hand; ticks, legends and axes on the report's stores and a real run."""

from types import SimpleNamespace

import numpy as np
import pytest
from helpers.runs import header

from shgcn import store
from shgcn.core import runlog
from shgcn.notebooks import figures, report, tables
from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig

pytest.importorskip("matplotlib")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture
def small(built):
    return store.open_store(built.path)


def heights(ax) -> list[float]:
    return [float(p.get_height()) for p in ax.patches]


def bottoms(ax) -> list[float]:
    return [float(p.get_y()) for p in ax.patches]


def legend_texts(fig) -> list[str]:
    return [t.get_text() for leg in fig.legends for t in leg.get_texts()]


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


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
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


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
def test_legends_sit_outside_every_axes(opened):
    s, runs = opened
    legends = 0
    for fig in all_figures(s, runs):
        for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
            legends += 1
            box = leg.get_window_extent()
            for ax in fig.axes:
                assert not box.overlaps(ax.get_window_extent()), (fig.axes[0].get_title(), leg)
            for text in titles(fig):  # nor a title (the time split's legend ran into the figure's)
                assert not box.overlaps(text.get_window_extent()), (text.get_text(), leg)
    assert legends >= 8  # every figure but the degree plot and the heat map has one


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
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


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
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


def test_degree_distribution(small):
    fig = figures.fig_degrees(small)
    (line,) = fig.axes[0].get_lines()
    deg = np.diff(small.graph().indptr)
    values, counts = np.unique(deg[deg > 0], return_counts=True)
    assert line.get_xdata().tolist() == values.tolist() and line.get_ydata().tolist() == counts.tolist()
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_yscale() == "log"
    assert fig.axes[0].get_title() == f"{small.attrs['dataset']}: degree distribution"
    assert figures.degree_name(SimpleNamespace(attrs={"directed": True})) == "out-degree"


def test_quality_bars_are_the_ratios_to_rp(small):
    fig = figures.fig_quality(small)
    t = tables.quality_table(small)
    ax = fig.axes[0]
    assert heights(ax) == pytest.approx([*t["total_volume_vs_rp"], *t["max_send_vs_rp"], *t["avg_msgs_vs_rp"]])
    assert [x.get_text() for x in ax.get_xticklabels()] == ["rp", "gp", "hp"]
    assert ax.get_ylabel() == "relative to rp" and legend_texts(fig) == ["total volume", "max send", "avg messages"]


def test_parts_bars_are_the_send_and_receive_volumes(small):
    fig = figures.fig_parts(small)
    q = small.quality()
    assert [ax.get_title() for ax in fig.axes] == ["rp", "gp", "hp"]
    for ax, m in zip(fig.axes, ("rp", "gp", "hp")):
        assert heights(ax) == [*q["send_volume"].sel(model=m).values.tolist(), *q["recv_volume"].sel(model=m).values.tolist()]
        assert ax.get_yscale() == "log" and ax.get_xlabel() == "part"
    assert legend_texts(fig) == ["send", "receive"]


def test_parts_against_gp_sorted_from_the_busiest(small):
    fig = figures.fig_parts_vs_metis(small)
    q = small.quality()
    send, recv = fig.axes
    for ax, var in ((send, "send_volume"), (recv, "recv_volume")):
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert list(lines) == ["rp", "gp (kaminpar; --gp-backend metis for METIS)", "hp"]
        for label, m in zip(lines, ("rp", "gp", "hp")):
            assert lines[label].get_ydata().tolist() == sorted(q[var].sel(model=m).values.tolist(), reverse=True)
            assert lines[label].get_xdata().tolist() == [1, 2, 3]
        assert lines["gp (kaminpar; --gp-backend metis for METIS)"].get_linestyle() == "--"
    assert [ax.get_title() for ax in fig.axes] == ["send volume per part", "receive volume per part"]


def test_the_volume_matrix(small):
    fig = figures.fig_volume_matrix(small)
    ax = fig.axes[0]
    v = small.quality()["volume"].sel(model="hp").values
    assert np.asarray(ax.images[0].get_array()).tolist() == v.tolist()
    assert [t.get_text() for t in ax.texts] == [f"{x:,}" for x in v.ravel().tolist()]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("receiver", "sender", "volume matrix (hp)")
    assert fig.axes[1].get_ylabel() == "rows sent per SpMM"  # the colour bar


def test_simulation_stacks_compute_and_communication(small):
    fig = figures.fig_simulation(small)
    t = tables._simulation(small, "infiniband", (16,))
    assert [ax.get_title() for ax in fig.axes] == ["p2p", "alltoallv", "bcast"]
    for ax in fig.axes:
        sub = t[t["exchange"] == ax.get_title()]
        compute, comm = (sub["compute"] * 1000).tolist(), (sub["comm"] * 1000).tolist()
        assert heights(ax) == pytest.approx(compute + comm) and bottoms(ax) == pytest.approx([0.0] * 3 + compute)
        assert [x.get_text() for x in ax.get_xticklabels()] == ["rp", "gp", "hp"]
    assert legend_texts(fig) == ["computation", "communication"]
    assert fig.axes[0].get_ylabel() == "predicted epoch, ms\n(infiniband preset, fluid contention, not this machine)"
    assert fig.get_suptitle() == "predicted for the infiniband preset, not measured on this machine"


def test_no_minibatch_figures_without_shp(small):
    assert figures.fig_minibatch(small) is None and figures.fig_convergence(small) is None


def test_log_counts_use_a_linear_range_around_zero():
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2)
    assert figures._log_counts(a, [[1, 10], [100, 5]]) == "log scale"
    assert figures._log_counts(b, [0, 10]) == "log scale; 0 drawn at the floor"  # the floor named in the label
    assert a.get_yscale() == "log" and b.get_yscale() == "symlog" and b.get_ylim()[0] == 0
    fig.canvas.draw()
    assert b.get_yticks()[0] == 0 and b.get_yticklabels()[0].get_text() == "0"  # and labelled on the axis


def epochs(compute, comm, tests=(None, None)) -> list[runlog.Epoch]:
    return [runlog.Epoch(epoch=e, loss=1.0 - 0.25 * e, train_acc=0.5, compute_time=c, comm_time=m,
                         val_acc=None if t is None else t - 0.1, test_acc=t)
            for e, (c, m, t) in enumerate(zip(compute, comm, tests))]


def test_training_curves_by_hand(small, hand_log):
    a = hand_log("a.jsonl", header(small), epochs([[0.1] * 3] * 2, [[0.0] * 3] * 2, tests=(None, 0.75)))
    b = hand_log("b.jsonl", header(small, exchange="bcast"), epochs([[0.1] * 3] * 3, [[0.0] * 3] * 3,
                                                                    tests=(0.5, 0.6, 0.7)))
    fig = figures.fig_training([a, b])
    loss, score = fig.axes
    assert [(line.get_label(), line.get_ydata().tolist()) for line in loss.get_lines()] == \
        [("P=3 p2p hp, full-batch", [1.0, 0.75]), ("P=3 bcast hp, full-batch", [1.0, 0.75, 0.5])]
    lines = score.get_lines()  # per run: test (solid), validation (dotted), evaluated epochs only
    ys = [line.get_ydata().tolist() for line in lines]
    assert [len(y) for y in ys] == [1, 1, 3, 3]
    assert sum(ys, []) == pytest.approx([0.75, 0.65, 0.5, 0.6, 0.7, 0.4, 0.5, 0.6])
    assert [line.get_linestyle() for line in lines] == ["-", ":", "-", ":"]
    assert lines[0].get_xdata().tolist() == [1] and lines[0].get_color() == loss.get_lines()[0].get_color()
    assert score.get_ylabel() == "accuracy"
    assert legend_texts(fig)[-2:] == ["test accuracy (solid line)", "validation accuracy (dotted line)"]
    assert figures.fig_training([]) is None


def test_time_split_by_hand(small, hand_log):
    """Mean over the epochs after the first (warm-up: JIT compilation) per rank: compute (5, 5, 5), then (0.1, 0.2,
    0.3) and (0.3, 0.4, 0.5) -> 200, 300, 400 ms; communication (0, 0.02, 0.04) and (0.02, 0.04, 0.06) -> 10, 30,
    50 ms on top."""
    run = hand_log("a.jsonl", header(small), epochs([[5.0] * 3, [0.1, 0.2, 0.3], [0.3, 0.4, 0.5]],
                                                    [[1.0] * 3, [0.0, 0.02, 0.04], [0.02, 0.04, 0.06]], tests=(None,) * 3))
    fig = figures.fig_time_split([run, run])
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    assert heights(ax) == pytest.approx([200, 300, 400, 10, 30, 50])
    assert bottoms(ax) == pytest.approx([0, 0, 0, 200, 300, 400])
    assert ax.get_xlabel() == "rank" and ax.get_ylabel() == "ms per epoch, measured"
    assert ax.get_title().endswith("\nmean of 2 epochs; first epoch (warm-up) left out")
    assert fig.get_suptitle() == "measured on the machine that trained"
    one = hand_log("b.jsonl", header(small), epochs([[0.1] * 3], [[0.0] * 3], tests=(None,)))  # one epoch: nothing to leave out
    assert heights(figures.fig_time_split([one]).axes[0])[:3] == pytest.approx([100] * 3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]
    assert figures.fig_time_split([]) is None


def titles(fig) -> list:
    """The figure's title and every axes' title that has text."""
    texts = [fig._suptitle] if fig._suptitle is not None else []
    return texts + [ax.title for ax in fig.axes if ax.get_title()]


def test_the_time_split_notes_ranks_that_shared_the_cores(small, hand_log):
    """4 ranks of 1 thread on 2 cores (the trainer records the cores and the launcher's ranks in its config): the
    wait includes waiting for a core, and the figure says so; 2 ranks on 8 cores, or a log without the figures,
    say nothing."""
    two_epochs = epochs([[0.1] * 3] * 2, [[0.2] * 3] * 2, tests=(None,) * 2)
    crowded = hand_log("a.jsonl", header(small, threads=1, config={"cores": 2, "local_ranks": 4}), two_epochs)
    roomy = hand_log("b.jsonl", header(small, threads=2, config={"cores": 8, "local_ranks": 2}), two_epochs)
    assert figures.shared_cores(crowded.header) == (4, 1, 2) and figures.shared_cores(roomy.header) is None
    fig = figures.fig_time_split([crowded])
    assert fig.get_suptitle() == ("measured on the machine that trained\nthe ranks shared the cores: a rank waiting\n"
                                  "for a core shows as communication wait")
    assert fig.axes[0].get_title().endswith("first epoch (warm-up) left out\n4 ranks x 1 thread on 2 cores")
    both = figures.fig_time_split([crowded, roomy])
    assert [ax.get_title().endswith("on 2 cores") for ax in both.axes] == [True, False]
    assert figures.fig_time_split([roomy]).get_suptitle() == "measured on the machine that trained"
    old = hand_log("c.jsonl", header(small, threads=None), two_epochs)  # a log from before the trainer recorded them
    assert figures.shared_cores(old.header) is None


def test_the_time_splits_legend_is_clear_of_every_title(small, hand_log):
    """One run: a narrow figure, whose legend at the upper right ran into the figure's title."""
    run = hand_log("a.jsonl", header(small, threads=1, config={"cores": 2, "local_ranks": 4}),
                   epochs([[0.1] * 3] * 2, [[0.2] * 3] * 2, tests=(None,) * 2))
    for runs in ([run], [run, run]):
        fig = figures.fig_time_split(runs)
        fig.canvas.draw()
        (legend,) = fig.legends
        assert legend_texts(fig) == ["compute", "communication wait"]
        box = legend.get_window_extent()
        for text in titles(fig):
            assert not box.overlaps(text.get_window_extent()), text.get_text()
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent())


def test_measured_bytes_against_the_prediction(small, hand_log):
    want = tables.predicted_bytes(small, header(small))
    on_it = hand_log("a.jsonl", header(small), [runlog.Epoch(0, 1.0, 0.5, bytes_sent=[1, 2, 3]),
                                                runlog.Epoch(1, 1.0, 0.5, bytes_sent=want.tolist())])
    fig = figures.fig_bytes(small, [on_it])
    points, diagonal = fig.axes[0].get_lines()
    assert points.get_xdata().tolist() == want.tolist() and points.get_ydata().tolist() == want.tolist()  # last epoch
    assert diagonal.get_xdata().tolist() == diagonal.get_ydata().tolist() == [0, want.max()]
    assert legend_texts(fig) == ["P=3 p2p hp, full-batch", "measured = predicted"]
    mini = hand_log("m.jsonl", header(small, mode="minibatch"), [runlog.Epoch(0, 1.0, 0.5, bytes_sent=[1, 2, 3])])
    empty = hand_log("e.jsonl", header(small), [])
    assert figures.fig_bytes(small, [mini, empty]) is None  # nothing to compare with a prediction
