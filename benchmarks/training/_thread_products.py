"""The dense products alone (issue 52): the backend's gemm and gemm_tn on an epoch's shapes (GCN's 32-256-16
and GIN's 256 x 256 layer, 40,486 rows: rmat16's), through numba's threads calling numpy's sgemm per fixed
block (trainer/backends/blas.py) against the same blocks on Python threads (the backend before issue 52, kept
as its fallback), at each T; alternating, the median of ``--rounds``, milliseconds per call. Its own process:
BLAS and numba's thread counts are set before numpy loads.

    python -m benchmarks.training._thread_products [--threads 1,2] [--rounds 9] [--write]
"""

from __future__ import annotations

import argparse
import os
import time

TITLE = "Threads: the dense products on numba's threads against Python threads (issue 52)"
SHAPES = {"gcn 32x256": (40486, 32, 256), "gcn 256x16": (40486, 256, 16), "gin 256x256": (40486, 256, 256)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--write", action="store_true", help="record the table in benchmarks/RESULTS.md")
    args = p.parse_args()
    ts = [int(t) for t in args.threads.split(",")]
    from shgcn.trainer.cli import share_cores

    share_cores(max(ts))  # BLAS one thread, numba's pool max(T), before numpy loads
    import numpy as np

    from shgcn.trainer.backends import blas
    from shgcn.trainer.backends.numpy import NumpyBackend
    from shgcn.trainer.backends.threads import set_threads

    rng = np.random.default_rng(0)
    backends = {t: NumpyBackend(threads=t) for t in ts}
    found = blas.AVAILABLE
    lines = ["| product | T | numba + sgemm ms (fwd, tn) | Python threads ms (fwd, tn) |", "|---|---|---|---|"]
    for name, (n, k, d) in SHAPES.items():
        a, w, g = (rng.standard_normal(s).astype(np.float32) for s in ((n, k), (k, d), (n, d)))
        times: dict[tuple, list[float]] = {}
        for r in range(args.rounds):
            for t in ts if r % 2 == 0 else ts[::-1]:
                set_threads(t)
                for path in (True, False) if r % 2 == 0 else (False, True):
                    blas.AVAILABLE = found and path
                    be = backends[t]
                    for op, x, y in (("fwd", a, w), ("tn", a, g)):
                        t0 = time.perf_counter()
                        be.gemm(x, y) if op == "fwd" else be.gemm_tn(x, y)
                        times.setdefault((t, path, op), []).append(time.perf_counter() - t0)
        med = {key: 1e3 * float(np.median(v[1:])) for key, v in times.items()}
        for t in ts:
            lines.append(f"| {name} | {t} | {med[t, True, 'fwd']:.1f}, {med[t, True, 'tn']:.1f} | "
                         f"{med[t, False, 'fwd']:.1f}, {med[t, False, 'tn']:.1f} |")
            print(lines[-1], flush=True)
    note = (f"\nms per call, the median of rounds 2..{args.rounds} (alternating T and the two paths); fwd: a (n, k) @ "
            f"(k, d), tn: aᵀ g (n, d). numpy's sgemm found: {found}; {len(os.sched_getaffinity(0))} cores in the "
            f"affinity; load average at the end {os.getloadavg()[0]:.1f}.\n")
    print(note)
    if args.write:
        from benchmarks.common import write_section

        write_section(TITLE, "\n".join(lines) + "\n" + note)


if __name__ == "__main__":
    main()
