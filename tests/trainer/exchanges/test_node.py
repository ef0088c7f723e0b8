"""The node-aware exchange (trainer/exchanges/node.py) under the exchange conformance tests, on nodes of
one, two and four ranks (and a last node that holds fewer), and what only it does: each node pair's rows
cross between nodes once, in one message."""

import numpy as np
import pytest
from helpers.parts import ExchangeTests, check_run_bytes, run


class TestNode(ExchangeTests):
    exchange = "node"
    layouts = ((1, 1), (2, 1), (4, 1), (4, 2), (5, 2), (8, 4), (8, 2), (6, 4))
    quick = frozenset({"test_expand_and_fold_equal_the_dense_reference", "test_counters_equal_the_cost_model_by_path",
                       "test_a_rank_receives_what_the_others_send",
                       "test_training_gives_one_rank_losses_and_the_predicted_bytes[4-2-directed]"})

    @pytest.mark.mpi
    def test_one_message_per_node_pair(self, checks):
        """Across nodes, a node sends at most one message to each other node per expand, and no more rows than
        the flat exchange's (a row that several ranks of a node need crosses once)."""
        for (p, k, *_), ranks in checks.items():
            nodes = -(-p // k)
            per_node = np.zeros(nodes, np.int64)
            for r in ranks:
                per_node[r["rank"] // k] += r["expand"]["path_msgs"]["inter"]
            assert (per_node <= nodes - 1).all(), (p, k, per_node)


    @pytest.mark.mpi
    def test_a_node_that_needs_nothing_from_another(self, checks):
        ranks = checks[4, 2, "isolated"]
        assert all(r["expand"]["path_msgs"]["inter"] == 0 for r in ranks)
        assert all(r["expand_ok"] and r["fold_ok"] for r in ranks)


@pytest.fixture(scope="module")
def p8_stores(tmp_path_factory, client, mpi_stores):
    """8-part stores of the MPI tests' directed graph (R-MAT), and Cora's 1- and 8-part stores when the shared
    datasets are there."""
    from helpers import SHARED
    from helpers.mpi import GRAPHS, build_stores

    root = tmp_path_factory.mktemp("p8")
    out = build_stores(root, client, parts=(8,), graphs={"directed": GRAPHS["directed"]})
    if (SHARED / "README.md").exists():
        from shgcn.pipeline.builder import build
        from shgcn.pipeline.config import BuildConfig

        for p in (1, 4, 8):
            path = root / f"cora-p{p}.zarr"
            build(BuildConfig(source="cora", out=str(path), parts=p, models=("hp",), data_dir=str(SHARED)), client,
                  echo=lambda *a: None)
            out["cora", p] = path
    out["directed", 1] = mpi_stores["directed", 1]
    return out


@pytest.mark.mpi
@pytest.mark.slow  # P = 8 stores and Cora's: CI runs it (-m ''); the quick suite trains the node exchange at P = 4
@pytest.mark.parametrize("graph,ranks,per_node", [
    ("directed", 8, 4), ("directed", 8, 2), pytest.param("cora", 4, 2, marks=pytest.mark.dataset),
    pytest.param("cora", 8, 4, marks=pytest.mark.dataset), pytest.param("cora", 8, 2, marks=pytest.mark.dataset)])
def test_node_exchange_on_virtual_nodes(p8_stores, tmp_path, graph, ranks, per_node):
    """P = 4 as 2 x 2 and P = 8 as 2 x 4 and 4 x 2, gcn full batch with dropout: one rank's losses; exact
    bytes and messages by path; inter-node messages per node and exchange at most nodes - 1."""
    if (graph, ranks) not in p8_stores:
        pytest.skip("the shared datasets are not here")
    args = ("--epochs", 5, "--eval-every", 5)
    _, ref = run(1, p8_stores[graph, 1], tmp_path / "ref.jsonl", *args)
    header, epochs = run(ranks, p8_stores[graph, ranks], tmp_path / "run.jsonl", *args, "--exchange", "node",
                         "--ranks-per-node", per_node, timeout=600)
    np.testing.assert_allclose([e.loss for e in epochs], [e.loss for e in ref], rtol=1e-4)
    pred = check_run_bytes(p8_stores[graph, ranks], header, epochs)
    nodes = ranks // per_node
    calls = len(epochs[0].exchange_bytes[0])
    per_node_msgs = np.bincount(np.arange(ranks) // per_node, weights=pred["inter_msgs"], minlength=nodes)
    assert (per_node_msgs <= (nodes - 1) * calls).all() and pred["inter_bytes"].sum() > 0
