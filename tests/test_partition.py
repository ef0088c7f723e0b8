import numpy as np
import pytest

from shgcn.pipeline import partition, quality
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.graph import RawGraph
from shgcn.pipeline.hypergraph import column_net
from shgcn.pipeline.ingest import to_graph
from shgcn.pipeline.normalize import normalized_adjacency
from shgcn.pipeline.synthetic import sbm


def run(model, a, cfg):
    return partition.run(model, partition.Inputs(a), cfg)


@pytest.fixture(scope="module")
def a():
    g = to_graph(sbm(n=1500, classes=6, degree=8, seed=3), directed=False)
    return normalized_adjacency(g.adj, False)


def test_random_partition_is_balanced_and_seeded(a):
    cfg = partition.PartitionConfig(parts=7, seed=5)
    p1 = run("rp", a, cfg).part
    counts = np.bincount(p1, minlength=7)
    assert counts.max() - counts.min() <= 1
    assert np.array_equal(p1, run("rp", a, cfg).part)
    assert not np.array_equal(p1, run("rp", a, partition.PartitionConfig(parts=7, seed=6)).part)


@pytest.mark.parametrize("model", ["gp", "hp"])
def test_partitioners_balance_load_and_beat_random(a, model):
    cfg = partition.PartitionConfig(parts=4, eps=0.05, seed=1)
    part = run(model, a, cfg).part
    assert part.shape == (a.shape[0],) and part.dtype == np.int32
    assert set(np.unique(part)) == set(range(4))
    q = quality.partition_quality(a, part, 4)
    # METIS' ufactor is a target, Mt-KaHyPar's eps a hard bound
    assert q.imbalance <= (0.05 + 1e-9 if model == "hp" else 0.10)
    rp = quality.partition_quality(a, run("rp", a, cfg).part, 4)
    assert q.total_volume < 0.7 * rp.total_volume


def test_hp_deterministic_preset_reproduces(a):
    cfg = partition.PartitionConfig(parts=4, seed=11, threads=2)
    p1 = run("hp", a, cfg).part
    p2 = run("hp", a, cfg).part
    assert np.array_equal(p1, p2)


def test_gp_is_seeded(a):
    cfg = partition.PartitionConfig(parts=4, seed=2)
    assert np.array_equal(run("gp", a, cfg).part, run("gp", a, cfg).part)


def test_one_part():
    g = to_graph(RawGraph(src=np.array([0]), dst=np.array([1]), n=2, directed=False, source="t", lines=1), False)
    a = normalized_adjacency(g.adj, False)
    for m in ("rp", "gp", "hp"):
        assert run(m, a, partition.PartitionConfig(parts=1)).part.tolist() == [0, 0]


def test_hp_in_a_child_process_gives_the_same_partition(a):
    # the binding holds the GIL, so the build runs it in a child process: same seed, same result
    cfg = partition.PartitionConfig(parts=4, seed=5, threads=2)
    here, _ = partition.REGISTRY["hp"].run(partition.Inputs(a), cfg)
    child = run("hp", a, cfg)
    assert np.array_equal(here, child.part) and child.child_peak_mib > 0
    hg = column_net(a)
    improved = partition.kahypar_partition(hg, cfg, initial=here, vcycles=1)
    assert np.array_equal(improved, partition.kahypar_partition(hg, cfg, initial=here, vcycles=1))


def test_registry_declares_every_model():
    reg = partition.load_models()
    assert {"rp", "gp", "hp", "shp"} <= set(reg)
    assert reg["hp"].in_child(partition.Inputs(sp_eye(3))) and reg["shp"].needs_graph
    assert reg["shp"].starts_from == ("gp", "hp")
    assert not reg["gp"].in_child(partition.Inputs(sp_eye(3)))  # small: in the worker; large: in a child


def sp_eye(n):
    import scipy.sparse as sp

    return sp.identity(n, format="csr", dtype=np.float32)


def test_unknown_preset_is_a_user_error(a):
    with pytest.raises(UserError, match="--hp-preset 'fast'"):
        run("hp", a, partition.PartitionConfig(parts=2, hp_preset="fast"))


def test_a_killed_child_is_an_error_not_a_hang(a, monkeypatch):
    import threading

    cfg = partition.PartitionConfig(parts=8, seed=5)
    big = __import__("scipy.sparse", fromlist=["x"]).block_diag([a] * 6, format="csr")
    timer = threading.Timer(0.8, partition.kill_children)
    timer.start()
    with pytest.raises(RuntimeError, match="killed by signal SIGKILL"):
        run("hp", big, cfg)
    timer.cancel()
