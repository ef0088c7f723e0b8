"""Ping-pong between two MPI ranks: the latency α and inverse bandwidth β of
this machine's MPI (shared memory), fitted to one-way time = α + β · bytes.
The fit gives the paths of the ``shm`` and ``this`` machine presets
(core/machines/shm.json, this.json).

    mpirun -n 2 python -m benchmarks.training.pingpong [--repeats 5] [--out build/pingpong.json]

Rank 0 writes the JSON (sizes, median one-way seconds per size and repeat, the
fit) and the RESULTS.md section.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from mpi4py import MPI

from benchmarks.common import REPO, table, write_section

SIZES = [8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20, 16 << 20]


def one_way(comm, nbytes: int, iters: int) -> float:
    """Median one-way time of ``iters`` round trips of ``nbytes``."""
    buf = np.zeros(max(nbytes, 1), np.uint8)
    times = []
    for _ in range(iters):
        comm.Barrier()
        t0 = MPI.Wtime()
        if comm.rank == 0:
            comm.Send(buf[:nbytes], dest=1, tag=1)
            comm.Recv(buf[:nbytes], source=1, tag=2)
        else:
            comm.Recv(buf[:nbytes], source=0, tag=1)
            comm.Send(buf[:nbytes], dest=0, tag=2)
        times.append((MPI.Wtime() - t0) / 2)
    return float(np.median(times))


def fit(sizes: np.ndarray, seconds: np.ndarray) -> tuple[float, float]:
    """Least squares of t = α + β m, relative errors (each size weighs the same)."""
    m = np.stack([1 / seconds, sizes / seconds], axis=1)
    coef, *_ = np.linalg.lstsq(m, np.ones_like(seconds), rcond=None)
    return float(coef[0]), float(coef[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "build" / "pingpong.json"))
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    if comm.size != 2:
        raise SystemExit("run with mpirun -n 2")
    for s in SIZES:  # warm-up: first touch of buffers, shared-memory setup
        one_way(comm, s, 5)
    runs = [[one_way(comm, s, 200 if s <= 1 << 20 else 40) for s in SIZES] for _ in range(args.repeats)]
    if comm.rank != 0:
        return
    t = np.array(runs)  # (repeats, sizes)
    med = np.median(t, axis=0)
    alpha, beta = fit(np.array(SIZES, float), med)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"sizes": SIZES, "seconds": t.tolist(), "alpha": alpha, "beta": beta}, indent=1))
    rows = [{"bytes": f"{s:,}", "med": f"{m * 1e6:.2f}", "min": f"{lo * 1e6:.2f}", "max": f"{hi * 1e6:.2f}",
             "model": f"{(alpha + beta * s) * 1e6:.2f}", "gbs": f"{s / m / 1e9:.2f}"}
            for s, m, lo, hi in zip(SIZES, med, t.min(0), t.max(0))]
    body = table(rows, [("bytes", "message bytes"), ("med", "one-way µs (median of repeats)"), ("min", "min"),
                        ("max", "max"), ("model", "α + β m µs"), ("gbs", "GB/s")])
    body += (f"\nFit (relative least squares over the sizes): α = {alpha * 1e6:.3f} µs, β = {beta * 1e9:.4f} ns/byte "
             f"({1 / beta / 1e9:.2f} GB/s). Each size: the median of 200 round trips (40 above 1 MiB) per repeat, "
             f"{args.repeats} repeats. Two ranks on this 2-core machine through MPICH's shared memory; other "
             "engineers' jobs share the cores, so the spread between repeats is shown. This is the `shm` machine "
             "preset's path (`core/machines/shm.json`).\n")
    write_section("Ping-pong: MPI latency and bandwidth on this machine", body)


if __name__ == "__main__":
    main()
