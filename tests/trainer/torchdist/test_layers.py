"""PyG's layers on a rank's rows (trainer/torchdist/layers.py): in one process each equals the same PyG layer
on the whole graph's export; under mpirun, the example (examples/torch_pyg.py) trains GCNConv, SAGEConv,
GATConv and a user's own module at P = 2 and 4 with one process's losses and the predicted bytes."""

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")

from helpers import REPO  # noqa: E402
from helpers.mpi import mpirun  # noqa: E402

from shgcn import store  # noqa: E402
from shgcn.trainer.torchdist import Halo, gat_conv, gcn_conv, open_block, sage_conv  # noqa: E402

EXAMPLE = REPO / "examples" / "torch_pyg.py"


@pytest.mark.parametrize("make,reference,normalized", [
    (gcn_conv, lambda: pyg_nn.GCNConv(8, 3, normalize=False, add_self_loops=False), True),
    (sage_conv, lambda: pyg_nn.SAGEConv(8, 3), False),
    (gat_conv, lambda: pyg_nn.GATConv(8, 3, heads=2, add_self_loops=True), False)])
def test_one_rank_equals_the_layer_on_the_whole_graph(tmp_path, client, make, reference, normalized):
    from helpers.stores import make_in

    path = make_in(tmp_path, client, parts=1, models=("rp",)).path
    b = open_block(path)
    kw = {"heads": 2} if make is gat_conv else {}
    torch.manual_seed(0)
    ours = make(b, Halo(b.plan), 8, 3, **kw)
    theirs = reference()
    theirs.load_state_dict(ours.conv.state_dict())
    whole = store.to_pyg(path, normalized=normalized)
    want = theirs(whole.x, whole.edge_index, *([whole.edge_weight] if normalized else []))
    got = ours(b.x)
    order = np.argsort(b.node_ids.numpy())  # local rows in original order
    torch.testing.assert_close(got[order], want, rtol=1e-5, atol=1e-5)


def losses(ranks, path, arch, log):
    cmd = [sys.executable, str(EXAMPLE), str(path), "--arch", arch, "--epochs", "12", "--log", str(log)]
    res = subprocess.run([mpirun(), "-n", str(ranks), *cmd] if ranks > 1 else cmd, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return np.array([r["loss"] for r in lines if "loss" in r]), lines[-1]


@pytest.mark.mpi
@pytest.mark.parametrize("arch,kind,ranks", [
    ("gcn", "undirected", 2),
    *[pytest.param(*case, marks=pytest.mark.slow) for case in (("sage", "undirected", 4), ("gat", "undirected", 4),
                                                               ("gat", "directed", 2), ("own", "directed", 4))]])
def test_the_example_trains_what_one_process_trains(mpi_stores, tmp_path, arch, kind, ranks):
    one, _ = losses(1, mpi_stores[kind, 1], arch, tmp_path / "one.jsonl")
    many, summary = losses(ranks, mpi_stores[kind, ranks], arch, tmp_path / "many.jsonl")
    np.testing.assert_allclose(many, one, rtol=1e-5)
    assert one[-1] < one[0]  # it trains
    assert summary["ranks_equal"] == ranks and summary["all_bytes"] == summary["all_predicted"] > 0
