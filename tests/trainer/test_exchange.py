"""Conformance of every exchange strategy (as zarr-python's ``StoreTests``):
each strategy's test class subclasses :class:`ExchangeTests`, which runs the
strategy under ``mpirun -n 1, 2, 4`` on a random matrix and checks that
expand and fold equal a dense reference and that the counters equal what the
plan says the strategy moves."""

import json
import subprocess
import sys

import pytest
from helpers import REPO
from helpers.mpi import mpirun

pytestmark = pytest.mark.mpi

SCRIPT = REPO / "tests" / "helpers" / "exchange_check.py"


class ExchangeTests:
    """Subclass with ``strategy`` set and the two ``expected_*`` methods."""

    strategy = ""

    def expected_expand(self, r: dict) -> tuple[int, int]:
        """(bytes, messages) one rank sends in one expand."""
        raise NotImplementedError

    def expected_fold(self, r: dict) -> tuple[int, int]:
        """(bytes, messages) one rank sends in one fold."""
        raise NotImplementedError

    @pytest.fixture(scope="class", params=[1, 2, 4])
    @classmethod
    def ranks(cls, request):
        ranks = request.param
        cmd = [sys.executable, str(SCRIPT), cls.strategy, str(7 + ranks)]
        if ranks > 1:
            cmd = [mpirun(), "-n", str(ranks), *cmd]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout.strip().splitlines()[-1])
        assert sorted(r["rank"] for r in out) == list(range(ranks))
        return out

    def test_expand_and_fold_equal_the_dense_reference(self, ranks):
        assert all(r["expand_ok"] and r["fold_ok"] for r in ranks)

    def test_counters_equal_the_plan(self, ranks):
        for r in ranks:
            assert (r["expand"]["bytes_sent"], r["expand"]["msgs_sent"]) == self.expected_expand(r)
            assert (r["fold"]["bytes_sent"], r["fold"]["msgs_sent"]) == self.expected_fold(r)

    def test_a_rank_receives_what_the_others_send(self, ranks):
        assert sum(r["expand"]["bytes_recv"] for r in ranks) == sum(r["expand"]["bytes_sent"] for r in ranks)


class TestP2P(ExchangeTests):
    strategy = "p2p"

    def expected_expand(self, r):
        return 4 * r["width"] * r["send_rows"], r["send_msgs"]

    def expected_fold(self, r):  # the reverse: what expand received goes back
        return 4 * r["width"] * r["recv_rows"], r["recv_msgs"]


class TestAllToAllV(TestP2P):
    strategy = "alltoallv"


class TestBcast(ExchangeTests):
    strategy = "bcast"

    def expected_expand(self, r):  # the whole block to each of the others
        return 4 * r["width"] * r["own_rows"] * (r["size"] - 1), r["size"] - 1

    def expected_fold(self, r):  # a dense block reduced onto each other owner
        return 4 * r["width"] * r["others_rows"], r["size"] - 1
