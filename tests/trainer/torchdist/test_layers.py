"""PyG's layers on a rank's rows (trainer/torchdist/layers.py): in one process each equals the same PyG layer
on the whole graph's export; under mpirun, the example (examples/torch_pyg.py) trains GCNConv, SAGEConv,
GATConv and a user's own module at P = 2 and 4, dropout 0.5 on, with one process's losses and the predicted
bytes; under torchrun its --log-file option is its own; the edges move with a layer; the example's --device
cuda without a GPU is one line, exit code 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")

from helpers import REPO  # noqa: E402
from helpers.mpi import mpirun  # noqa: E402

from shgcn import store  # noqa: E402
from shgcn.trainer.torchdist import Halo, HaloPlan, gat_conv, gcn_conv, open_block, sage_conv  # noqa: E402

EXAMPLE = REPO / "examples" / "torch_pyg.py"


@pytest.mark.cpu_paths  # floats of two libraries: .ci/run runs it under every CPU path
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


def test_a_pyg_script_ported_reaches_plain_pygs_loss(built):
    """getting-started's "why my losses differ from plain PyG": with the store's features as PyG has them (the
    small SBM's are not normalized: as --feature-norm none) and PyG's own optimizer (weight decay on every
    parameter), a two-layer td.GCNConv trained on a rank's block with td.masked_loss summed over the ranks ends
    at plain PyG's loss on the store's export (a 3-rank store, its ranks in one process: the sum of their
    shares)."""
    import torch.nn.functional as F

    from shgcn.trainer import torchdist as td

    class Net(torch.nn.Module):
        def __init__(self, d, c, conv):
            super().__init__()
            self.c1, self.c2 = conv(d, 16), conv(16, c)

        def forward(self, x, g):
            return self.c2(torch.relu(self.c1(x, g)), g)

    whole = store.to_pyg(built.path)
    torch.manual_seed(0)
    plain = Net(whole.x.shape[1], int(whole.y.max()) + 1, pyg_nn.GCNConv)
    opt = torch.optim.Adam(plain.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(30):
        opt.zero_grad()
        loss = F.cross_entropy(plain(whole.x, whole.edge_index)[whole.train_mask], whole.y[whole.train_mask])
        loss.backward()
        opt.step()
    graph = td.Graph(td.whole_block(built.path))  # the one-process block of the 3-rank store
    torch.manual_seed(0)
    ported = Net(graph.block.x.shape[1], graph.block.classes, td.GCNConv)
    opt = torch.optim.Adam(ported.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(30):
        opt.zero_grad()
        ours = td.masked_loss(ported(graph.block.x, graph), graph.block, graph.block.train_mask)
        ours.backward()
        td.sync_gradients(ported.parameters())
        opt.step()
    assert built.attrs.get("feature_norm", "none") in (None, "none")
    assert abs(float(td.global_sum(ours.detach().reshape(1))[0]) - float(loss)) < 1e-5 * max(1.0, float(loss))


def test_the_edges_move_with_the_layer(built):
    """A layer's edges are its buffers: on the block's device, and moved by ``model.to`` (``meta`` standing for
    a GPU), weights and all."""
    b = open_block(built.path, rank=1, size=3)
    plan = HaloPlan(0, 1, b.plan.n_own, b.plan.n_halo, [], [])  # one process: no exchange to set up
    for make in (gcn_conv, sage_conv):
        layer = make(b, Halo(plan), 8, 3)
        moved = layer.to("meta")
        assert moved.edge_index.device.type == "meta"
        assert make is sage_conv or moved.edge_weight.device.type == "meta"
        assert {p.device.type for p in moved.parameters()} == {"meta"}
    on_meta = gcn_conv(b.to("meta"), Halo(plan), 8, 3)
    assert on_meta.edge_index.device.type == on_meta.edge_weight.device.type == "meta"


def test_no_gpu_is_one_line_and_exit_code_2(built):
    res = subprocess.run([sys.executable, str(EXAMPLE), str(built.path), "--device", "cuda"], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [res.stderr.strip()] and "torch sees no CUDA GPU here" in res.stderr


def losses(ranks, path, arch, log):
    cmd = [sys.executable, str(EXAMPLE), str(path), "--arch", arch, "--epochs", "12", "--dropout", "0.5",
           "--log-file", str(log)]
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


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_torchrun_leaves_the_log_file_option_to_the_example(mpi_stores, tmp_path):
    """torchrun's own parser takes ``--log`` as an abbreviation of its options (and stops); ``--log-file`` goes
    to the example."""
    torchrun = Path(sys.executable).parent / "torchrun"
    if not torchrun.exists():
        pytest.skip("torchrun is not installed beside this Python")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")}
    base = [str(torchrun), "--standalone", "--nproc-per-node", "2", str(EXAMPLE), str(mpi_stores["undirected", 2]),
            "--epochs", "3"]
    res = subprocess.run([*base, "--log-file", str(tmp_path / "log.jsonl")], capture_output=True, text=True,
                         timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines[:-1]] == [0, 1, 2] and lines[-1]["ranks_equal"] == 2
    res = subprocess.run([*base, "--log", str(tmp_path / "other.jsonl")], capture_output=True, text=True, timeout=300,
                         env=env)
    assert res.returncode == 2 and "ambiguous option: --log could match" in res.stderr
