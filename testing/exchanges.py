"""What every exchange must do (:class:`ExchangeTests`, ``exchange = "p2p"``): expand and fold equal a dense
reference on a random matrix, and every rank's bytes and messages by path (within a node, between nodes) equal
the cost model's, on flat and virtual-node layouts (:mod:`.exchange_check` under mpirun); training on P ranks
gives one rank's losses and the predicted bytes by path. ``quick`` names the MPI cases of the quick suite."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from shgcn import store
from shgcn.core.exchanges import EXCHANGES

from .quick import check_quick
from .runs import ARCH_ARGS, GRAPHS, check_run_bytes, mpirun, run


def exchange_check(name: str, ranks: int, per_node: int, seed: int, isolated: bool = False) -> list[dict]:
    """Run :mod:`.exchange_check` under mpirun: one record per rank."""
    cmd = [sys.executable, "-m", "shgcn.testing.exchange_check", name, str(seed), str(per_node),
           *(["isolated"] if isolated else [])]
    if ranks > 1:
        cmd = [mpirun(), "-n", str(ranks), *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert sorted(r["rank"] for r in out) == list(range(ranks))
    return out


class ExchangeTests:
    """Subclass and set ``exchange`` (a name in :data:`shgcn.core.exchanges.EXCHANGES`); ``quick``: the MPI
    training cases of the quick suite; ``layouts``: (ranks, ranks per node) the random-matrix checks run on."""

    exchange = ""
    quick: frozenset[str] = frozenset()
    layouts = ((1, 1), (2, 1), (4, 1), (4, 2), (5, 2), (8, 4))

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        check_quick(cls)  # a name in quick that no test has: an error now, not a case silently left out

    @pytest.fixture(scope="class")
    @classmethod
    def checks(cls):
        """Every layout's records; (P, k, "isolated"): node 0's rows need nothing from other nodes, nor they
        from it."""
        out: dict[tuple, list[dict]] = {(p, k): exchange_check(cls.exchange, p, k, 7 + p + k) for p, k in cls.layouts}
        out[4, 2, "isolated"] = exchange_check(cls.exchange, 4, 2, 3, isolated=True)
        return out

    def test_the_spec_names_this_implementation(self):
        from shgcn.trainer.exchanges import EXCHANGES as PARTS

        part = PARTS[self.exchange]
        assert part.spec is EXCHANGES[self.exchange] and part.name == part.impl.name == self.exchange

    @pytest.mark.mpi
    def test_expand_and_fold_equal_the_dense_reference(self, checks):
        for layout, ranks in checks.items():
            assert all(r["expand_ok"] and r["fold_ok"] for r in ranks), layout

    @pytest.mark.mpi
    def test_counters_equal_the_cost_model_by_path(self, checks):
        """Bytes, messages and received bytes of one expand and one fold, every rank, within its node and to
        other nodes: exactly :mod:`shgcn.core.exchanges`' messages."""
        for layout, ranks in checks.items():
            for r in ranks:
                for op in ("expand", "fold"):
                    got, want = r[op], r[f"want_{op}"]
                    assert (got["bytes_sent"], got["msgs_sent"], got["bytes_recv"]) == \
                        (want["bytes_sent"], want["msgs_sent"], want["bytes_recv"]), (layout, r["rank"], op)
                    assert got["paths"] == {k: want[f"{k}_bytes"] for k in ("intra", "inter")}, (layout, op)
                    assert got["path_msgs"] == {k: want[f"{k}_msgs"] for k in ("intra", "inter")}, (layout, op)

    @pytest.mark.mpi
    def test_a_rank_receives_what_the_others_send(self, checks):
        for ranks in checks.values():
            assert sum(r["expand"]["bytes_recv"] for r in ranks) == sum(r["expand"]["bytes_sent"] for r in ranks)

    @pytest.mark.mpi
    @pytest.mark.parametrize("kind", GRAPHS)
    @pytest.mark.parametrize("ranks,per_node", [(2, 1), (4, 2)])
    def test_training_gives_one_rank_losses_and_the_predicted_bytes(self, mpi_stores, tmp_path, kind, ranks,
                                                                     per_node):
        """gcn and gat (its folds every layer), 5 epochs: one rank's losses, and every epoch's bytes and
        messages by path equal the prediction for the run's job (its virtual nodes included)."""
        for arch in ("gcn", "gat"):
            args = ["--arch", arch, *ARCH_ARGS.get(arch, []), "--epochs", 5, "--eval-every", 5]
            _, ref = run(1, mpi_stores[kind, 1], tmp_path / f"ref-{arch}.jsonl", *args)
            header, epochs = run(ranks, mpi_stores[kind, ranks], tmp_path / f"{arch}.jsonl", *args,
                                 "--exchange", self.exchange, "--ranks-per-node", per_node)
            assert header.exchange == self.exchange and header.ranks_per_node == per_node
            # the features' density (the first layer's modelled work) is the store's, over every rank's rows
            density = store.open_store(mpi_stores[kind, ranks]).feature_density()
            assert header.input_density == pytest.approx(density, abs=1e-6) and header.job().input_density > 0
            np.testing.assert_allclose([e.loss for e in epochs], [e.loss for e in ref], rtol=1e-4)
            check_run_bytes(mpi_stores[kind, ranks], header, epochs)
