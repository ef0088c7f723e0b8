"""Run under mpirun by the exchange conformance tests (:mod:`.exchanges`): one exchange on a random
matrix and row partition, on nodes of RANKS_PER_NODE consecutive ranks, checked against a dense reference.

    mpirun -n P python -m shgcn.testing.exchange_check EXCHANGE SEED RANKS_PER_NODE [isolated]

Rank 0 prints a JSON list with one object per rank: whether expand and fold equal the dense reference,
the counters of one expand and one fold, and the cost model's prediction of them
(:mod:`shgcn.core.exchanges`).
"""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from shgcn.core.exchanges import EXCHANGES, Layout, traffic
from shgcn.core.partition import PartitionCost
from shgcn.pipeline.stages.layout import in_memory
from shgcn.trainer.exchanges import Peers, make
from shgcn.trainer.plan import comm_plan, full_local
from shgcn.trainer.wire import Wire

D = 5


def predicted_exchange(name: str, m: sp.csr_matrix, owner: np.ndarray, size: int, per_node: int, width: int):
    """The cost model's prediction of one exchange (in and out of mpirun): (expand, fold) traffic per rank
    of exchange ``name`` on matrix ``m`` (rows i need column j) split over ``owner``: what
    :func:`shgcn.core.exchanges.traffic` gives from the cost module's messages."""
    from shgcn.pipeline.metrics.volume import volume_matrix

    part = np.asarray(owner, np.int64)
    cost = PartitionCost("x", volume_matrix(m, part, size), np.bincount(part, weights=np.diff(m.indptr),
                         minlength=size).astype(np.int64), np.bincount(part, minlength=size).astype(np.int64),
                         None, False, graph=m, part=part)
    layout = Layout(size, per_node)
    msgs = EXCHANGES[name].messages(cost, layout)
    return traffic(msgs, 4 * width, layout), traffic(msgs.fold(), 4 * width, layout)


def problem(seed: int, size: int, isolate: int = 0):
    """The same random matrix (with its diagonal), contiguous row ranges and rows on every rank; ``isolate`` k:
    no nonzero between the rows of the first k ranks (node 0) and the others."""
    rng = np.random.default_rng(seed)
    n = 40 + 7 * size
    m = sp.random(n, n, density=0.08, random_state=rng, format="csr", dtype=np.float32)
    m = (m + sp.identity(n, dtype=np.float32, format="csr")).tocsr()
    m.sort_indices()
    cuts = np.sort(rng.choice(np.arange(1, n), size - 1, replace=False)) if size > 1 else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    x = rng.standard_normal((n, D)).astype(np.float32)
    owner = (np.searchsorted(offsets, np.arange(n), side="right") - 1).astype(np.int32)
    if isolate:
        coo = m.tocoo()
        keep = (owner[coo.row] < isolate) == (owner[coo.col] < isolate)
        m = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=m.shape)
        m.sort_indices()
    return m, offsets, x, owner


def main(name: str, seed: int, per_node: int, isolated: bool) -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    m, offsets, x, owner = problem(seed, size, per_node if isolated else 0)
    plans = [b.plan for b in in_memory(m, owner, size, directed=False)[1]]
    plan = plans[rank]
    cp = comm_plan(plan, rank, offsets)
    peers = Peers(np.arange(size, dtype=np.int64) // per_node)
    ex = make(name, comm, cp, Wire(), peers, local=lambda: full_local(plan, cp))
    lo, hi = int(offsets[rank]), int(offsets[rank + 1])

    got: dict[int, np.ndarray] = {}
    ex.expand(x[lo:hi], lambda: None, lambda q, rows: got.__setitem__(q, np.array(rows)))
    expand_ok = all(np.array_equal(got.get(q, np.zeros((0, D), np.float32)),
                                   x[cp.recv_ids[cp.recv_start[q]:cp.recv_start[q + 1]]])
                    for q in range(size) if q != rank)
    expand = ex.counters.reset()

    def contribution(r, q, count):  # partial sums for other ranks' rows come back to their owners and add up
        return np.random.default_rng([seed, r, q]).standard_normal((count, D)).astype(np.float32)

    parts = {q: contribution(rank, q, c) for q, c in cp.recv_from}
    out = np.zeros((hi - lo, D), np.float32)

    def add(rows, buf):
        out[rows] += buf

    ex.fold(parts, D, lambda: None, add)
    ref = np.zeros((x.shape[0], D), np.float32)
    for r in range(size):  # every rank's plan gives the reference
        pr = plans[r]
        for q in range(size):
            ids = pr.recv_ids[pr.recv_ptr[q]:pr.recv_ptr[q + 1]]
            if q != r and ids.size:
                ref[ids] += contribution(r, q, ids.size)
    fold_ok = bool(np.allclose(out, ref[lo:hi], atol=1e-5))
    fold = ex.counters.reset()
    want_e, want_f = predicted_exchange(name, m, owner, size, per_node, D)

    def row(t):
        return {k: int(v[rank]) for k, v in t.items()}

    record = {"rank": rank, "expand_ok": bool(expand_ok), "fold_ok": fold_ok, "expand": expand, "fold": fold,
              "want_expand": row(want_e), "want_fold": row(want_f)}
    out_all = comm.gather(record, root=0)
    if rank == 0:
        print(json.dumps(out_all), flush=True)


if __name__ == "__main__":
    from shgcn.core.plugins import load_plugins

    load_plugins()  # an exchange declared outside the tree (its conformance class runs this too)
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1, "isolated" in sys.argv[4:])
