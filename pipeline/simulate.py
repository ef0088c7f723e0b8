"""``pipeline simulate``: the epoch model (:mod:`shgcn.core.epoch`) of every
model of a store, at the store's P and, by re-partitioning Â with each
model, at other rank counts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
import scipy.sparse as sp

from shgcn.core import epoch
from shgcn.core.epoch import THIS_MACHINE, ComputeModel, Network, PartitionCost, own_nonzeros
from shgcn.store import Store, open_store

from .errors import UserError


def cost_of_partition(a: sp.csr_matrix, part: np.ndarray, parts: int, model: str, directed: bool) -> PartitionCost:
    """:class:`PartitionCost` of a raw (Â, part) pair (Â with a nonzero diagonal)."""
    from .metrics.volume import volume_matrix

    a = sp.csr_matrix(a)
    part = np.asarray(part).astype(np.int64)
    return PartitionCost(model=model, volume=volume_matrix(a, part, parts),
                         load=np.bincount(part, weights=np.diff(a.indptr), minlength=parts).astype(np.int64),
                         rows=np.bincount(part, minlength=parts).astype(np.int64),
                         own=own_nonzeros(a, part, parts), directed=directed, graph=a, part=part)


def costs_from_partitions(a: sp.csr_matrix, partitions: Mapping[str, np.ndarray], parts: int, directed: bool
                          ) -> list[PartitionCost]:
    """One :class:`PartitionCost` per named partition of Â."""
    return [cost_of_partition(a, p, parts, m, directed) for m, p in partitions.items()]


def predict_ranks(store, ranks: Iterable[int] | None = None, *, network: str | Network = "infiniband",
                  exchange: str | Iterable[str] = "p2p", hidden: Iterable[int] = (16,),
                  compute: ComputeModel = THIS_MACHINE,
                  partitioner: Callable[[sp.csr_matrix, str, int], np.ndarray] | None = None) -> list[dict]:
    """Predicted epoch time, and speedup over rp and over bcast, of every
    model of a store at each of ``ranks`` (None: the store's P). For another
    P the models are re-partitioned with ``partitioner(a, model, parts) ->
    part`` (Â rebuilt from the store's graph); without one, only the store's
    P is allowed. The other parameters are :func:`shgcn.core.epoch.predict`'s."""
    s = as_store(store)
    exchanges = [exchange] if isinstance(exchange, str) else list(exchange)
    dims = epoch.dims_of(s.attrs["feature_dim"], hidden, s.attrs["classes"])
    rows = []
    for p in [s.parts] if ranks is None else [int(r) for r in ranks]:
        rows += epoch.predict(_costs_at(s, p, partitioner), dims, network, compute, exchanges)
    return rows


def grid_plans(ranks: int, algorithms: Iterable[str], replications: Iterable[int]) -> list[tuple[str, int, int]]:
    """(algorithm, replication, parts) for each algorithm that runs on ``ranks`` ranks:
    1d on P parts, 1.5d on P / c parts for each c > 1 that divides P, 2d on sqrt(P) parts when P is a square."""
    import math

    from shgcn.core.grid import ALGORITHMS

    out = []
    for alg in algorithms:
        if alg not in ALGORITHMS:
            raise UserError(f"--algorithm {alg!r}: choose from {', '.join(ALGORITHMS)}")
        if alg == "1d":
            out.append(("1d", 1, ranks))
        elif alg == "1.5d":
            out += [("1.5d", c, ranks // c) for c in replications if c > 1 and ranks % c == 0]
        elif math.isqrt(ranks) ** 2 == ranks:
            out.append(("2d", 1, math.isqrt(ranks)))
    return out


def predict_algorithms(store, ranks: Iterable[int] | None, algorithms: Iterable[str], replications: Iterable[int],
                       *, network: str | Network = "infiniband", exchange: str | Iterable[str] = "p2p",
                       hidden: Iterable[int] = (16,), compute: ComputeModel = THIS_MACHINE,
                       partitioner: Callable[[sp.csr_matrix, str, int], np.ndarray] | None = None) -> list[dict]:
    """:func:`shgcn.core.gridtime.predict_grid` rows of every model of a store for
    every algorithm (and 1.5D replication) at each rank count; each part count
    the algorithms need is partitioned once per model (the store's own as built)."""
    from shgcn.core.gridtime import predict_grid

    s = as_store(store)
    net = epoch.network_of(network)
    exchanges = [exchange] if isinstance(exchange, str) else list(exchange)
    dims = epoch.dims_of(s.attrs["feature_dim"], hidden, s.attrs["classes"])
    by_parts: dict[int, list[PartitionCost]] = {}
    rows = []
    for p in [s.parts] if ranks is None else [int(r) for r in ranks]:
        for alg, c, k in grid_plans(p, algorithms, replications):
            if k not in by_parts:
                by_parts[k] = _costs_at(s, k, partitioner)
            rows += predict_grid(by_parts[k], dims, net, compute, exchanges, alg, c, int(s.attrs["feature_dim"]))
    return rows


def _costs_at(s, parts: int, partitioner) -> list[PartitionCost]:
    if parts == s.parts:
        return s.partition_costs()
    if partitioner is None:
        raise UserError(f"the store has {s.parts} parts; predicting {parts} parts needs a partitioner")
    a, directed = store_ahat(s)
    return costs_from_partitions(a, {m: partitioner(a, m, parts) for m in s.models}, parts, directed)


def as_store(store) -> Store:
    """A :class:`shgcn.store.Store` from a path (or itself)."""
    return store if isinstance(store, Store) else open_store(store)


def store_ahat(s) -> tuple[sp.csr_matrix, bool]:
    """Â of a store's graph, and whether it is directed."""
    from .stages.normalize import normalized_adjacency

    directed = bool(s.attrs.get("directed", False))
    return normalized_adjacency(s.graph(), directed), directed


def store_weights(s, a: sp.csr_matrix) -> np.ndarray:
    """The vertex weights the store's build balanced (``balance``, ``work_dims``;
    a store built before them balanced the nonzeros)."""
    from shgcn.core.work import vertex_weights

    dims = s.attrs.get("work_dims") or [int(s.attrs["feature_dim"]), 16, int(s.attrs["classes"])]
    return vertex_weights(np.diff(a.indptr), s.attrs.get("balance", "nnz"), dims)


def model_partitioner(s) -> Callable[[sp.csr_matrix, str, int], np.ndarray]:
    """``partitioner(a, model, parts)`` for :func:`predict_ranks`: each of
    the store's models re-run with the store's eps and seed (models imported
    from a file cannot be)."""
    from .models import REGISTRY, Inputs, PartitionConfig, default_options
    from .models.base import GRAPH
    from .models.run import run

    def partitioner(a: sp.csr_matrix, model: str, parts: int) -> np.ndarray:
        if model not in REGISTRY:
            raise UserError(f"{model} was imported from a file for {s.parts} ranks; it cannot be re-partitioned "
                            f"for {parts} (leave --ranks out, or give ranks the store has)")
        options = {**default_options(), **s.attrs.get("config", {}).get("options", {})}
        cfg = PartitionConfig(parts=parts, eps=float(s.attrs["eps"]), seed=int(s.attrs["seed"]), options=options)
        graph = s.graph() if GRAPH in REGISTRY[model].needs_for(cfg) else None
        return run(model, Inputs(a.shape[0], a, graph, weights=store_weights(s, a)), cfg).part

    return partitioner
