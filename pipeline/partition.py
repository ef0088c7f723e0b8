"""Row partitioners, registered behind one protocol.

A :class:`Partitioner` turns :class:`Inputs` (Â, and for some models the
graph's pattern or the partitions of other models) into a part vector. The
registry :data:`REGISTRY` holds ``rp`` (random), ``gp`` (METIS), ``hp``
(Mt-KaHyPar on the column-net hypergraph) and, when their modules are loaded
(:func:`load_models`), the models registered elsewhere (``shp`` in
:mod:`.stochastic`). The CLI's ``--model`` choices come from the registry.

Native partitioners hold the GIL for their whole run (Mt-KaHyPar's binding:
measured, no other thread ran for 270 s of a 200k-vertex partition). In a
Dask worker that starves the scheduler and the client (a build lost its task
after 28 minutes), so every partitioner marked ``child`` runs in a child
process: the same code, the same partition, and the worker stays responsive.
The child dies with its parent (``PR_SET_PDEATHSIG``) and is killed on Ctrl-C
(:func:`kill_children`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from dask.sizeof import sizeof

from .errors import UserError
from .hypergraph import Hypergraph, column_net

log = logging.getLogger(__name__)

PRESETS = ("deterministic", "default", "quality", "deterministic_quality")  # Mt-KaHyPar's PresetType names
METIS_CHILD_NNZ = 2_000_000  # METIS runs in a child from this size on (it can run for minutes)


@dataclass(frozen=True)
class PartitionConfig:
    """Attributes: parts; eps (allowed imbalance of the load, e.g. 0.03);
    seed; threads (0 = all cores); hp_preset (Mt-KaHyPar preset name);
    max_total_increase (the ``-vb`` refinements' budget on total volume)."""

    parts: int
    eps: float = 0.03
    seed: int = 0
    threads: int = 0
    hp_preset: str = "deterministic"
    max_total_increase: float = 0.02  # the -vb refinements: total volume at most this much above its start


@dataclass
class Inputs:
    """What a partitioner may use.

    Attributes
    ----------
    a : (n, n) csr_matrix, Â (nonzero diagonal; row nonzeros = vertex weights)
    adj : (n, n) csr_matrix or None, the graph's pattern (mini-batch samplers)
    starts : partitions of the models this one starts from, by name
    options : model-specific options (JSON-able)
    """

    a: sp.csr_matrix
    adj: sp.csr_matrix | None = None
    starts: dict[str, np.ndarray] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class PartitionResult:
    """Attributes: model; part (n,) int32; seconds (partitioner wall time);
    info (the partitioner's record, JSON-able); child_peak_mib (peak memory of
    its child process, 0 when it ran in the worker)."""

    model: str
    part: np.ndarray
    seconds: float
    info: dict[str, Any] = field(default_factory=dict)
    child_peak_mib: float = 0.0


def _sizeof_result(r: PartitionResult) -> int:
    return int(r.part.nbytes) + 1024


def _sizeof_inputs(x: Inputs) -> int:
    m = [x.a] + ([x.adj] if x.adj is not None else [])
    return int(sum(y.data.nbytes + y.indices.nbytes + y.indptr.nbytes for y in m) +
               sum(v.nbytes for v in x.starts.values()))


sizeof.register(PartitionResult)(_sizeof_result)
sizeof.register(Inputs)(_sizeof_inputs)


@dataclass(frozen=True)
class Partitioner:
    """A registered model.

    Attributes
    ----------
    name : the model's name (``--model``)
    run : ``run(inputs, cfg) -> (part, info)``
    description : one line for ``--help`` and the README
    child : run in a child process (native code that holds the GIL); a callable
        decides from the inputs (e.g. only large graphs)
    starts_from : models whose partitions this one uses when the build has them
    needs_graph : needs the graph's pattern (``Inputs.adj``)
    """

    name: str
    run: Callable[[Inputs, PartitionConfig], tuple[np.ndarray, dict]]
    description: str
    child: bool | Callable[[Inputs], bool] = False
    starts_from: tuple[str, ...] = ()
    needs_graph: bool = False

    def in_child(self, inputs: Inputs) -> bool:
        return self.child(inputs) if callable(self.child) else bool(self.child)


REGISTRY: dict[str, Partitioner] = {}
DEFAULT_ALL = ("rp", "gp", "hp", "shp")  # what ``--model all`` means
_MODULES = (".stochastic", ".refine")  # modules that register more models


def register(p: Partitioner) -> Partitioner:
    REGISTRY[p.name] = p
    return p


def load_models() -> dict[str, Partitioner]:
    """The registry with every model module imported."""
    for mod in _MODULES:
        importlib.import_module(mod, __package__)
    return REGISTRY


# ----------------------------------------------------------------- models

def random_partition(a: sp.csr_matrix, cfg: PartitionConfig) -> np.ndarray:
    """Rows dealt uniformly at random: row counts differ by at most one."""
    n = a.shape[0]
    order = np.random.default_rng([cfg.seed, 0x52]).permutation(n)
    part = np.empty(n, np.int32)
    part[order] = np.arange(n) % cfg.parts
    return part


def metis_partition(a: sp.csr_matrix, cfg: PartitionConfig) -> np.ndarray:
    """pymetis on the symmetrized graph without self loops; vertex weight =
    nonzeros of the row of Â; imbalance ``ufactor = 1000 eps``."""
    import pymetis

    # the pattern only (one byte per entry, not Â's float64 values): on R-MAT 2^22 the values alone were gigabytes
    pat = sp.csr_matrix((np.ones(a.nnz, dtype=np.int8), a.indices, a.indptr), shape=a.shape)
    sym = (pat + pat.T).tocsr()
    del pat
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    xadj, adjncy = sym.indptr.astype(np.int64), sym.indices.astype(np.int64)
    del sym
    vweights = np.diff(a.indptr).astype(np.int64)
    opts = pymetis.Options(seed=cfg.seed, ufactor=max(1, int(round(cfg.eps * 1000))))
    _, part = pymetis.part_graph(cfg.parts, pymetis.CSRAdjacency(xadj, adjncy), vweights=vweights, options=opts)
    return np.asarray(part, dtype=np.int32)


@functools.cache
def _kahypar(threads: int):
    import mtkahypar

    return mtkahypar.initialize(threads)  # its thread pool can be set up once per process


def kahypar_partition(hg: Hypergraph, cfg: PartitionConfig, initial: np.ndarray | None = None,
                      vcycles: int = 1) -> np.ndarray:
    """Mt-KaHyPar, connectivity-1 objective, on ``hg``, in this process (call
    it from a child: see :func:`run`).

    The ``deterministic`` preset (the default) gives the same partition for
    the same seed whatever the thread timing; ``default`` and ``quality``
    are faster or better but not reproducible with several threads. With
    ``initial``, that partition is improved by ``vcycles`` V-cycles instead
    of partitioning from scratch (never worse on ``hg``'s objective).
    """
    import mtkahypar

    if cfg.hp_preset not in PRESETS:
        raise UserError(f"--hp-preset {cfg.hp_preset!r}: choose one of {', '.join(PRESETS)}")
    init = _kahypar(cfg.threads or os.cpu_count() or 1)
    ctx = init.context_from_preset(getattr(mtkahypar.PresetType, cfg.hp_preset.upper()))
    ctx.set_partitioning_parameters(cfg.parts, cfg.eps, mtkahypar.Objective.KM1)
    ctx.logging = False
    mtkahypar.set_seed(cfg.seed)
    nets = np.split(hg.pins, hg.net_ptr[1:-1]) if hg.n_nets else []
    h = init.create_hypergraph(ctx, hg.n_vertices, hg.n_nets, nets, hg.vertex_weights, hg.net_weights)
    if initial is None:
        return np.asarray(h.partition(ctx).get_partition(), dtype=np.int32)
    ph = h.create_partitioned_hypergraph(ctx, cfg.parts, initial.astype(np.int64))  # (context, k): the binding's order
    ph.improve_partition(ctx, vcycles)
    return np.asarray(ph.get_partition(), dtype=np.int32)


def _rp(inputs: Inputs, cfg: PartitionConfig) -> tuple[np.ndarray, dict]:
    return random_partition(inputs.a, cfg), {}


def _gp(inputs: Inputs, cfg: PartitionConfig) -> tuple[np.ndarray, dict]:
    return metis_partition(inputs.a, cfg), {}


def _hp(inputs: Inputs, cfg: PartitionConfig) -> tuple[np.ndarray, dict]:
    return kahypar_partition(column_net(inputs.a), cfg), {}


register(Partitioner("rp", _rp, "random, row counts balanced: the baseline every table is normalized to"))
register(Partitioner("gp", _gp, "METIS on the symmetrized graph, vertex weight = nonzeros of the row (as DistDGL)",
                     child=lambda inputs: inputs.a.nnz >= METIS_CHILD_NNZ))
register(Partitioner("hp", _hp, "Mt-KaHyPar on the column-net hypergraph of Â: connectivity-1 = exact volume",
                     child=True))


# ----------------------------------------------------------------- running

def run(model: str, inputs: Inputs, cfg: PartitionConfig, tmp_root: str | None = None) -> PartitionResult:
    """The ``partition-<model>`` task: partition the rows of Â, timed, in a
    child process when the model holds the GIL."""
    reg = load_models()
    if model not in reg:
        raise UserError(f"unknown model {model!r}; known models: {', '.join(reg)}")
    p = reg[model]
    t0 = time.perf_counter()
    peak = 0.0
    info: dict[str, Any]
    if cfg.parts == 1:
        part, info = np.zeros(inputs.a.shape[0], np.int32), {}
    elif p.in_child(inputs):
        part, info, peak = run_in_child(model, inputs, cfg, tmp_root)
    else:
        part, info = p.run(inputs, cfg)
    seconds = time.perf_counter() - t0
    log.info("partition %s: %d parts in %.2f s", model, cfg.parts, seconds)
    return PartitionResult(model, np.asarray(part, np.int32), seconds, info, peak)


_CHILDREN: set[subprocess.Popen] = set()
_CHILDREN_LOCK = threading.Lock()


def kill_children() -> int:
    """Kill every partitioner child of this process (Ctrl-C); returns how many."""
    with _CHILDREN_LOCK:
        procs = list(_CHILDREN)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass
    return len(procs)


def _save_csr(d: Path, name: str, m: sp.csr_matrix) -> None:
    np.save(d / f"{name}.indptr.npy", m.indptr)
    np.save(d / f"{name}.indices.npy", m.indices)
    np.save(d / f"{name}.data.npy", m.data)


def _load_csr(d: Path, name: str, n: int) -> sp.csr_matrix:
    arrays = [np.load(d / f"{name}.{k}.npy", mmap_mode="r") for k in ("data", "indices", "indptr")]
    return sp.csr_matrix((np.asarray(arrays[0]), np.asarray(arrays[1]), np.asarray(arrays[2])), shape=(n, n))


def run_in_child(model: str, inputs: Inputs, cfg: PartitionConfig, tmp_root: str | None = None
                 ) -> tuple[np.ndarray, dict, float]:
    """``REGISTRY[model].run`` in a fresh interpreter; arrays go through
    ``.npy`` files in a temporary directory under ``tmp_root`` (a plain
    subprocess, not multiprocessing, which would re-import the caller's main
    module). Returns (part, info, the child's peak memory in MiB)."""
    if tmp_root:
        Path(tmp_root).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"shgcn-{model}-", dir=tmp_root) as tmp:
        d = Path(tmp)
        n = inputs.a.shape[0]
        _save_csr(d, "a", inputs.a)
        if inputs.adj is not None:
            _save_csr(d, "adj", inputs.adj)
        for name, part in inputs.starts.items():
            np.save(d / f"start.{name}.npy", part)
        (d / "args.json").write_text(json.dumps({
            "model": model, "n": n, "cfg": dataclasses.asdict(cfg), "adj": inputs.adj is not None,
            "starts": sorted(inputs.starts), "options": inputs.options}))
        proc = subprocess.Popen([sys.executable, "-m", "shgcn.pipeline.partition", tmp, str(os.getpid())],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        with _CHILDREN_LOCK:
            _CHILDREN.add(proc)
        try:
            _, err = proc.communicate()
        finally:
            with _CHILDREN_LOCK:
                _CHILDREN.discard(proc)
        if proc.returncode != 0:
            if (d / "user_error.txt").exists():
                raise UserError((d / "user_error.txt").read_text())
            if proc.returncode < 0:
                raise RuntimeError(f"{model}: the partitioner's child process was killed by signal "
                                   f"{signal.Signals(-proc.returncode).name}")
            raise RuntimeError(f"{model}: the partitioner failed in its child process (exit {proc.returncode}): "
                               f"{err[-2000:]}")
        out = np.load(d / "part.npy")
        info = json.loads((d / "info.json").read_text())
        return out, info, float(info.pop("_peak_mib", 0.0))


def _child_main(tmp: str, parent: int) -> None:
    import resource

    _die_with_parent(parent)
    d = Path(tmp)
    args = json.loads((d / "args.json").read_text())
    n = args["n"]
    inputs = Inputs(a=_load_csr(d, "a", n), adj=_load_csr(d, "adj", n) if args["adj"] else None,
                    starts={s: np.load(d / f"start.{s}.npy") for s in args["starts"]}, options=args["options"])
    try:
        part, info = load_models()[args["model"]].run(inputs, PartitionConfig(**args["cfg"]))
    except UserError as e:
        (d / "user_error.txt").write_text(str(e))
        raise SystemExit(2) from None
    info = dict(info)
    info["_peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    np.save(d / "part.npy", np.asarray(part, np.int32))
    (d / "info.json").write_text(json.dumps(info))


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (a killed
    build must not leave a partitioner running; a Python watchdog thread could
    not run while the binding holds the GIL)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: best effort
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


if __name__ == "__main__":  # the child process: run the imported module's copy, whose registry is complete
    from shgcn.pipeline.partition import _child_main as main

    main(sys.argv[1], int(sys.argv[2]))
