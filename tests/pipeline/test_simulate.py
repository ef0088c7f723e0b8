"""``pipeline simulate`` (pipeline/simulate.py): costs of raw partitions, and
predictions at rank counts other than the store's (re-partitioning Â)."""

import numpy as np
import pytest
from helpers import run_cli
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat

from shgcn import store
from shgcn.pipeline import simulate
from shgcn.pipeline.errors import UserError


@pytest.fixture(scope="module")
def store4(tmp_path_factory):
    path = tmp_path_factory.mktemp("simulate") / "p4.zarr"
    res = run_cli("--quiet", "build", "sbm:n=400,classes=4,degree=6,features=24,seed=3", "--parts", "4", "--model",
                  "hp,rp", "--out", str(path))
    assert res.returncode == 0, res.stderr
    return path


def test_cost_of_partition_matches_figure2():
    a = a_hat(6, FIG2_EDGES)
    c = simulate.cost_of_partition(a, FIG2_PART, 3, "x", directed=False)
    assert c.volume.sum(1).tolist() == [3, 3, 3] and c.rows.tolist() == [2, 2, 2] and c.load.tolist() == [7, 8, 5]
    # own-column nonzeros: part 0 rows 0, 1: (0,0) (0,1) (1,0) (1,1); part 1: (2,2) (2,3) (3,2) (3,3);
    # part 2: (4,4) (5,5) (vertex 4's neighbours 1 and 3 and vertex 5's neighbour 3 are elsewhere)
    assert c.own.tolist() == [4, 4, 2]


def test_predict_at_other_rank_counts(store4):
    s = store.open_store(store4)
    with pytest.raises(UserError, match="partitioner"):
        simulate.predict_ranks(s, ranks=[2])
    calls = []

    def round_robin(a, model, parts):
        calls.append((model, parts))
        return np.arange(a.shape[0]) % parts

    rows = simulate.predict_ranks(s, ranks=[2, 4], partitioner=round_robin, exchange=["p2p", "bcast"])
    assert sorted(calls) == [("hp", 2), ("rp", 2)]
    assert [(r["parts"], r["exchange"]) for r in rows[:2]] == [(2, "p2p"), (2, "bcast")]
    assert {r["parts"] for r in rows} == {2, 4} and len(rows) == 8


def test_the_command_re_partitions_with_the_stores_models(store4):
    out = run_cli("simulate", str(store4), "--ranks", "2,4", "--network", "shm")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:3] == ["P", "model", "exchange"] and len(lines) == 1 + 2 * 2 * 3
    assert {ln.split()[0] for ln in lines[1:]} == {"2", "4"}
