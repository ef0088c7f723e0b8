"""Ping-pong between two MPI ranks: the latency α and inverse bandwidth β of
this machine's MPI (shared memory), fitted to one-way time = α + β · bytes.
The fit gives the paths of the ``shm`` and ``this`` machine presets
(core/machines/shm.json, this.json).

    mpirun -n 2 python -m benchmarks.training.pingpong [--repeats 5] [--out build/pingpong.json]

Rank 0 writes the JSON (sizes, median one-way seconds per size and repeat, the
fit) and the RESULTS.md section.

With more ranks than cores, ``--oversubscribed`` measures what one
synchronization costs when ranks share cores (the ``oversubscribed_sync`` of
the ``this`` preset): every rank runs the same fixed compute, first with no
synchronization at all (time T0 per iteration: the ranks share the cores), then
followed by one exchange of 256 bytes with every other rank (time T1). A waiting rank
busy-polls, so the rank it waits for gets its core only a scheduling slice
later; s = (T1 - T0) / (ranks / cores) per synchronization.

    mpirun -n 8 python -m benchmarks.training.pingpong --oversubscribed [--update-machine]
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


def _work(a: np.ndarray, reps: int) -> None:
    for _ in range(reps):
        a @ a


def per_iteration(comm, a: np.ndarray, reps: int, iters: int, nbytes: int) -> float:
    """Seconds per iteration of fixed compute, followed by one exchange of ``nbytes`` with every other rank
    (0: none; the trainer's exchanges at P = 8 reach most ranks)."""
    peers = [q for q in range(comm.size) if q != comm.rank] if nbytes > 0 else []
    bufs = [np.zeros(nbytes, np.uint8) for _ in range(2 * len(peers))]
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(iters):
        _work(a, reps)
        if peers:
            reqs = [comm.Irecv(bufs[i], source=q, tag=3) for i, q in enumerate(peers)]
            reqs += [comm.Isend(bufs[len(peers) + i], dest=q, tag=3) for i, q in enumerate(peers)]
            MPI.Request.Waitall(reqs)
    t = (MPI.Wtime() - t0) / iters
    return float(comm.allreduce(t, op=MPI.MAX))


def oversubscribed(comm, args: argparse.Namespace) -> None:
    """Measure the cost of one synchronization on an oversubscribed machine (see the module docstring)."""
    import os

    cores = len(os.sched_getaffinity(0))
    over = comm.size / cores
    if over <= 1:
        raise SystemExit(f"--oversubscribed needs more ranks than cores ({cores}): run with mpirun -n {4 * cores}")
    a = np.random.default_rng(0).random((96, 96)).astype(np.float32)
    per_iteration(comm, a, args.reps, 5, 256)  # warm-up
    runs = [(per_iteration(comm, a, args.reps, args.iters, 0), per_iteration(comm, a, args.reps, args.iters, 256))
            for _ in range(args.repeats)]
    if comm.rank != 0:
        return
    t0, t1 = (np.array(x) for x in zip(*runs))
    s = float(np.median(t1 - t0)) / over
    rows = [{"run": str(i + 1), "t0": f"{a_ * 1e6:.1f}", "t1": f"{b * 1e6:.1f}", "d": f"{(b - a_) * 1e6:.1f}",
             "s": f"{(b - a_) / over * 1e6:.1f}"} for i, (a_, b) in enumerate(zip(t0, t1))]
    body = table(rows, [("run", "repeat"), ("t0", "compute only µs"), ("t1", "compute + exchange with every rank µs"),
                        ("d", "difference µs"), ("s", "per unit of oversubscription µs")])
    body += (f"\n{comm.size} ranks on {cores} cores (oversubscription {over:g}); each iteration {args.reps} products "
             f"of 96 x 96 float32 matrices, {args.iters} iterations per repeat. One synchronization costs "
             f"s = {s * 1e6:.1f} µs per unit of oversubscription (the median over repeats): the "
             "`oversubscribed_sync` of the `this` machine preset, added to every synchronization of the epoch model "
             "(an exchange's stage, the gradient allreduce) when a node runs more ranks than it has cores.\n")
    write_section(f"Oversubscribed synchronization: {comm.size} ranks on {cores} cores", body)
    if args.update_machine:
        path = REPO / "core" / "machines" / "this.json"
        d = json.loads(path.read_text())
        d["oversubscribed_sync"] = {
            "seconds": round(s, 7),
            "source": f"`mpirun -n {comm.size} python -m benchmarks.training.pingpong --oversubscribed` "
                      f"(benchmarks/RESULTS.md, {__import__('datetime').date.today()}; the cores were shared with "
                      "other jobs)"}
        path.write_text(json.dumps(d, indent=2) + "\n")
    print(f"oversubscribed_sync = {s:.3g} s per unit of oversubscription")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "build" / "pingpong.json"))
    ap.add_argument("--oversubscribed", action="store_true",
                    help="measure one synchronization's cost with more ranks than cores")
    ap.add_argument("--reps", type=int, default=2, help="--oversubscribed: products per iteration")
    ap.add_argument("--iters", type=int, default=1000, help="--oversubscribed: iterations per repeat")
    ap.add_argument("--update-machine", action="store_true",
                    help="--oversubscribed: write the measured cost into core/machines/this.json")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    if args.oversubscribed:
        oversubscribed(comm, args)
        return
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
