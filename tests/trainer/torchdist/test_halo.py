"""The halo exchange (trainer/torchdist/halo.py): the rows gathered, the
gradients returned (the transpose, directed graphs included) and the bytes
counted, against the whole graph and the store's quality table, at P = 2 and 4."""

import json
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
