"""``pipeline simulate``: the epoch model (:mod:`shgcn.core.epoch`) of every
model of a store, at the store's P and, by re-partitioning Â with each
model, at other rank counts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
import scipy.sparse as sp

from shgcn.core import epoch
from shgcn.core.algorithms import ALGORITHMS
from shgcn.core.costs import Job
from shgcn.core.machine import Machine
from shgcn.core.partition import PartitionCost, own_nonzeros
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


def predict_ranks(store, ranks: Iterable[int] | None, job: Job, machine: str | Machine = "infiniband",
                  exchanges: Iterable[str] | None = None,
                  partitioner: Callable[[sp.csr_matrix, str, int], np.ndarray] | None = None) -> list[dict]:
    """Predicted epoch time, and speedup over rp and over bcast, of every
    model of a store at each of ``ranks`` (None: the store's P), for ``job``
    (its widths, architecture, nodes) with each exchange. For another P the
    models are re-partitioned with ``partitioner(a, model, parts) -> part``
    (Â rebuilt from the store's graph); without one, only the store's P is
    allowed. The other parameters are :func:`shgcn.core.epoch.predict`'s."""
    s = as_store(store)
    rows = []
    for p in [s.parts] if ranks is None else [int(r) for r in ranks]:
        rows += epoch.predict(placed(_costs_at(s, p, partitioner), job.ranks_per_node, s), job, machine, exchanges)
    return rows


def breakdown_rows(store, ranks: Iterable[int] | None, job: Job, machine: str | Machine = "infiniband",
                   exchanges: Iterable[str] | None = None,
                   partitioner: Callable[[sp.csr_matrix, str, int], np.ndarray] | None = None) -> list[dict]:
    """Every rank's terms (:func:`shgcn.core.epoch.rank_breakdown`) of every model of a store with each exchange at
    each of ``ranks`` (as :func:`predict_ranks`): one dict per (P, model, exchange) with ``parts``, ``model``,
    ``exchange``, ``ranks_per_node``, ``threads`` and ``terms`` (name -> (P,) seconds)."""
    from shgcn.core.machine import machine_of

    s = as_store(store)
    m = machine_of(machine)
    net = m.contention if m.link_rate else "none (no shared link)"
    out = []
    for p in [s.parts] if ranks is None else [int(r) for r in ranks]:
        for c in placed(_costs_at(s, p, partitioner), job.ranks_per_node, s):
            for ex in (list(exchanges) if exchanges is not None else [job.exchange]):
                j = job.with_(exchange=ex)
                out.append({"parts": c.parts, "model": c.model, "exchange": ex, "ranks_per_node": j.ranks_per_node,
                            "threads": j.threads, "contention": net, "terms": epoch.rank_breakdown(c, j, m)})
    return out


def oversubscribed(ranks: Iterable[int], jobs: Iterable[Job], machine: Machine) -> str | None:
    """The one line ``pipeline simulate`` refuses with when a job puts more ranks x threads on a node than it has
    cores (None when every job fits): the model does not predict that (issue 53). Measured here, 4 and 8 ranks on
    2 cores took 1.5-2.7x the epoch the oversubscription terms predict (benchmarks/RESULTS.md, 'Nodes on this
    machine'), so a prediction would mislead."""
    for p in ranks:
        for job in jobs:
            if machine.oversubscription(p, job.threads) > 1:
                per_node = machine.node_size(p)
                return (f"P={p}: {per_node} ranks x {job.threads} threads on a node of {machine.cores_per_node} cores "
                        f"(machine {machine.name}) oversubscribe it, and the model does not predict that (measured "
                        "1.5-2.7x its epoch at 4 and 8 ranks on 2 cores): give --ranks-per-node, --threads or a "
                        "machine with the cores")
    return None


def fastest_line(r: dict) -> str:
    """``pipeline simulate``'s line for the fastest of a rank count (an :func:`shgcn.core.epoch.recommend` row):
    its speed against rp's with the same exchange, or, for a store without an rp partition (``vs_rp`` NaN),
    that there is none to compare with."""
    import math

    than = f"{r['vs_rp']:.2f}x rp's speed with {r['exchange']}" if math.isfinite(r["vs_rp"]) else \
        "no rp partition in the store to compare with"
    return (f"P={r['parts']}: fastest {r['model']} with {r['exchange']} at {r['ranks_per_node']} ranks per node x "
            f"{r['threads']} threads: {r['epoch'] * 1e3:.3f} ms per epoch ({than})")


def placed(costs: list[PartitionCost], k: int, s: Store | None = None, how: str = "hypergraph") -> list[PartitionCost]:
    """``costs`` with their parts placed on nodes of ``k`` ranks (:mod:`.placement`), as a build with
    ``--ranks-per-node k`` places them; a store already placed for k, or k of 1, is left as it is."""
    if k <= 1 or (s is not None and costs and costs[0].parts == s.parts and s.attrs.get("ranks_per_node") == k):
        return costs
    from .metrics.internode import part_nets
    from .placement import place

    out = []
    for c in costs:
        if c.graph is None or c.part is None or k >= c.parts:
            out.append(c)
            continue
        coo = sp.coo_matrix(c.graph)
        nets = part_nets(np.r_[coo.col, np.arange(c.graph.shape[0])], np.r_[c.part[coo.row], c.part], c.parts, c.part)
        p = place(nets, c.volume, k, how, int(s.attrs.get("seed", 0)) if s is not None else 0)
        out.append(cost_of_partition(c.graph, p.rank_of_part[c.part], c.parts, c.model, c.directed))
    return out


def grid_plans(ranks: int, algorithms: Iterable[str], replications: Iterable[int]) -> list[tuple[str, int, int]]:
    """(algorithm, replication, parts) for each way an algorithm runs on ``ranks`` ranks (its spec's
    :meth:`~shgcn.core.algorithms.AlgorithmCost.plans`: 1d on P parts, 1.5d on P / c parts for each c > 1
    that divides P, 2d on sqrt(P) parts when P is a square)."""
    out = []
    for name in algorithms:
        alg = ALGORITHMS.get_spec(name)
        out += [(alg.name, c, k) for c, k in alg.plans(ranks, list(replications))]
    return out


def predict_algorithms(store, ranks: Iterable[int] | None, algorithms: Iterable[str], replications: Iterable[int],
                       job: Job, *, machine: str | Machine = "infiniband", exchanges: Iterable[str] | None = None,
                       partitioner: Callable[[sp.csr_matrix, str, int], np.ndarray] | None = None) -> list[dict]:
    """:func:`shgcn.core.epoch.predict_algorithm` rows of every model of a store for
    every algorithm (and 1.5D replication) at each rank count; each part count
    the algorithms need is partitioned once per model (the store's own as built)."""
    s = as_store(store)
    by_parts: dict[int, list[PartitionCost]] = {}
    rows = []
    for p in [s.parts] if ranks is None else [int(r) for r in ranks]:
        for alg, c, k in grid_plans(p, algorithms, replications):
            run = job.with_(algorithm=alg, replication=c)
            exs = [x for x in (exchanges or [job.exchange]) if _runs(run.with_(exchange=x))]
            if not exs:  # no exchange it runs with: nothing to partition for
                continue
            if k not in by_parts:
                by_parts[k] = _costs_at(s, k, partitioner)
            rows += epoch.predict_algorithm(by_parts[k], run, machine, exs)
    return rows


def simulation_list(text: str, option: str) -> list[str]:
    """The names of ``--exchange`` or ``--algorithm`` (a comma list): at least one, each known, or one line."""
    from shgcn.core.exchanges import EXCHANGES

    registry = EXCHANGES if option == "--exchange" else ALGORITHMS
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise UserError(f"{option} {text!r}: name at least one of {', '.join(registry.names())}")
    for name in names:
        registry.get_spec(name)
    return names


def no_plans(ranks: Iterable[int], algorithms: Iterable[str], replications: Iterable[int], job: Job,
             exchanges: Iterable[str]) -> str:
    """Why ``simulate --algorithm`` has no row to print: per algorithm and rank count, the way it cannot run
    (no grid on that many ranks, or no exchange it runs with) - one line."""
    reps = sorted(set(replications))
    why = []
    for p in ranks:
        for name in algorithms:
            alg = ALGORITHMS.get_spec(name)
            if not grid_plans(p, [name], reps):
                why.append(alg.no_grid(p, reps))
                continue
            try:
                for x in exchanges:
                    alg.check(job.with_(algorithm=alg.name, exchange=x), minibatch=False)
            except UserError as e:
                why.append(f"--algorithm {alg.name}: {e}")
    return "nothing to predict: " + "; ".join(dict.fromkeys(why))


def _runs(job: Job) -> bool:
    """The job's algorithm runs it (an exchange or architecture it refuses is left out of the table)."""
    try:
        ALGORITHMS.get_spec(job.algorithm).check(job, minibatch=False)
    except UserError:
        return False
    return True


def _costs_at(s, parts: int, partitioner) -> list[PartitionCost]:
    if parts == s.parts:
        return s.partition_costs()
    if partitioner is None:
        raise UserError(f"the store has {s.parts} parts; predicting {parts} parts needs a partitioner")
    a, directed = store_ahat(s)
    return costs_from_partitions(a, {m: partitioner(a, m, parts) for m in s.models}, parts, directed)


def simulation_machine(name: str, alpha: float | None = None, beta: float | None = None,
                       contention: str | None = None) -> Machine:
    """The machine ``pipeline simulate --machine`` names, with ``--alpha`` / ``--beta`` replacing both paths'
    latency (s) and inverse bandwidth (s/byte) when given, and ``--contention`` its contention model."""
    import math
    from dataclasses import replace

    from shgcn.core.contention import MODELS
    from shgcn.core.machine import Channel, machine_of

    m = machine_of(name)
    if contention is not None:
        if contention not in MODELS:
            raise UserError(f"--contention {contention!r}: choose from {', '.join(MODELS)}")
        m = replace(m, contention=contention)
    if alpha is None and beta is None:
        return m
    a = m.inter.alpha if alpha is None else alpha
    b = m.inter.beta if beta is None else beta
    if not (math.isfinite(a) and math.isfinite(b) and 0 <= a <= 3600 and 0 <= b <= 1e3):  # as a machine file's
        raise UserError("--alpha and --beta must be finite, --alpha from 0 to 3600 s, --beta from 0 to 1000 s/byte")
    ch = Channel(a, b, "given on the command line")
    return replace(m, name=f"{m.name}*", intra=ch, inter=ch, link_rate=None)


def simulation_jobs(s: Store, hidden: Iterable[int], arch: str, machine: Machine,
                    ranks_per_node: Iterable[int] | None, threads: Iterable[int] = (1,)) -> list[Job]:
    """One job per ranks-per-node value (default: the machine's; the store's when it was placed on nodes) and
    threads per rank."""
    dims = epoch.dims_of(s.attrs["feature_dim"], hidden, s.attrs["classes"])
    placed_for = s.attrs.get("ranks_per_node")
    ks = list(ranks_per_node) if ranks_per_node else [int(placed_for or machine.ranks_per_node)]
    for k in ks:  # named where it came from: the option, the store's placement, or the machine
        if k < 1:
            what = f"--ranks-per-node {k}" if ranks_per_node else f"the store's ranks_per_node {k}" if placed_for \
                else f"machine {machine.name}'s ranks per node {k}"
            raise UserError(f"{what}: must be >= 1")
    density = s.feature_density()  # the trainer's first layer is sparse for sparse features (Cora's 1.3%)
    for t in threads:
        if t < 1:
            raise UserError(f"--threads {t}: must be >= 1")
    return [Job(tuple(dims), arch=arch, ranks_per_node=k, input_density=density, threads=t) for k in ks for t in threads]


def fastest_splits(store, ranks: Iterable[int] | None, job: Job, machines: Mapping[str, Machine],
                   exchanges: Iterable[str] | None = None,
                   partitioner: Callable[[sp.csr_matrix, str, int], np.ndarray] | None = None) -> list[dict]:
    """How to split one node's cores between ranks and threads, per machine: for each rank count k of
    ``ranks`` (None: the store's P) that fits a node of C cores, k ranks of C // k threads on that node, with
    the fastest model and exchange (:func:`shgcn.core.epoch.predict`). Returns one row per (machine, k):
    ``machine``, ``cores``, ``ranks``, ``threads``, ``epoch``, ``model``, ``exchange``, ``best`` (the
    machine's fastest split)."""
    s = as_store(store)
    costs: dict[int, list[PartitionCost]] = {}
    out = []
    for name, m in machines.items():
        rows = []
        for k in sorted({s.parts} if ranks is None else {int(r) for r in ranks}):
            if k > m.cores_per_node:
                continue
            if k not in costs:
                costs[k] = _costs_at(s, k, partitioner)
            split = job.with_(ranks_per_node=k, threads=m.cores_per_node // k)
            best = min(epoch.predict(costs[k], split, m.with_ranks_per_node(k), exchanges), key=lambda r: r["epoch"])
            rows.append({"machine": name, "cores": m.cores_per_node, "ranks": k, "threads": split.threads,
                         "epoch": best["epoch"], "model": best["model"], "exchange": best["exchange"], "best": False})
        if rows:
            min(rows, key=lambda r: r["epoch"])["best"] = True
        out += rows
    return out


def network_line(m: Machine) -> str:
    """One line naming how the machine's network is modelled: its contention model and message rate."""
    from shgcn.core.contention import describe

    return f"network: {describe(m)}"


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
