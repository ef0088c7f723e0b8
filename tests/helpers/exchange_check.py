"""Run under mpirun by tests/test_exchange.py: one exchange strategy on a
random matrix and row partition, checked against a dense reference.

    mpirun -n P python tests/helpers/exchange_check.py STRATEGY SEED

Rank 0 prints a JSON list with one object per rank: whether expand and fold equal the dense
reference, and the counters next to what the plan says they must be.
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from shgcn.pipeline.stages.layout import in_memory
from shgcn.trainer.exchange import STRATEGIES
from shgcn.trainer.plan import comm_plan

D = 5


def main(strategy: str, seed: int) -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    rng = np.random.default_rng(seed)  # the same on every rank
    n = 40 + 7 * size
    m = sp.random(n, n, density=0.08, random_state=rng, format="csr", dtype=np.float32)
    m = (m + sp.identity(n, dtype=np.float32, format="csr")).tocsr()
    m.sort_indices()
    cuts = np.sort(rng.choice(np.arange(1, n), size - 1, replace=False)) if size > 1 else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    x = rng.standard_normal((n, D)).astype(np.float32)
    owner = (np.searchsorted(offsets, np.arange(n), side="right") - 1).astype(np.int32)  # contiguous ranges
    plans = [b.plan for b in in_memory(m, owner, size, directed=False)[1]]
    plan = plans[rank]
    cp = comm_plan(plan, rank, offsets)
    ex = STRATEGIES[strategy](comm, cp)
    lo, hi = int(offsets[rank]), int(offsets[rank + 1])

    # expand: every received block holds exactly the rows the plan names
    got = {}
    ex.expand(x[lo:hi], lambda: None, lambda q, rows: got.__setitem__(q, np.array(rows)))
    expand_ok = all(np.array_equal(got.get(q, np.zeros((0, D), np.float32)),
                                   x[cp.recv_ids[cp.recv_start[q]:cp.recv_start[q + 1]]])
                    for q in range(size) if q != rank)
    expand = ex.counters.reset()

    # fold: partial sums for other ranks' rows come back to their owners and add up
    def contribution(r, q, count):
        return np.random.default_rng([seed, r, q]).standard_normal((count, D)).astype(np.float32)

    parts = {q: contribution(rank, q, c) for q, c in cp.recv_from}
    out = np.zeros((hi - lo, D), np.float32)

    def add(rows, buf):
        out[rows] += buf

    ex.fold(parts, D, lambda: None, add)
    ref = np.zeros((n, D), np.float32)
    for r in range(size):  # every rank's plan gives the reference
        pr = plans[r]
        for q in range(size):
            ids = pr.recv_ids[pr.recv_ptr[q]:pr.recv_ptr[q + 1]]
            if q != r and ids.size:
                ref[ids] += contribution(r, q, ids.size)
    fold_ok = bool(np.allclose(out, ref[lo:hi], atol=1e-5))
    fold = ex.counters.reset()
    send_rows = sum(rows.size for _, rows in cp.send_to)
    recv_rows = cp.recv_rows
    out = comm.gather({"rank": rank, "expand_ok": bool(expand_ok), "fold_ok": fold_ok,
                      "expand": expand, "fold": fold, "send_rows": send_rows, "recv_rows": recv_rows,
                      "own_rows": hi - lo, "others_rows": n - (hi - lo), "size": size,
                       "send_msgs": len(cp.send_to), "recv_msgs": len(cp.recv_from), "width": D}, root=0)
    if rank == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
