"""The Python API of the pipeline: ``shgcn.pipeline.build(...)``.

>>> import scipy.sparse as sp, shgcn.pipeline as pl                # doctest: +SKIP
>>> res = pl.build(sp.random(1000, 1000, 0.01, format="csr"), parts=4, out="g.zarr")
>>> res.path, res.table[0]["total_volume"]

The same build as ``pipeline build``, on the Dask client you give, else the
one ``distributed.get_client()`` finds, else the scheduler that
``DASK_SCHEDULER_ADDRESS`` names, else an embedded cluster that lives for the
call. Every future the build made is released before it returns.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .config import BuildConfig, BuildResult
from .errors import UserError, api_words
from .runtime.client import ENV_SCHEDULER, ClusterConfig, dask_client
from .sources.records import NodeSource

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _client(client) -> Iterator:
    if client is not None:
        yield client
        return
    try:
        from distributed import get_client

        yield get_client()
        return
    except ValueError:  # no client in this process
        pass
    with dask_client(ClusterConfig(scheduler=os.environ.get(ENV_SCHEDULER)), announce=log.info) as c:
        yield c


def _node_source(features, labels, masks, roles: str = "masks['train']") -> NodeSource | None:
    from .sources.peers import labels_of

    if features is None and labels is None and masks is None:
        return None
    x = None if features is None else np.asarray(features)
    if x is not None and (x.ndim != 2 or x.dtype.kind not in "fiub"):
        raise UserError(f"features: expected an (n, D) array of numbers, got shape {x.shape} of {x.dtype}")
    y, kind = labels_of(labels)
    if masks is not None and set(masks) != {"train", "val", "test"}:
        raise UserError("masks: expected a dict with keys train, val, test")
    return NodeSource(None if x is None else x.astype(np.float32), y,
                      None if masks is None else {k: np.asarray(v, bool) for k, v in masks.items()}, label_kind=kind,
                      roles=None if masks is None else roles)


def _from_peer(source: Any, features, labels, masks) -> tuple[Any, Any, Any, Any, bool]:
    """A PyG Data, DGL graph or OGB dataset -> (adjacency, features, labels,
    masks, whether it was a peer's object); arrays the caller gives win over
    the object's."""
    from .sources.peers import from_peer, is_peer

    if not is_peer(source):
        return source, features, labels, masks, False
    peer = from_peer(source)
    log.info("%s: %d vertices, %d edges", peer.kind, peer.matrix.shape[0], peer.matrix.nnz)
    return (peer.matrix, peer.features if features is None else features, peer.labels if labels is None else labels,
            peer.masks if masks is None else masks, True)


def _directed(source: Any, directed: bool | None, peer: bool, kind: str):
    """The in-memory graph with its direction decided by the one rule of
    :func:`.sources.memory.in_memory` (a symmetric pattern and values:
    undirected; ``directed`` as given wins). A pattern that is symmetric with
    values that are not is stored as directed holding both directions: a
    UserWarning says so and how to choose."""
    from .sources.memory import in_memory

    g = in_memory(source, directed, values=not peer)
    g = type(g)(g.graph, g.directed, g.why, kind)  # the store's source attribute names what the caller gave
    if directed is None and g.directed and g.why.startswith("every edge has its reverse"):
        warnings.warn(f"the {kind} given has a symmetric pattern but A[i, j] != A[j, i] for some entries: it is "
                      "stored as a DIRECTED graph holding both directions (the store keeps the pattern, not the "
                      "values); pass directed=False to store it as undirected, or directed=True to keep it directed "
                      "without this warning", UserWarning, stacklevel=4)
    else:
        log.info("the %s given is %s (%s)", kind, "directed" if g.directed else "undirected", g.why)
    return g


def _checked_arguments(parts: Any, out: Any, models: Any, overwrite: Any) -> tuple[str, ...]:
    """The API's own arguments checked by type, each error naming the
    parameter (not a command-line flag); returns ``models`` as a tuple (one
    name as a string is one model, not its letters)."""
    import os

    if isinstance(parts, bool) or not isinstance(parts, (int, np.integer)) or parts < 1:
        raise UserError(f"build(): parts={parts!r}: a whole number of parts >= 1")
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise UserError(f"build(): out={out!r}: the store's path (a str or a path)")
    if not isinstance(overwrite, bool):
        raise UserError(f"build(): overwrite={overwrite!r}: True or False")
    if isinstance(models, str):
        models = tuple(m.strip() for m in models.split(","))
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, str) for m in models):
        raise UserError(f"build(): models={models!r}: model names, e.g. ('gp', 'hp') or 'hp'")
    from .models import DEFAULT_ALL, get

    if tuple(models) == ("all",):
        return DEFAULT_ALL
    try:
        for m in models:
            get(m)
    except UserError as e:
        raise UserError(f"build(): models: {e}") from None
    return tuple(models)


def build(source: Any, *, parts: int, out: str, models: Sequence[str] = ("hp",), client=None,
          features: Any = None, labels: Any = None, masks: dict | None = None, overwrite: bool = False,
          echo=None, **options) -> BuildResult:
    """Build a partitioned store.

    Parameters
    ----------
    source : a dataset name, a file path (or an OGB / GraphSAINT directory), a
        generator spec (``rmat:...``), a scipy.sparse matrix (n, n), a (2, E)
        integer edge_index array, or a peer's object where its library is
        installed: a PyG ``Data``, a DGL graph, an OGB ``NodePropPredDataset``
        (their features, labels and masks are kept). An in-memory graph is
        undirected when it is exactly symmetric (every edge (i, j) with its
        reverse and, for a scipy matrix, A[i, j] == A[j, i], duplicates
        summed; an edge_index or a peer's edges have no values: their pattern
        decides), else directed; ``directed=True`` or ``False`` overrides.
    parts : number of parts (MPI ranks)
    out : the store directory to create
    models : partition models (see ``shgcn.pipeline.models.REGISTRY``)
    client : a ``distributed.Client``; default: the current one, else
        ``$DASK_SCHEDULER_ADDRESS``, else an embedded cluster
    features : (n, D) array of node features, optional
    labels : (n,) integer labels (-1: unknown), or (n, C) 0/1 multi-label targets, optional
    masks : {"train", "val", "test"} -> (n,) bool, optional (else a seeded split)
    options : any other :class:`~.config.BuildConfig` field (``eps``, ``seed``,
        ``directed``, ``layout_model``, ``split``...) or model option by its
        ``dest`` (``hp_preset``, ``sampler``, ``max_total_increase``...: the
        long options of ``pipeline build --help``). Errors and warnings name
        these parameters (``features="random:D"``), not the command line's
        options.

    Returns
    -------
    BuildResult : ``path``, ``attrs`` (the store's attributes), ``table``
        (quality of every model), ``timings``
    """
    with api_words():  # messages from here on name the API's parameters, not the command line's options
        return _build(source, options, parts=parts, out=out, models=models, client=client, features=features,
                      labels=labels, masks=masks, overwrite=overwrite, echo=echo)


def _build(source: Any, options: dict, *, parts: Any, out: Any, models: Any, client, features: Any, labels: Any,
           masks: dict | None, overwrite: Any, echo) -> BuildResult:
    """:func:`build`'s body (its arguments as given)."""
    import dataclasses

    from .builder import build as run
    from .models import default_options

    for name, value in (("features", features), ("labels", labels)):
        if isinstance(value, str):  # a spec ("random:D", "auto", an .npy path), as on the command line
            options[name] = value
    features = None if isinstance(features, str) else features
    labels = None if isinstance(labels, str) else labels
    kind = type(source).__name__
    given = masks is not None
    source, features, labels, masks, peer = _from_peer(source, features, labels, masks)
    nodes = _node_source(features, labels, masks, "masks['train']" if given else f"the {kind}'s train mask")
    if nodes is not None and ("features" in options or "labels" in options):
        raise UserError("give features/labels either as arrays or as specs (features='random:D'), not both")
    models = _checked_arguments(parts, out, models, overwrite)
    fields = {f.name for f in dataclasses.fields(BuildConfig)}
    model_options = {k: options.pop(k) for k in list(options) if k not in fields and k in default_options()}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise UserError(f"build(): unknown option {unknown[0]!r}")
    if not isinstance(source, str):
        source = _directed(source, options.get("directed"), peer, kind)
    cfg = BuildConfig(source=source, out=str(out), parts=int(parts), models=models, overwrite=overwrite,
                      command=f"shgcn.pipeline.build({kind}, parts={parts})",
                      options={**options.pop("options", {}), **model_options}, **options)
    with _client(client) as c:
        return run(cfg, c, echo=echo or (lambda *a: None), nodes=nodes)
