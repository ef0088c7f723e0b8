"""1D (trainer/algorithms/oned.py) under the algorithm conformance tests (every exchange, every architecture
on 2 and 4 ranks; the exchanges' and architectures' own tests cover the rest), and the refusals every
algorithm shares: a job that is not a grid, or over the memory limit, stops with one line."""

import pytest
from helpers import one_line
from helpers.mpi import train
from helpers.parts import AlgorithmTests, algorithm_cases

from shgcn.core.archs import ARCHS
from shgcn.core.exchanges import EXCHANGES

# every exchange with every architecture; the (ranks, graph) pairs laid as a Latin square over them, so that each
# exchange and each architecture runs on 2 and 4 ranks, undirected and directed (every pair of factors, not the
# full product: 16 mpirun jobs, not 64)
RUNS = [(p, k) for p in (2, 4) for k in ("undirected", "directed")]
QUICK = {(4, "node", "auto", "gin", "directed"), (2, "alltoallv", "auto", "gat", "undirected")}
CASES = sorted({(*RUNS[(i + j) % len(RUNS)][:1], x, "auto", a, RUNS[(i + j) % len(RUNS)][1])
                for i, x in enumerate(EXCHANGES) for j, a in enumerate(ARCHS)} | QUICK)


class TestOneD(AlgorithmTests):
    algorithm = "1d"

    def parts(self, c):
        return c

    def ranks(self, c):
        return c

    @pytest.fixture(params=algorithm_cases(CASES, QUICK))
    def case(self, request):
        return request.param


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
    (["--replication", "2"], "--replication 2: an option of --algorithm 1.5d, not of --algorithm 1d"),
    (["--algorithm", "1.5d", "--arch", "gat", "--row-combine", "reduce"], "needs --row-combine gather"),
    (["--algorithm", "1.5d", "--exchange", "node"], "runs on --algorithm 1d only"),
])
def test_bad_algorithm_options_are_one_line(mpi_stores, args, fragment):
    one_line(train(1, mpi_stores["undirected", 1], "--epochs", 1, *args, use_mpirun=False, timeout=60), fragment)
