"""The network model against measured exchanges with unequal volumes and
message sizes (issue 58): does the epoch model's stage time hold on the
machine it runs on, with that machine's own measured constants?

    mpirun -n 8 python -m benchmarks.training.net_calibration [--repeats 20] [--json out.json] [--write]
    mpirun -n 2 python -m benchmarks.training.net_calibration --quick      # CI's and the dry run's size

First it measures this machine's constants over MPI: the ping-pong latency
and bandwidth between ranks 0 and 1 (α, β: ``benchmarks.training.pingpong``'s
fit) and the per-message overhead of a window of non-blocking messages from
one rank to another (what ``osu_mbw_mr`` measures with one pair: windows of 64
messages of 200 bytes in flight, the time per message less its bytes at 1 / β).
Then every pattern runs as one stage of non-blocking messages (every rank
posts its receives and sends, then waits for all; the stage's time is the
slowest rank's, the median over the repeats):

- ``unequal``: rank 0 sends 700 KB in 1,400-byte messages, every other rank
  100 KB in 200-byte messages, each rank's bytes spread evenly over the
  others;
- ``reverse``: rank 0 sends 100 KB in 200-byte messages, the others 700 KB in
  1,400-byte messages;
- ``equal``: every rank 100 KB in 200-byte messages.

The prediction is the epoch model's stage time (``shgcn.core.contention``)
for the same messages, one entry a message, on a machine of the measured
constants with every rank on one node (shared memory, no link), plus its
oversubscription delay when ranks outnumber cores (the ``this`` preset's
``oversubscribed_sync``). Rank 0 prints the table (measured, predicted, their
ratio) and writes the JSON (``rows``) and, with ``--write``, the RESULTS
section.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from dataclasses import replace
from pathlib import Path

import numpy as np
from mpi4py import MPI

from benchmarks.common import table, write_section
from benchmarks.training.pingpong import fit, one_way

LIGHT = (100_000, 200)  # bytes a rank sends, bytes a message
HEAVY = (700_000, 1_400)
PATTERNS = ("unequal", "reverse", "equal")
WINDOW = 64  # messages in flight in the message-rate test (osu_mbw_mr's window)


def plan(pattern: str, P: int, scale: float = 1.0) -> list[tuple[int, int, int]]:
    """The messages of a pattern on ``P`` ranks: (src, dst, bytes), one entry a message; each rank's bytes
    spread over the others in turn (message i of rank r to rank (r + 1 + i) mod P)."""
    out = []
    for r in range(P):
        heavy = (pattern == "unequal" and r == 0) or (pattern == "reverse" and r != 0)
        total, size = HEAVY if heavy else LIGHT
        total = max(size, int(total * scale))
        for i in range(max(1, total // size)):
            out.append((r, (r + 1 + i % (P - 1)) % P, size))
    return out


def run_stage(comm, msgs: list[tuple[int, int, int]]) -> float:
    """One stage: post every receive and send of this rank, wait for all; seconds on this rank."""
    me = comm.rank
    recv = [(s, b) for s, d, b in msgs if d == me]
    send = [(d, b) for s, d, b in msgs if s == me]
    rbufs = [np.empty(b, np.uint8) for _, b in recv]
    sbufs = [np.ones(b, np.uint8) for _, b in send]
    comm.Barrier()
    t0 = MPI.Wtime()
    reqs = [comm.Irecv(buf, source=s, tag=7) for (s, _), buf in zip(recv, rbufs)]
    reqs += [comm.Isend(buf, dest=d, tag=7) for (d, _), buf in zip(send, sbufs)]
    MPI.Request.Waitall(reqs)
    return MPI.Wtime() - t0


def message_overhead(comm, size: int = 200, windows: int = 8, repeats: int = 20) -> float:
    """Seconds a message as ``osu_mbw_mr`` measures it with one pair: rank 0 sends ``windows`` windows of WINDOW
    non-blocking messages of ``size`` bytes to rank 1 (a wait after each window; the others idle); the median
    over the repeats of the time / messages."""
    buf = np.ones(size, np.uint8)
    rbuf = [np.empty(size, np.uint8) for _ in range(WINDOW)]
    times = []
    for _ in range(repeats + 2):
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(windows):
            if comm.rank == 0:
                MPI.Request.Waitall([comm.Isend(buf, dest=1, tag=9) for _ in range(WINDOW)])
            elif comm.rank == 1:
                MPI.Request.Waitall([comm.Irecv(b, source=0, tag=9) for b in rbuf])
        if comm.rank == 0:
            comm.Recv(buf[:1], source=1, tag=10)  # the last window is through
        elif comm.rank == 1:
            comm.Send(buf[:1], dest=0, tag=10)
        times.append(MPI.Wtime() - t0)
    return float(np.median(times[2:])) / (windows * WINDOW)


def measure(comm, pattern: str, repeats: int, scale: float) -> tuple[float, np.ndarray]:
    """The median slowest-rank time of a pattern's stage, and each rank's median time."""
    msgs = plan(pattern, comm.size, scale)
    for _ in range(3):  # warm up: the shared-memory queues, the buffers' pages
        run_stage(comm, msgs)
    mine = []
    slow = []
    for _ in range(repeats):
        t = run_stage(comm, msgs)
        mine.append(t)
        slow.append(comm.allreduce(t, op=MPI.MAX))
    per_rank = np.asarray(comm.gather(float(np.median(mine)), root=0) or [])
    return float(np.median(slow)), per_rank


def predicted(pattern: str, P: int, scale: float, alpha: float, beta: float, overhead: float | None,
              contention: str | None = None) -> np.ndarray:
    """(P,) the epoch model's seconds for each rank in the pattern's stage, on a machine of the measured
    constants (every rank on one node of this machine's cores; the ``this`` preset's oversubscription
    delay)."""
    from shgcn.core.exchanges import Messages, stage_time
    from shgcn.core.machine import Channel, machine_of

    m = machine_of("this")
    path = Channel(alpha, beta, "measured by net_calibration", overhead)
    m = replace(m, intra=path, inter=path, cores_per_node=os.cpu_count() or 1,
                **({"contention": contention} if contention else {}))
    src, dst, size = (np.array(x, np.int64) for x in zip(*plan(pattern, P, scale)))
    return stage_time(Messages.of(src, dst, size), 1, m, P) + m.sync_delay(P)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="a tenth of the volumes and 5 repeats (CI, the dry run)")
    ap.add_argument("--json", default=None, help="write the measured and predicted figures here (rank 0)")
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/RESULTS.md")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    P = comm.size
    if P < 2:
        if comm.rank == 0:
            print("net_calibration: run it with mpirun -n 2 or more")
        raise SystemExit(2)
    repeats = 5 if args.quick else args.repeats
    scale = 0.1 if args.quick else 1.0
    # this machine's constants: the ping-pong fit (ranks 0 and 1) and the message overhead
    sizes = np.array([8, 512, 4096, 32768, 262144])
    sub = comm.Split(0 if comm.rank < 2 else MPI.UNDEFINED, comm.rank)
    secs = np.array([one_way(sub, int(s), 10 if args.quick else 30) for s in sizes]) if comm.rank < 2 else None
    if sub != MPI.COMM_NULL:
        sub.Free()
    alpha, beta = fit(sizes, secs) if comm.rank == 0 else (0.0, 0.0)
    alpha, beta = comm.bcast((max(alpha, 0.0), max(beta, 0.0)), root=0)
    per_msg = message_overhead(comm, LIGHT[1], repeats=repeats)
    overhead = max(per_msg - LIGHT[1] * beta, 0.0)
    rows = []
    for pattern in PATTERNS:
        slow, per_rank = measure(comm, pattern, repeats, scale)
        if comm.rank == 0:
            row = {"pattern": pattern, "ranks": P, "measured ms": round(slow * 1e3, 4)}
            for name, kw in (("model", {"overhead": overhead}), ("alpha a message", {"overhead": None})):
                t = predicted(pattern, P, scale, alpha, beta, **kw)
                row[f"predicted ms ({name})"] = round(float(t.max()) * 1e3, 4)
                row[f"{name} / measured"] = round(float(t.max()) / slow, 3)
            row["rank 0 measured ms"] = round(float(per_rank[0]) * 1e3, 4)
            row["rank 0 predicted ms"] = round(float(predicted(pattern, P, scale, alpha, beta, overhead)[0]) * 1e3, 4)
            rows.append(row)
    if comm.rank != 0:
        return
    constants = {"alpha_s": alpha, "beta_s_per_byte": beta, "message_s": per_msg, "overhead_s": overhead,
                 "cores": os.cpu_count(), "ranks": P, "repeats": repeats, "scale": scale}
    text = (f"{P} ranks on {os.cpu_count()} cores ({platform.processor() or platform.machine()}); measured here: "
            f"ping-pong α {alpha * 1e6:.2f} µs, β {beta * 1e9:.4f} ns/B ({1 / beta / 1e9 if beta else float('inf'):.2f} "
            f"GB/s); a window of {WINDOW} messages of {LIGHT[1]} B: {per_msg * 1e6:.2f} µs a message, so a "
            f"per-message overhead of {overhead * 1e6:.2f} µs. Each pattern is one stage of non-blocking messages "
            f"(volumes x{scale:g}); measured: the slowest rank, median of {repeats}. Predicted: the epoch model's "
            "stage time for the same messages on a machine of these constants (every rank on one node, no link; "
            "`model`: the latency once and the overhead for every further message sent or received, the default; "
            "`alpha a message`: "
            "every message a full latency, the model before issue 58), plus the oversubscription delay when "
            "ranks outnumber cores.\n\n")
    body = text + table(rows, [(c, c) for c in rows[0]])
    print(body)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"constants": constants, "rows": rows}, indent=1))
    if args.write:
        write_section(f"The network model against measured unequal exchanges, {P} ranks (issue 58)", body)


if __name__ == "__main__":
    main()
