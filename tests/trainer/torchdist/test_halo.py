"""The halo exchange (trainer/torchdist/halo.py): the rows gathered, the
gradients returned (the transpose, directed graphs included) and the bytes
counted, against the whole graph and the store's quality table, at P = 2 and 4; the three ways of posting an
exchange (one by one, staged through host buffers as for a GPU over gloo, one batch as for NCCL) agree, over
gloo between two processes; the plan's rows are taken to the input's device once."""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from helpers import REPO  # noqa: E402
from helpers.mpi import mpirun  # noqa: E402

from shgcn.trainer.torchdist import Halo, HaloPlan  # noqa: E402

CHECK = REPO / "tests" / "helpers" / "torch_halo_check.py"


def test_one_rank_returns_its_rows_and_their_gradient():
    plan = HaloPlan(rank=0, size=1, n_own=3, n_halo=0, send=[], recv=[])
    halo = Halo(plan)
    x = torch.arange(6.0).reshape(3, 2).requires_grad_(True)
    out = halo(x)
    assert torch.equal(out, x.detach())
    (out * 2).sum().backward()
    assert torch.equal(x.grad, torch.full((3, 2), 2.0))
    assert halo.traffic.reset()["calls"] == [0, 0]


def test_wrong_rows_and_no_process_group_are_named():
    with pytest.raises(ValueError, match="2 rows given, the rank owns 3"):
        Halo(HaloPlan(0, 1, 3, 0, [], []))(torch.zeros(2, 1))
    with pytest.raises(RuntimeError, match="torch.distributed initialized"):
        Halo(HaloPlan(0, 2, 3, 1, [], [(1, 0, 1)]))


@pytest.mark.mpi
@pytest.mark.parametrize("kind,ranks", [("directed", 4), pytest.param("undirected", 2, marks=pytest.mark.slow),
                                        pytest.param("undirected", 4, marks=pytest.mark.slow),
                                        pytest.param("directed", 2, marks=pytest.mark.slow)])
def test_rows_gradients_and_bytes_against_the_whole_graph(mpi_stores, kind, ranks):
    """Every rank receives exactly its halo's rows, its gradient is its rows of Âᵀ C (the whole graph's), and
    each exchange sends the rows the quality table predicts, in one message per neighbour."""
    res = subprocess.run([mpirun(), "-n", str(ranks), sys.executable, str(CHECK), str(mpi_stores[kind, ranks])],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["size"] == ranks and out["checks"] == [ranks] * 4, out


def test_the_send_rows_follow_the_input_device():
    plan = HaloPlan(rank=0, size=1, n_own=3, n_halo=0, send=[(1, torch.tensor([2, 0]))], recv=[])
    halo = Halo(plan)
    assert halo.send_rows(torch.device("cpu"))[0] is plan.send[0][1]  # already there: no copy
    on_meta = halo.send_rows(torch.device("meta"))
    assert on_meta[0].device.type == "meta" and halo.send_rows(torch.device("meta"))[0] is on_meta[0]  # kept


# two ranks over gloo; rank 0 owns vertices 0..2 and sends its rows 2, 0 to rank 1; rank 1 owns 3, 4 and sends
# its row 1 (vertex 4) to rank 0
OWN, HALO = {0: [0, 1, 2], 1: [3, 4]}, {0: [4], 1: [2, 0]}
WORKER = r"""
import json, sys, torch, torch.distributed as dist
from shgcn.trainer.torchdist import Halo, HaloPlan, halo as H
rank, store = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
plan = (HaloPlan(0, 2, 3, 1, [(1, torch.tensor([2, 0]))], [(1, 0, 1)]) if rank == 0 else
        HaloPlan(1, 2, 2, 2, [(0, torch.tensor([1]))], [(0, 0, 2)]))
own = [[0, 1, 2], [3, 4]][rank]
staged = H.stages_through_host
for mode in ("one by one", "staged", "batched"):
    H.stages_through_host = (lambda device, group=None: True) if mode == "staged" else staged
    halo = Halo(plan)
    if mode == "batched":
        halo._post = halo._post_batched
    x = (torch.arange(10.0).reshape(5, 2) ** 2)[own].requires_grad_(True)
    out = halo(x)
    c = torch.arange(float(out.numel())).reshape(out.shape) + 100 * rank
    (out * c).sum().backward()
    print(json.dumps({"mode": mode, "out": out.tolist(), "grad": x.grad.tolist(), "c": c.tolist(),
                      "calls": halo.traffic.reset()["calls"]}), flush=True)
dist.destroy_process_group()
"""


def test_every_way_of_posting_agrees_over_gloo(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "PMI_SIZE")}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(r), str(tmp_path / "store")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for r in (0, 1)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    got = [{d["mode"]: d for d in map(json.loads, out.splitlines())} for out, _ in outs]
    x_all = (torch.arange(10.0).reshape(5, 2) ** 2).tolist()
    where = {v: (r, i) for r, rows in OWN.items() for i, v in enumerate(rows)}
    for mode in ("one by one", "staged", "batched"):
        grads = {r: [[0.0, 0.0] for _ in OWN[r]] for r in OWN}
        for r in OWN:  # each output row's weight goes to the row's owner
            for v, ci in zip(OWN[r] + HALO[r], got[r][mode]["c"]):
                q, i = where[v]
                grads[q][i] = [a + b for a, b in zip(grads[q][i], ci)]
        for r in OWN:
            assert got[r][mode]["out"] == [x_all[v] for v in OWN[r] + HALO[r]], (mode, r)
            assert got[r][mode]["grad"] == grads[r], (mode, r)
        assert got[0][mode]["calls"] == [2 * 2 * 4, 1 * 2 * 4] and got[1][mode]["calls"] == [1 * 2 * 4, 2 * 2 * 4]
