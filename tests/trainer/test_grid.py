"""--algorithm 1.5d and 2d under mpirun: for every algorithm and replication
(1.5D c = 1, 2 on a 2-part store; 2D on 1 x 1 and 2 x 2 grids), P ranks give
the losses of one rank over 20 epochs, and every rank sends exactly the bytes
(and messages, and receives the bytes) that the epoch model predicts, by
exchange and by kind; 1.5D with c = 1 is 1D byte for byte. Bad grids and a
job over the memory limit stop with one line."""

import numpy as np
import pytest
from helpers import one_line
from helpers.mpi import read_log, train

from shgcn import store
from shgcn.core import costs, epoch

pytestmark = pytest.mark.mpi

ARCH_ARGS = {"gcn": [], "sage": [], "gin": [], "gat": ["--heads", "3"]}
_REFERENCE: dict = {}


def quick(cases, *params):
    """Parametrize over ``params``; combinations outside ``cases`` are slow."""
    return [pytest.param(*p, marks=() if p in cases else pytest.mark.slow) for p in params]


def run(ranks, path, log, *args):
    res = train(ranks, path, *args, log=log, use_mpirun=ranks > 1, timeout=300)
    assert res.returncode == 0, res.stderr
    return read_log(log)


def reference(stores, tmp_path, arch, kind):
    """The losses of one rank (20 epochs, dropout on), once per architecture and graph."""
    if (arch, kind) not in _REFERENCE:
        _, epochs = run(1, stores[kind, 1], tmp_path / "ref.jsonl", "--arch", arch, *ARCH_ARGS[arch], "--epochs", 20,
                        "--eval-every", 20)
        _REFERENCE[arch, kind] = [e.loss for e in epochs]
    return _REFERENCE[arch, kind]


def check_bytes(path, header, epochs, exchange, combine):
    s = store.open_store(path)
    cost = next(c for c in s.partition_costs() if c.model == "hp")
    traffic = epoch.rank_traffic(cost, header.dims, exchange, header.arch, header.heads, 4, header.algorithm,
                                 header.replication, combine)
    n_fwd = len(header.dims) - 1
    for e in epochs:
        assert e.bytes_sent == traffic["bytes_sent"].tolist()
        assert e.msgs_sent == traffic["msgs_sent"].tolist()
        assert e.bytes_recv == traffic["bytes_recv"].tolist()
        assert np.array(e.exchange_bytes).T.tolist() == traffic["calls"].tolist()  # per rank, per SpMM
        if e.val_acc is not None:  # an evaluation epoch: the forward's SpMMs once more
            assert e.eval_bytes_sent == traffic["calls"][:n_fwd].sum(0).tolist()
        for kind in ("rows", "inrow", "matrix"):
            assert [b.get(kind, 0) for b in e.bytes_split] == traffic[f"{kind}_bytes"].tolist()
    return traffic


GRIDS = [("1.5d", 1, "p2p", "auto"), ("1.5d", 2, "p2p", "auto"), ("1.5d", 2, "alltoallv", "auto"),
         ("1.5d", 2, "bcast", "auto"), ("1.5d", 2, "p2p", "gather"), ("2d", 1, "p2p", "auto"), ("2d", 2, "p2p", "auto")]
QUICK = {("1.5d", 2, "p2p", "auto", "gcn", "directed"), ("1.5d", 2, "p2p", "auto", "gat", "undirected"),
         ("2d", 2, "p2p", "auto", "sage", "directed")}


@pytest.mark.parametrize("algorithm,c,exchange,combine,arch,kind", quick(QUICK, *[
    (*g, a, k) for g in GRIDS for a in costs.ARCHS for k in ("undirected", "directed")
    if not (a == "gat" and (g[0] == "2d" or g[2] == "bcast"))]))
def test_grid_gives_one_rank_losses_and_predicted_bytes(mpi_stores, tmp_path, algorithm, c, exchange, combine, arch,
                                                        kind):
    """c: the 1.5D replication, or the side of the 2D grid (a store of c parts on c x c ranks)."""
    parts = 2 if algorithm == "1.5d" else c
    ranks = parts * c
    path = mpi_stores[kind, parts]
    header, epochs = run(ranks, path, tmp_path / "run.jsonl", "--arch", arch, *ARCH_ARGS[arch], "--epochs", 20,
                         "--eval-every", 20, "--algorithm", algorithm, "--replication", c if algorithm == "1.5d" else 1,
                         "--exchange", exchange, "--row-combine", combine)
    assert header.algorithm == algorithm and header.parts == ranks and len(header.memory) == ranks
    ref = reference(mpi_stores, tmp_path, arch, kind)
    np.testing.assert_allclose([e.loss for e in epochs], ref, rtol=1e-4)
    assert ref[-1] < ref[0]
    traffic = check_bytes(path, header, epochs, exchange, header.combine or "reduce")
    if ranks > 1 and not (algorithm == "1.5d" and c == 1):
        assert traffic["inrow_bytes"].sum() > 0  # the row's ranks did combine


@pytest.mark.parametrize("arch,kind", quick({("gin", "undirected")}, *[(a, k) for a in costs.ARCHS
                                                                          for k in ("undirected", "directed")]))
def test_15d_with_one_replica_is_1d_byte_for_byte(mpi_stores, tmp_path, arch, kind):
    path = mpi_stores[kind, 2]
    args = ("--arch", arch, *ARCH_ARGS[arch], "--epochs", 3, "--hidden", "32,8")
    _, one = run(2, path, tmp_path / "a.jsonl", *args)
    assert one[0].bytes_split is None
    _, grid = run(2, path, tmp_path / "b.jsonl", *args, "--algorithm", "1.5d", "--replication", 1)
    for a, b in zip(one, grid):
        assert (a.bytes_sent, a.msgs_sent, a.bytes_recv, a.exchange_bytes, a.eval_bytes_sent) == \
            (b.bytes_sent, b.msgs_sent, b.bytes_recv, b.exchange_bytes, b.eval_bytes_sent)
        assert [s["rows"] for s in b.bytes_split] == b.bytes_sent and sum(b.bytes_sent) > 0
    np.testing.assert_allclose([e.loss for e in grid], [e.loss for e in one], rtol=1e-5)


@pytest.mark.parametrize("ranks,parts,args,fragment", [
    (3, 2, ["--algorithm", "1.5d", "--replication", 2], "run with mpirun -n 4 (--algorithm 1.5d: 2 parts x"),
    (2, 2, ["--algorithm", "2d"], "square grid"),
    (2, 2, ["--memory-limit", "4K"], "more than the memory limit of 4.0 KiB"),
])
def test_bad_grid_or_memory_is_one_line(mpi_stores, ranks, parts, args, fragment):
    one_line(train(ranks, mpi_stores["undirected", parts], "--epochs", 1, *args, timeout=120), fragment)


@pytest.mark.parametrize("args,fragment", [
    (["--algorithm", "2d", "--arch", "gat"], "does not run on --algorithm 2d"),
    (["--algorithm", "1.5d", "--mode", "minibatch"], "runs on --algorithm 1d only"),
    (["--algorithm", "1.5d", "--exchange-dtype", "bfloat16"], "runs on --algorithm 1d only"),
    (["--replication", "2"], "needs --algorithm 1.5d"),
    (["--algorithm", "1.5d", "--arch", "gat", "--row-combine", "reduce"], "needs --row-combine gather"),
])
def test_bad_algorithm_options_are_one_line(mpi_stores, args, fragment):
    one_line(train(1, mpi_stores["undirected", 1], "--epochs", 1, *args, use_mpirun=False, timeout=60), fragment)
