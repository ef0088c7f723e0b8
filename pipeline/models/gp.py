"""``gp``: a graph partition of the symmetrized graph (what DistDGL uses),
edge-cut objective, balancing the build's vertex weights. Two backends
(``--gp-backend``):

- ``kaminpar`` (the default): KaMinPar, on a ParHIP file of the graph that
  the build's workers write block by block (the whole Â is never assembled
  for it); its compressed graph mode from :data:`COMPRESS_EDGES` edges on.
  KaMinPar bounds a part by the mean plus the heaviest vertex; its result is
  then brought under ``(1 + eps)`` times the mean (:mod:`.rebalance`), which
  matters once a hub row weighs a good part of a part (P in the hundreds).
- ``metis``: METIS (pymetis) on the pattern of Â + Âᵀ, in memory (about
  220 bytes per nonzero at its peak: R-MAT 2^22 did not fit in 15 GB). Its
  ``ufactor`` is a target, not a bound (work imbalance 0.065 at P = 512 with
  eps 0.01 was measured), so its result is brought under the same strict
  bound as KaMinPar's.

Both take the seed. KaMinPar 3.7 gives the same partition for the same
seed and version with one thread, and different ones run to run with two
(measured: 4 runs each on ca-astroph), so it runs on one thread unless
``--threads`` asks for more (then a rebuild is not byte-identical). METIS is
serial and deterministic. See ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import option
from .base import GRAPH_FILE, MATRIX, Assignment, Documented, Figures, Inputs, Model, Option, PartitionConfig

if TYPE_CHECKING:
    from ..sources.counts import Counts

CHILD_NNZ = 2_000_000  # METIS runs in a child from this size on (it can run for minutes, holding the GIL)
COMPRESS_EDGES = 50_000_000  # KaMinPar compresses the graph it loads from this many adjacency entries on
BACKENDS = ("kaminpar", "metis")
BACKEND = Option("--gp-backend", "kaminpar", "gp: KaMinPar (from a graph file the workers write; fast, lean) or "
                 "METIS (in memory)", choices=BACKENDS)
PRESET = Option("--kaminpar-preset", "default", "gp with KaMinPar: its preset (default, fast, eco, strong, "
                "terapart: memory-lean, largek...: many parts)",
                choices=("default", "fast", "eco", "strong", "terapart", "largek", "largek-fast"))
METIS_BYTES_PER_NNZ = 220  # METIS's child at its peak (pymetis, documented): the build's plan, not fitted
# --kaminpar-eps 0.03-0.05 (build's eps 0.01): KaMinPar's child per nonzero, against the fitted default's; measured
# 0.55-0.6 at R-MAT scales 21 and 22 (branch kmem), 0.64, 0.68 and 0.71 at scales 23, 24 and 25 (--kaminpar-eps 0.05,
# compressed: benchmarks/RESULTS.md, "Build plan: predicted against measured peak memory"); the largest, not fitted
KAMINPAR_EPS_SHARE = 0.7
LEAN_EPS = 0.05  # what KaMinPar partitions for by default on a graph of COMPRESS_EDGES adjacency entries or more
KAMINPAR_EPS = Option("--kaminpar-eps", 0.0, "gp (and hp's start) with KaMinPar: the imbalance KaMinPar partitions "
                      "for, its result then brought under --eps; 0 (auto): for gp the build's --eps below 50M "
                      "adjacency entries of the graph and 0.05 from there (KaMinPar coarsens further: its child "
                      "0.53-0.57x the memory at R-MAT scales 21-22, as fast, the edge cut within one percent), for "
                      "hp's start always the build's --eps; set it to --eps for gp's partition of earlier releases",
                      type=float, metavar="EPS")

LEVELS = Option("--gp-levels", "auto", "gp with KaMinPar: coarsening levels of our own before KaMinPar (4-byte ids "
                "where KaMinPar's wheel holds 16 bytes an entry; then k-way refinement on the graph); auto: "
                "2 from 50M adjacency entries of the graph (KaMinPar's child 0.6x the memory at R-MAT scale 22, the "
                "edge cut 0.7-0.9 percent higher), else 0", choices=("auto", "0", "1", "2", "3"))
AUTO_LEVELS = 2
# --gp-levels 2: the child's share of KaMinPar's fitted bytes a nonzero; measured 0.27, 0.29, 0.31 and 0.32 at R-MAT
# scales 21, 22, 24 and 25 (benchmarks/RESULTS.md, "KaMinPar's child with coarsening levels of our own"): the largest
LEVELS_SHARE = 0.32


def symmetric_pattern(a) -> tuple[np.ndarray, np.ndarray]:
    """(xadj (n+1,), adjncy) int64 of the pattern of Â + Âᵀ without the
    diagonal, built from one-byte entries (Â's float values alone were
    gigabytes on R-MAT 2^22)."""
    import scipy.sparse as sp

    pat = sp.csr_matrix((np.ones(a.nnz, dtype=np.int8), a.indices, a.indptr), shape=a.shape)
    sym = (pat + pat.T).tocsr()
    del pat
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    return sym.indptr.astype(np.int64), sym.indices.astype(np.int64)


def metis_partition(a, parts: int, eps: float, seed: int, weights: np.ndarray | None = None, *,
                    pattern: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """pymetis on the symmetrized graph without self loops; vertex weights
    ``weights`` (default: nonzeros of the row of Â); imbalance ``ufactor =
    1000 eps`` (METIS's target: it may end above it, see
    :func:`metis_balanced`). ``pattern``: :func:`symmetric_pattern` of ``a``
    when the caller has it."""
    import pymetis

    xadj, adjncy = symmetric_pattern(a) if pattern is None else pattern
    vweights = np.diff(a.indptr).astype(np.int64) if weights is None else np.asarray(weights, np.int64)
    opts = pymetis.Options(seed=seed, ufactor=max(1, int(round(eps * 1000))))
    _, part = pymetis.part_graph(parts, pymetis.CSRAdjacency(xadj, adjncy), vweights=vweights, options=opts)
    return np.asarray(part, dtype=np.int32)


def metis_balanced(a, parts: int, eps: float, seed: int, weights: np.ndarray) -> tuple[np.ndarray, dict]:
    """METIS's partition brought under the strict load bound
    (:mod:`.rebalance`, on the same symmetrized pattern)."""
    from .rebalance import rebalance

    pattern = symmetric_pattern(a)
    part = metis_partition(a, parts, eps, seed, weights, pattern=pattern)
    return rebalance(*pattern, np.asarray(weights, np.int64), part, parts, eps=eps, seed=seed)


def write_parhip(a, weights: np.ndarray, path: str) -> None:
    """The ParHIP file of Â's symmetrized pattern (for KaMinPar when the
    build did not write one: tests, ``simulate``)."""
    from .. import graphfile as gf

    xadj, adjncy = symmetric_pattern(a)
    n, m = a.shape[0], int(adjncy.size)
    with open(path, "wb") as f:
        f.write(gf.parhip_header(n, m))
        f.write(((3 + n + 1 + xadj) * 8).astype("<u8").tobytes())
        f.write(adjncy.astype("<u8").tobytes())
        f.write(np.asarray(weights, "<i8").tobytes())


def kaminpar_partition(path: str, parts: int, eps: float, seed: int, threads: int = 1,
                       preset: str = "default") -> np.ndarray:
    """(n,) int32 KaMinPar partition of the ParHIP file ``path``; ``threads``
    0 means one (the deterministic choice).

    Its memory is mostly the coarse graphs (64-bit ids and weights: 16 bytes
    a coarse adjacency entry, every level held), which ``eps`` sets: a
    cluster may weigh ``eps`` times the total over ``parts``, and with the
    build's work weights (hubs heavier than that stay alone) a small ``eps``
    coarsens slowly (measured, R-MAT scale 21: a peak of 1,648 MiB at 0.01,
    1,024 at 0.03, 932 at 0.05, the compressed input graph 184 MiB of it;
    scale 22: 3,451 at 0.01, 1,827 at 0.05). See benchmarks/RESULTS.md."""
    import kaminpar

    compress = parhip_entries(path) >= COMPRESS_EDGES
    graph = kaminpar.load_graph(path, kaminpar.GraphFileFormat.PARHIP, compress)
    kaminpar.reseed(seed)
    context = kaminpar.context_by_name(preset)
    part = kaminpar.KaMinPar(max(1, threads), context).compute_partition(graph, parts, eps)
    return np.asarray(part, dtype=np.int32)


@dataclass(frozen=True)
class GraphPartition(Model):
    def needs_for(self, cfg: PartitionConfig) -> frozenset[str]:
        return frozenset({GRAPH_FILE} if cfg.option(BACKEND) == "kaminpar" else {MATRIX})

    def figures(self, counts: Counts, options: Mapping[str, Any], fitted: Collection[str]) -> Figures:
        """KaMinPar's child as fitted (compressed from :data:`COMPRESS_EDGES` entries, where fitted apart),
        leaner for a larger eps than the build's: ``--kaminpar-eps``, or the default from :data:`COMPRESS_EDGES`
        entries on (the fit's builds partitioned for the build's eps below that); METIS's (``--gp-backend
        metis``) documented, not fitted."""
        metis = None
        if options.get(BACKEND.dest) == "metis":
            metis = Documented("METIS", METIS_BYTES_PER_NNZ,
                               f"METIS: {METIS_BYTES_PER_NNZ} bytes a nonzero (documented, not fitted)",
                               "METIS (--gp-backend metis) needs a 64-bit idx_t build")
        big = counts.graph_entries >= COMPRESS_EDGES
        compressed = f"{self.name}-compressed"
        child = compressed if big and f"child:{compressed}" in fitted else ""
        chosen = options.get(KAMINPAR_EPS.dest)
        levels = own_levels(counts.graph_entries, LEVELS.value(options))
        if levels and options.get(BACKEND.dest) != "metis":
            return Figures(self.name, "KaMinPar", child=child, child_share=LEVELS_SHARE, documented=metis,
                           level_files=1.0, note=f"{levels} coarsening levels of our own before KaMinPar: {LEVELS_SHARE} of "
                                "KaMinPar's bytes a nonzero (measured with 2, not fitted)")
        if not (chosen or big):
            return Figures(self.name, "KaMinPar", child=child, documented=metis)
        why = "--kaminpar-eps" if chosen else "KaMinPar at eps 0.05 (the default from 50M entries)"
        return Figures(self.name, "KaMinPar", child=child, child_share=KAMINPAR_EPS_SHARE, documented=metis,
                       note=f"{why}: {KAMINPAR_EPS_SHARE} of KaMinPar's bytes a nonzero (measured, not fitted)")

    def advice(self, counts: Counts, options: Mapping[str, Any]) -> str:
        if counts.graph_entries >= COMPRESS_EDGES:  # KaMinPar is already at its lean default
            return "partition with fewer models at once, or build on a machine with more memory"
        return (f"use {option('--kaminpar-eps', '0.05')} (KaMinPar coarsens further: about 0.6x its memory, another "
                f"partition, brought under --eps) or fewer models at once")

    def in_child(self, inputs: Inputs, cfg: PartitionConfig) -> bool:
        if cfg.option(BACKEND) == "kaminpar":
            return True  # native, holds the GIL
        return inputs.a is not None and inputs.a.nnz >= CHILD_NNZ

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        if cfg.option(BACKEND) == "metis":
            part, info = metis_balanced(inputs.a, cfg.parts, cfg.eps, cfg.seed, inputs.vertex_weights())
            return Assignment(part, {"backend": "metis", "rebalance": info})
        preset = cfg.option(PRESET)
        part, info = kaminpar_balanced(inputs, cfg, preset)
        own = {k: info.pop(k) for k in ("kaminpar_eps", "levels", "refined") if k in info}
        return Assignment(part, {"backend": "kaminpar", "preset": preset, **own, "rebalance": info})


def kaminpar_eps(entries: int, cfg: PartitionConfig, auto: bool = True) -> float:
    """The imbalance KaMinPar partitions for, on a graph of ``entries``
    adjacency entries: ``--kaminpar-eps`` when set; else the build's eps
    below :data:`COMPRESS_EDGES` entries, and at least :data:`LEAN_EPS` from
    there, where KaMinPar's coarse graphs are the build's largest process
    (measured on a quiet machine, R-MAT scale 21, gp p = 64: KaMinPar's child
    1,657 -> 940 MiB, the partition 34 -> 28 s, edge cut -0.7%, km1 -0.9%,
    work imbalance 0.010 both; benchmarks/RESULTS.md). ``auto`` False (hp's
    start): the build's eps unless the option is set, since hp's child is
    sized by its refinement, not by KaMinPar, and its refinement from the
    lean start ended 3.7% higher (R-MAT scale 22, p = 64)."""
    chosen = float(cfg.option(KAMINPAR_EPS))
    if chosen:
        return chosen
    return max(cfg.eps, LEAN_EPS) if auto and entries >= COMPRESS_EDGES else cfg.eps


def parhip_entries(path: str) -> int:
    """Adjacency entries of the ParHIP file ``path`` (its header's third word)."""
    return int(np.fromfile(path, "<u8", count=3)[2])


def own_levels(entries: int, chosen: str, auto: bool = True) -> int:
    """Coarsening levels of our own before KaMinPar on a graph of ``entries`` adjacency entries: ``chosen``
    (``--gp-levels``) when not ``auto``; else :data:`AUTO_LEVELS` from :data:`COMPRESS_EDGES` entries on,
    where KaMinPar's coarse graphs are the build's largest process, and none below (``auto`` False: hp's
    start, none unless chosen)."""
    if chosen != "auto":
        return int(chosen)
    return AUTO_LEVELS if auto and entries >= COMPRESS_EDGES else 0


def leveled_partition(path: str, levels: int, cfg: PartitionConfig, keps: float, preset: str
                      ) -> tuple[np.ndarray, dict]:
    """(n,) int32 partition of the ParHIP file ``path``: ``levels`` levels of our own
    (:func:`.coarsen.coarsen`, beside the file), KaMinPar on the last one for ``keps``, projected back,
    refined on the graph within ``keps`` (:func:`.coarsen.refine`), then under the build's eps
    (:func:`.rebalance.rebalance`, on the same arrays: the graph is read once); the info: the levels'
    (vertices, entries), the refinement's moves and the rebalance's."""
    from .coarsen import coarsen, read_level, refine
    from .rebalance import rebalance

    coarse, cid, sizes = coarsen(path, levels, cfg.parts, keps)
    try:
        part = kaminpar_partition(coarse, cfg.parts, keps, cfg.seed, cfg.threads, preset)[cid]
    finally:
        if coarse != path:
            os.remove(coarse)
    del cid
    xadj, adj, _, w = read_level(path)
    moved = refine(xadj, adj, w, part, cfg.parts, keps)
    part, info = rebalance(xadj, adj, w, part, cfg.parts, eps=cfg.eps, seed=cfg.seed)
    return part, {"levels": [list(x) for x in sizes], "refined": moved, **info}


def kaminpar_balanced(inputs: Inputs, cfg: PartitionConfig, preset: str, auto: bool = True
                      ) -> tuple[np.ndarray, dict]:
    """KaMinPar's partition of the build's ParHIP file (or of one written
    from Â here), brought under the strict load bound (KaMinPar's own bound
    is the mean plus the heaviest vertex: :mod:`.rebalance`); KaMinPar
    partitions for :func:`kaminpar_eps` (``auto``: its size rule). The info is
    the rebalance's, with ``kaminpar_eps`` when that differs from the build's eps."""
    def run(path: str) -> tuple[np.ndarray, dict]:
        entries = parhip_entries(path)
        keps = kaminpar_eps(entries, cfg, auto)
        levels = own_levels(entries, cfg.option(LEVELS), auto)
        if levels:
            part, info = leveled_partition(path, levels, cfg, keps, preset)
        else:
            part = kaminpar_partition(path, cfg.parts, keps, cfg.seed, cfg.threads, preset)
            # imported once KaMinPar's graph is gone: numba (rebalance's kernels) is about 75 MiB of the child
            from .rebalance import rebalance_parhip

            part, info = rebalance_parhip(path, part, cfg.parts, cfg.eps, cfg.seed)
        return part, {**({"kaminpar_eps": keps} if keps != cfg.eps else {}), **info}

    if inputs.graph_file is not None:
        return run(inputs.graph_file)
    with tempfile.TemporaryDirectory(prefix="shgcn-kaminpar-") as tmp:
        path = os.path.join(tmp, "graph.parhip")
        write_parhip(inputs.a, inputs.vertex_weights(), path)
        return run(path)


MODEL = GraphPartition("gp", "graph partition of the symmetrized graph, the build's vertex weights balanced "
                             "(as DistDGL): KaMinPar (--gp-backend kaminpar) or METIS",
                       options=(BACKEND, PRESET, KAMINPAR_EPS, LEVELS), needs=frozenset({MATRIX, GRAPH_FILE}),
                       runs_in_child=True)
