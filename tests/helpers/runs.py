"""Run-log records written by hand, for exact tables and figures without a training run."""

from shgcn.core import runlog


def header(s, **kw) -> runlog.Header:
    """The header of a full-batch p2p GCN run [features, 16, classes] on store ``s`` (its parts, dataset and layout
    model), with ``kw`` changed."""
    base = dict(store=str(s.path), dataset=s.attrs["dataset"], parts=s.parts, exchange="p2p", mode="full",
                model=s.attrs["model"], dims=[s.attrs["feature_dim"], 16, s.attrs["classes"]], w_first=[False, True],
                config={}, train_count=10)
    return runlog.Header(**{**base, **kw})
