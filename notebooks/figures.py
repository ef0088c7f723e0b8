"""The report's figures: each ``fig_*`` returns a matplotlib Figure (or None
when the store or the logs lack what it shows)."""

from __future__ import annotations

import textwrap

import numpy as np

from shgcn import store as store_mod
from shgcn.core import runlog
from shgcn.core.tables import BASELINE, REFERENCE

from .tables import _simulation, predicted_bytes, preset_words, quality_table, run_labels

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


def degree_name(s: store_mod.Store) -> str:
    """``out-degree`` for a directed graph, ``degree`` for an undirected one."""
    return "out-degree" if s.attrs["directed"] else "degree"


def fig_degrees(s: store_mod.Store):
    """Degree distribution of the input graph (log-log)."""
    deg = np.diff(s.graph().indptr)
    fig, axes = _figure(width=5)
    ax = axes[0][0]
    values, counts = np.unique(deg[deg > 0], return_counts=True)
    ax.loglog(values, counts, ".", ms=3)
    ax.set_xlabel(degree_name(s))
    ax.set_ylabel("vertices")
    ax.set_title(f"{s.attrs['dataset']}: {degree_name(s)} distribution", fontsize=10)
    return fig


def _log_counts(ax, values) -> str:
    """A log axis for counts (linear below 1 when some are 0): small parts stay visible beside large ones.
    Returns the scale's words for the axis label: with zeros, the floor is 0 (a labelled tick) and the
    label says that a part with none sits on it."""
    from matplotlib.ticker import EngFormatter

    if (np.asarray(values) > 0).all():
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(EngFormatter(sep=""))
        return "log scale"
    ax.set_yscale("symlog", linthresh=1)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ticks = [t for t in ax.get_yticks() if t > 0]
    ax.set_yticks([0.0, *ticks])  # the floor is 0, and says so: a log axis has no 0 of its own
    return "log scale; 0 drawn at the floor"


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
    ax.set_ylabel(f"relative to {BASELINE}" if BASELINE in t.index else "rows per SpMM")
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
    axes[0][0].set_ylabel(f"predicted epoch, ms\n({preset_words(network)})")
    fig.suptitle(f"predicted for the {network} preset, not measured on this machine", fontsize=9)
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
        scale = _log_counts(ax, q[["send_volume", "recv_volume"]].to_array().values)
        ax.set_title(m, fontsize=10)
        ax.set_xlabel("part")
    axes[0][0].set_ylabel(f"rows per SpMM ({scale})")
    _legend(fig)
    return fig


def _reference(s: store_mod.Store) -> tuple[str | None, str]:
    """The model to compare with (:data:`~shgcn.core.tables.REFERENCE`, gp) and its name: METIS when built with
    --gp-backend metis."""
    models = [str(m) for m in s.quality()["model"].values]
    if REFERENCE not in models:
        return None, ""
    backend = s.attrs.get("config", {}).get("options", {}).get("gp_backend", "kaminpar")
    return REFERENCE, f"{REFERENCE} (METIS)" if backend == "metis" else \
        f"{REFERENCE} ({backend}; --gp-backend metis for METIS)"


def fig_parts_vs_metis(s: store_mod.Store):
    """Send and receive volume of every part, sorted from the busiest, of
    every model against gp's (METIS, what DistDGL partitions with); None
    without a gp model."""
    ref, ref_name = _reference(s)
    if ref is None:
        return None
    q = s.quality()
    models = [str(m) for m in q["model"].values]
    fig, axes = _figure(2, width=9.5, height=3.4, sharey=True)
    from matplotlib.ticker import MaxNLocator

    parts = s.parts
    for ax, (var, what) in zip(axes[0], (("send_volume", "send"), ("recv_volume", "receive"))):
        for k, m in enumerate(models):
            v = np.sort(q[var].sel(model=m).values)[::-1]
            x = np.arange(1, v.size + 1)
            if m == ref:
                ax.plot(x, v, "k--", lw=2, label=ref_name, zorder=3)
            else:
                ax.plot(x, v, "o-" if v.size <= 32 else "-", ms=3, color=f"C{k % 10}", label=m)
        if parts <= 8:
            ax.set_xticks(np.arange(1, parts + 1))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        scale = _log_counts(ax, q[["send_volume", "recv_volume"]].to_array().values)
        ax.set_xlabel("parts, busiest first")
        ax.set_title(f"{what} volume per part", fontsize=10)
    axes[0][0].set_ylabel(f"rows per SpMM ({scale})")
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
    """Loss and score (accuracy, or micro-F1 for multi-label stores) against
    epochs for every run: one colour per run; test solid, validation dotted.
    The legend names the runs by colour, then the two line styles."""
    if not runs:
        return None
    from matplotlib.lines import Line2D
    metric = runs[0].header.metric
    fig, axes = _figure(2, width=10, height=3.8 + 0.22 * len(runs))
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
    from matplotlib.ticker import MaxNLocator

    for ax in (a1, a2):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    a2.set_xlabel("epoch")
    a2.set_ylabel(metric)
    a2.set_title(f"{metric}: test (solid), validation (dotted)", fontsize=10)
    handles, labels = a1.get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3"), Line2D([], [], color="0.3", ls=":")]
    labels += [f"test {metric} (solid line)", f"validation {metric} (dotted line)"]
    _legend(fig, handles, labels, where="lower center", ncols=1, title="run (colour); line style")
    return fig


def shared_cores(header: runlog.Header) -> tuple[int, int, int] | None:
    """(ranks, threads a rank, cores) of a run whose ranks on rank 0's machine asked for more threads than it
    has cores (the trainer records the cores and the launcher's ranks there in its config), else None (or a
    log from before it recorded them)."""
    cores, ranks = header.config.get("cores"), header.config.get("local_ranks")
    threads = header.threads or header.config.get("threads") or 1
    if not cores or not ranks or ranks * threads <= cores:
        return None
    return int(ranks), int(threads), int(cores)


SHARED_NOTE = "the ranks shared the cores: a rank waiting for a core shows as communication wait"


def fig_time_split(runs: list[runlog.RunLog]):
    """Mean epoch time per rank, split into computation and communication
    wait, measured on the machine that trained; the first epoch is left out
    (:func:`steady_epochs`: its JIT compilation takes seconds). A run whose ranks
    shared the machine's cores (:func:`shared_cores`) says so under its title, and
    the figure's title says what that does to the wait. The legend sits below the
    charts, clear of the titles."""
    if not runs:
        return None
    fig, axes = _figure(len(runs), width=3.8 * len(runs) + 1.6, height=3.8)
    shared = [shared_cores(r.header) for r in runs]
    for ax, r, label, sh in zip(axes[0], runs, run_labels(runs), shared):
        steady = steady_epochs(r.epochs)
        comp = np.mean([e.compute_time for e in steady], axis=0)
        comm = np.mean([e.comm_time for e in steady], axis=0)
        x = np.arange(comp.size)
        ax.bar(x, comp * 1000, label="compute")
        ax.bar(x, comm * 1000, bottom=comp * 1000, label="communication wait")
        _integer_ticks(ax.xaxis, comp.size)
        ax.set_xlabel("rank")
        ax.set_ylabel("ms per epoch, measured")
        left_out = "first epoch (warm-up) left out" if len(steady) < len(r.epochs) else "one epoch: no warm-up left out"
        on = f"\n{sh[0]} ranks x {sh[1]} thread{'s' if sh[1] != 1 else ''} on {sh[2]} cores" if sh else ""
        ax.set_title(f"{textwrap.fill(label, 34)}\nmean of {len(steady)} epochs; {left_out}{on}", fontsize=8)
    note = f"\n{textwrap.fill(SHARED_NOTE, 44 + 40 * (len(runs) - 1))}" if any(shared) else ""
    fig.suptitle(f"measured on the machine that trained{note}", fontsize=9)
    _legend(fig, where="lower center", ncols=2)
    return fig


def steady_epochs(epochs: list[runlog.Epoch]) -> list[runlog.Epoch]:
    """The epochs a per-epoch mean is taken over: all but the first (its JIT
    compilation and first touches of memory take seconds, several times a
    steady epoch), unless it is the only one."""
    return epochs[1:] if len(epochs) > 1 else list(epochs)


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
