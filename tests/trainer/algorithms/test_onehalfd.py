"""1.5D (trainer/algorithms/onehalfd.py) under the algorithm conformance tests: on a 2-part store with c = 1
and 2, every exchange and row combine, every architecture it runs: one rank's losses over 20 epochs and
exactly the predicted bytes, messages and received bytes per rank, per SpMM and by kind; with one replica it
is 1D byte for byte."""

import numpy as np
import pytest
from helpers.parts import ARCH_ARGS, AlgorithmTests, algorithm_cases, run

from shgcn.core.archs import ARCHS

GRIDS = [(1, "p2p", "auto"), (2, "p2p", "auto"), (2, "alltoallv", "auto"), (2, "bcast", "auto"), (2, "p2p", "gather")]
KINDS = ("undirected", "directed")
QUICK = {(2, "p2p", "auto", "gcn", "directed"), (2, "p2p", "auto", "gat", "undirected")}
# every grid with every architecture it runs, the graph kind alternating over them (each grid and each
# architecture on both kinds: every pair of factors, not the full product)
CASES = sorted({(*g, a, KINDS[(i + j) % 2]) for i, g in enumerate(GRIDS) for j, a in enumerate(ARCHS)
                if ARCHS[a].by_product or (g[1] != "bcast" and g[2] != "reduce")} | QUICK)


class TestOneHalfD(AlgorithmTests):
    algorithm = "1.5d"

    def parts(self, c):
        return 2

    def ranks(self, c):
        return 2 * c

    @pytest.fixture(params=algorithm_cases(CASES, QUICK))
    def case(self, request):
        return request.param


@pytest.mark.mpi
@pytest.mark.parametrize("arch,kind", [pytest.param(a, k, marks=() if (a, k) == ("gin", "undirected") else
                                                    pytest.mark.slow) for a in ARCHS for k in ("undirected", "directed")])
def test_15d_with_one_replica_is_1d_byte_for_byte(mpi_stores, tmp_path, arch, kind):
    path = mpi_stores[kind, 2]
    args = ("--arch", arch, *ARCH_ARGS.get(arch, []), "--epochs", 3, "--hidden", "32,8")
    _, one = run(2, path, tmp_path / "a.jsonl", *args)
    assert one[0].bytes_split is None
    _, grid = run(2, path, tmp_path / "b.jsonl", *args, "--algorithm", "1.5d", "--replication", 1)
    for a, b in zip(one, grid):
        assert (a.bytes_sent, a.msgs_sent, a.bytes_recv, a.exchange_bytes, a.eval_bytes_sent) == \
            (b.bytes_sent, b.msgs_sent, b.bytes_recv, b.exchange_bytes, b.eval_bytes_sent)
        assert [s["rows"] for s in b.bytes_split] == b.bytes_sent and sum(b.bytes_sent) > 0
    np.testing.assert_allclose([e.loss for e in grid], [e.loss for e in one], rtol=1e-5)
