"""KaMinPar's child, phase by phase: the peak memory of loading the build's
ParHIP file, of KaMinPar's partition, and of the rebalance after it (issue
32: where the child's peak goes, and ``--kaminpar-eps``).

    pipeline export graph rmat:scale=S,edge_factor=16,seed=1 rS.parhip --format parhip   # the build's own file
    python -m benchmarks.build.kaminpar_phases rS.parhip [--preset default] [--kaminpar-eps 0.01] [--parts 64]
        [--eps 0.01] [--compress auto|yes|no] [--cut] [--nnz NNZ]

One setting a process (run each in a fresh one). What the build's partitioner's child does
(``pipeline/models/gp.py``), one phase at a time: ``kaminpar.load_graph(FILE, PARHIP, compress)`` (``auto``:
compressed from ``COMPRESS_EDGES`` adjacency entries on, as the build), ``kaminpar.reseed(seed)``,
``KaMinPar(threads, context_by_name(preset)).compute_partition(graph, parts, kaminpar_eps)``, the graph freed, the
rebalance's module (numba) imported, then ``rebalance_parhip(FILE, part, parts, eps, seed)``. Before each phase
the process's high-water mark is reset (5 written to ``/proc/self/clear_refs``) and after it ``VmHWM`` is read
from ``/proc/self/status``: the phase's peak resident memory. ``--cut``: the edge cut of the rebalanced partition
(undirected edges of A + Aᵀ between parts, from the file) and its work imbalance. ``--nnz``: Â's nonzeros
(``pipeline info``), for the child's peak in bytes a nonzero of Â. Printed: one line a phase, and the row of
RESULTS.md's table "KaMinPar's child: where its peak goes".
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import time
from pathlib import Path

import numpy as np

MIB = 2**20


def status_kib(field: str) -> int:
    """``field`` (VmHWM, VmRSS) of /proc/self/status, in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak() -> None:
    """Reset this process's high-water mark (VmHWM) to its resident memory now."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_mib() -> float:
    return status_kib("VmHWM") / 1024


def rss_mib() -> float:
    return status_kib("VmRSS") / 1024


def entries(path: str) -> int:
    """Adjacency entries of the ParHIP file ``path`` (its header's third word)."""
    return int(np.fromfile(path, "<u8", count=3)[2])


def edge_cut(path: str, part: np.ndarray, piece: int = 1 << 20) -> int:
    """Undirected edges between parts: entries of the file's A + Aᵀ pattern whose ends differ, halved; read by
    row pieces of about ``piece`` entries."""
    from shgcn.pipeline.graphfile import read_parhip

    xadj, adjncy, _ = read_parhip(path)
    n = xadj.size - 1
    cut, lo = 0, 0
    while lo < n:
        hi = int(np.searchsorted(xadj, xadj[lo] + piece, side="right")) - 1
        hi = min(n, max(hi, lo + 1))
        a, b = int(xadj[lo]), int(xadj[hi])
        src = np.repeat(np.arange(lo, hi), np.diff(np.asarray(xadj[lo:hi + 1])))
        cut += int(np.count_nonzero(part[src] != part[np.asarray(adjncy[a:b], np.int64)]))
        lo = hi
    return cut // 2


def work_imbalance(path: str, part: np.ndarray, parts: int) -> float:
    from shgcn.pipeline.graphfile import read_parhip

    _, _, weights = read_parhip(path)
    w = np.ones(part.size) if weights is None else np.asarray(weights, np.float64)
    load = np.bincount(part, weights=w, minlength=parts)
    return float(load.max() / load.mean() - 1)


def phases(path: str, preset: str, keps: float, parts: int, eps: float, compress: bool, threads: int,
           seed: int) -> tuple[dict, np.ndarray]:
    """Each phase's peak (MiB), the graph held after loading, the imports, seconds; and the partition."""
    import kaminpar

    out = {"imports": rss_mib()}
    reset_peak()
    t0 = time.perf_counter()
    graph = kaminpar.load_graph(path, kaminpar.GraphFileFormat.PARHIP, compress)
    out.update(load_peak=peak_mib(), held_after_load=rss_mib(), load_s=time.perf_counter() - t0)
    reset_peak()
    t0 = time.perf_counter()
    kaminpar.reseed(seed)
    part = kaminpar.KaMinPar(max(1, threads), kaminpar.context_by_name(preset)).compute_partition(graph, parts, keps)
    part = np.asarray(part, dtype=np.int32)
    out.update(partition_peak=peak_mib(), partition_s=time.perf_counter() - t0)
    del graph
    gc.collect()
    from shgcn.pipeline.models.rebalance import rebalance_parhip  # numba, imported after KaMinPar as in the child

    out["after_imports"] = rss_mib()
    reset_peak()
    t0 = time.perf_counter()
    part, info = rebalance_parhip(path, part, parts, eps, seed)
    out.update(rebalance_peak=peak_mib(), rebalance_s=time.perf_counter() - t0, rebalance=info)
    return out, np.asarray(part, dtype=np.int32)


def row(label: str, got: dict, nnz: int | None, cut: int | None) -> str:
    """The row of RESULTS.md's table: setting, load peak, graph held after load, partition peak, rebalance peak,
    child peak in B/nnz of Â, edge cut after rebalance."""
    child = max(got["load_peak"], got["partition_peak"], got["rebalance_peak"])
    per = f"{child * MIB / nnz:.1f}" if nnz else ""
    cells = [label, f"{got['load_peak']:,.0f} MiB", f"{got['held_after_load']:,.0f} MiB",
             f"**{got['partition_peak']:,.0f} MiB**", f"{got['rebalance_peak']:,.0f} MiB", per,
             f"{cut:,}" if cut is not None else ""]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="a ParHIP file (pipeline export graph SOURCE FILE --format parhip)")
    ap.add_argument("--preset", default="default", help="KaMinPar's preset (kaminpar.context_names())")
    ap.add_argument("--kaminpar-eps", type=float, default=0.01, help="the imbalance KaMinPar partitions for")
    ap.add_argument("--parts", type=int, default=64)
    ap.add_argument("--eps", type=float, default=0.01, help="the build's eps: the rebalance's bound")
    ap.add_argument("--compress", choices=("auto", "yes", "no"), default="auto",
                    help="KaMinPar's compressed input graph (auto: from COMPRESS_EDGES entries on, as the build)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cut", action="store_true", help="the edge cut and work imbalance after the rebalance")
    ap.add_argument("--nnz", type=int, default=None, help="Â's nonzeros (pipeline info), for B/nnz of Â")
    args = ap.parse_args()
    from shgcn.pipeline.models.gp import COMPRESS_EDGES

    m = entries(args.file)
    compress = {"yes": True, "no": False}.get(args.compress, m >= COMPRESS_EDGES)
    got, part = phases(args.file, args.preset, args.kaminpar_eps, args.parts, args.eps, compress, args.threads,
                       args.seed)
    print(f"{args.file}: {m:,} adjacency entries, compressed {compress}; preset {args.preset}, KaMinPar's eps "
          f"{args.kaminpar_eps}, {args.parts} parts")
    print(f"imports: {got['imports']:,.0f} MiB resident before loading, {got['after_imports']:,.0f} MiB after the "
          "rebalance's imports")
    print(f"load: peak {got['load_peak']:,.0f} MiB, graph held after it {got['held_after_load']:,.0f} MiB, "
          f"{got['load_s']:.1f} s")
    print(f"partition: peak {got['partition_peak']:,.0f} MiB, {got['partition_s']:.1f} s")
    print(f"rebalance: peak {got['rebalance_peak']:,.0f} MiB, {got['rebalance_s']:.1f} s; {got['rebalance']}")
    print(f"partition sha1 {hashlib.sha1(part.tobytes()).hexdigest()}")
    cut = None
    if args.cut:
        cut = edge_cut(args.file, part)
        print(f"edge cut {cut:,}, work imbalance {work_imbalance(args.file, part, args.parts):.4f}")
    label = f"preset `{args.preset}`, KaMinPar's eps {args.kaminpar_eps}"
    print(row(label, got, args.nnz, cut))


if __name__ == "__main__":
    main()
