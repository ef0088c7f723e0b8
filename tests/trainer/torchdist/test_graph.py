"""The graph a model takes (trainer/torchdist/graph.py): the whole graph as a one-rank block equals the store's
PyG export; one layer object runs on a rank's block and on the whole graph; evaluate_whole needs no other rank;
under mpirun the example's model trained at P = 4 gives, on the whole graph in one process, the distributed
evaluation's accuracies."""

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")

from helpers import REPO  # noqa: E402
from helpers.mpi import mpirun  # noqa: E402

from shgcn import store  # noqa: E402
from shgcn.core.errors import UserError  # noqa: E402
from shgcn.trainer.torchdist import (  # noqa: E402
    GATConv,
    GCNConv,
    Graph,
    HaloConv,
    SAGEConv,
    accuracy,
    evaluate_whole,
    masked_loss,
    objective,
    open_block,
    whole_block,
)

EXAMPLE = REPO / "examples" / "torch_pyg.py"


@pytest.fixture(scope="module")
def one_part(tmp_path_factory, client):
    """The graph of ``built`` (the small SBM) in a one-rank store."""
    from helpers.stores import make_in

    return make_in(tmp_path_factory.mktemp("one-part"), client, parts=1, models=("rp",)).path


def test_the_whole_block_is_the_stores_export(built):
    """From a 3-rank store: Â's entries in original ids and CSR order, every row's data in place."""
    whole = whole_block(built.path)
    ref = store.to_pyg(built.path, normalized=True)
    assert whole.plan.size == 1 and whole.n_own == whole.n_local == whole.n == 600
    assert torch.equal(torch.stack([whole.cols, whole.rows]), ref.edge_index)
    assert torch.equal(whole.values, ref.edge_weight)
    assert torch.equal(whole.x, ref.x) and torch.equal(whole.y, ref.y)
    for m in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(getattr(whole, m), getattr(ref, m))
    assert torch.equal(whole.node_ids, torch.arange(600))


@pytest.mark.parametrize("make,reference,normalized", [
    (lambda: GCNConv(8, 3), lambda: pyg_nn.GCNConv(8, 3, normalize=False, add_self_loops=False), True),
    (lambda: SAGEConv(8, 3), lambda: pyg_nn.SAGEConv(8, 3), False),
    (lambda: GATConv(8, 3, heads=2), lambda: pyg_nn.GATConv(8, 3, heads=2, add_self_loops=True), False)])
def test_one_layer_object_runs_on_a_block_and_on_the_whole_graph(built, one_part, make, reference, normalized):
    torch.manual_seed(0)
    conv = make()
    theirs = reference()
    theirs.load_state_dict(conv.conv.state_dict())
    ref = store.to_pyg(built.path, normalized=normalized)
    want = theirs(ref.x, ref.edge_index, *([ref.edge_weight] if normalized else []))
    whole = whole_block(built.path)
    torch.testing.assert_close(conv(whole.x, Graph(whole)), want, rtol=1e-5, atol=1e-5)
    block = open_block(one_part)  # the same graph's one rank, in the store's order
    order = np.argsort(block.node_ids.numpy())
    torch.testing.assert_close(conv(block.x, Graph(block))[order], want, rtol=1e-5, atol=1e-5)


def test_a_layer_that_takes_the_graph_needs_one():
    with pytest.raises(TypeError, match=r"this layer takes the graph it runs on: conv\(x, graph\)"):
        GCNConv(4, 2)(torch.ones((3, 4)))
    with pytest.raises(UserError, match="HaloConv.edges='dense'.: not one of norm, pattern, attention"):
        HaloConv(pyg_nn.GCNConv(4, 2), edges="dense")


def test_the_whole_graph_exchanges_nothing(built):
    graph = Graph(whole_block(built.path))
    x = torch.ones((600, 2))
    assert graph.exchange(x) is x
    assert graph.halo.traffic.calls == []
    with pytest.raises(ValueError, match="599 rows given, the graph has 600"):
        graph.exchange(x[1:])
    assert graph.edges("pattern") is graph.edges("pattern")  # made once
    moved = graph.to("meta")
    assert moved.device.type == "meta" and moved.halo is graph.halo and moved.edges()[0].device.type == "meta"


class Two(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = GCNConv(8, 5), SAGEConv(5, 4)

    def forward(self, x, graph):
        return self.b(self.a(x, graph).relu(), graph)


def test_evaluate_whole_is_the_model_on_the_whole_graph(built):
    torch.manual_seed(1)
    model = Two()
    whole = whole_block(built.path)
    with torch.no_grad():
        out = model(whole.x, Graph(whole))
    want = {"loss": float(masked_loss(out, whole, whole.train_mask)),
            **{f"{m}_acc": accuracy(out, whole, getattr(whole, f"{m}_mask")) for m in ("train", "val", "test")}}
    assert evaluate_whole(model, built.path) == want
    assert evaluate_whole(model, whole) == want
    assert model.training  # put back in training mode
    assert 0 < want["test_acc"] < 1


def test_a_whole_block_is_summed_where_it_is(monkeypatch):
    """In a job of several ranks, a one-rank block's loss and accuracy take no collective (one rank evaluates
    the whole graph alone); a rank's block still sums over the ranks."""
    def no_collective(t):
        raise AssertionError("a collective ran")

    monkeypatch.setattr(objective, "_distributed", lambda: True)
    monkeypatch.setattr(objective, "_all_reduce", no_collective)
    z, y = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0]]), torch.tensor([0, 0, 1])
    mask = torch.tensor([True, True, True])
    whole = SimpleNamespace(y=y, multilabel=False, plan=SimpleNamespace(size=1))
    assert accuracy(z, whole, mask) == pytest.approx(1 / 3)
    assert torch.isclose(masked_loss(z, whole, mask), torch.nn.functional.cross_entropy(z, y))
    rank = SimpleNamespace(y=y, multilabel=False, plan=SimpleNamespace(size=2))
    with pytest.raises(AssertionError, match="a collective ran"):
        accuracy(z, rank, mask)


def summary(ranks, path, arch, log):
    cmd = [sys.executable, str(EXAMPLE), str(path), "--arch", arch, "--epochs", "30", "--eval-whole",
           "--log-file", str(log)]
    res = subprocess.run([mpirun(), "-n", str(ranks), *cmd], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "whole graph: test" in res.stdout
    return json.loads(log.read_text().splitlines()[-1])


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("arch,kind,ranks", [("gcn", "undirected", 4), ("gat", "directed", 2), ("own", "directed", 4)])
def test_the_model_trained_at_p_gives_its_accuracy_on_the_whole_graph(mpi_stores, tmp_path, arch, kind, ranks):
    s = summary(ranks, mpi_stores[kind, ranks], arch, tmp_path / "log.jsonl")
    assert (s["whole_val_acc"], s["whole_test_acc"]) == (s["val_acc"], s["test_acc"])
    assert s["whole_loss"] == pytest.approx(s["eval_loss"], rel=1e-5)
    assert 0 < s["test_acc"] <= 1
