"""How shp is built (pipeline/models/shp/build.py): its steps are judged on
the validation objective, never on the held-out batches, and it never
returns worse than its best start."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, a_hat

from shgcn.core import sample
from shgcn.pipeline.metrics import batches
from shgcn.pipeline.metrics.volume import partition_quality
from shgcn.pipeline.models import PartitionConfig
from shgcn.pipeline.models.gp import metis_partition
from shgcn.pipeline.models.rp import random_partition
from shgcn.pipeline.models.shp import SHPConfig
from shgcn.pipeline.models.shp import build as shp_build
from shgcn.pipeline.models.shp.build import Validation, build_shp, column_nets


def metis(a, pcfg):
    return metis_partition(a, pcfg.parts, pcfg.eps, pcfg.seed)


def randomly(a, pcfg):
    return random_partition(a.shape[0], pcfg.parts, pcfg.seed)

class _Recorder:
    """Wraps ``Sampler.batch`` to record every (stream, batch number) drawn."""

    def __init__(self, monkeypatch):
        self.calls: list[tuple[int, int]] = []
        real = sample.Sampler.batch

        def batch(this, k, stream=sample.BUILD):
            self.calls.append((stream, k))
            return real(this, k, stream)

        monkeypatch.setattr(sample.Sampler, "batch", batch)

    def take(self) -> set[tuple[int, int]]:
        out, self.calls = set(self.calls), []
        return out

@pytest.mark.parametrize("kind", ["edge", "rw"])
def test_heldout_batches_are_never_used_by_shp(sbm_graph, monkeypatch, kind):
    """shp draws its sampled nets from BUILD and chooses on VALIDATION; the
    reported volume uses HELDOUT batches 0..eval-1 only, and says so."""
    g, a = sbm_graph
    rec = _Recorder(monkeypatch)
    pcfg = PartitionConfig(parts=4, seed=0)
    scfg = SHPConfig(sampler=kind, batch_size=100, eval_batches=30, validation_batches=20, max_rounds=2)
    res = build_shp(a, g.adj, pcfg, scfg)
    used = rec.take()
    assert {s for s, _ in used} == {sample.BUILD, sample.VALIDATION}
    assert {k for s, k in used if s == sample.VALIDATION} == set(range(20))
    s = sample.Sampler(g.adj, scfg.sampler_config(a.shape[0], 0))
    ds = batches.minibatch_dataset(a, s, {"shp": res.part}, 4, eval_batches=30, theta=0.1, delta=0.5)
    reported = {k for st, k in rec.take() if st == sample.HELDOUT}
    assert reported == set(range(30))
    assert (ds.attrs["heldout_stream"], ds.attrs["validation_stream"], ds.attrs["build_stream"]) == \
        (sample.HELDOUT, sample.VALIDATION, sample.BUILD)
    assert "never used to build or choose" in ds.attrs["streams"]
    assert res.record(scfg)["validation_stream"] == sample.VALIDATION

def test_column_nets_have_the_batch_distribution():
    a = sp.csc_matrix(a_hat(6, FIG2_EDGES))
    nets = column_nets(a, 0.5, seed=1, rounds=range(400))
    assert nets.total == 6 * 400
    # column 3 has 4 other rows: a kept net (>= 2 pins) has 1 + Binomial(4, 0.5 | >= 1) pins
    sizes = np.diff(nets.ptr)[nets.columns == 3]
    assert sizes.min() >= 2 and abs(sizes.mean() - (1 + 2 / (1 - 0.5**4))) < 0.15

@pytest.fixture(scope="module")
def sbm_graph():
    from shgcn.pipeline.sources.synthetic import sbm
    from shgcn.pipeline.stages.ingest import to_graph
    from shgcn.pipeline.stages.normalize import normalized_adjacency

    g = to_graph(sbm(n=1200, classes=6, degree=8, seed=5), directed=False)
    return g, normalized_adjacency(g.adj, False)

def test_shp_is_never_worse_than_its_start_on_heldout(sbm_graph):
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    start = metis(a, pcfg)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2), starts={"gp": start})
    e = {k: batches.expected_volume_node(a, x, 4, 120)[0] for k, x in (("start", start), ("shp", res.part))}
    assert e["shp"] <= e["start"]
    assert (res.rounds[0]["step"], res.rounds[0]["model"]) == ("start", "gp") and res.required_nets == 624
    assert partition_quality(a, res.part, 4).imbalance <= 0.03 + 1e-9
    # deterministic
    again = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2), starts={"gp": start})
    assert np.array_equal(res.part, again.part)

def _bad_partitioner(parts: int):
    """A stand-in for Mt-KaHyPar that returns a random partition: worse than any start."""
    def partition(hg, k, eps, seed, threads=0, preset="deterministic", *, initial=None, vcycles=1):
        return np.random.default_rng(7).integers(0, parts, hg.n_vertices).astype(np.int32)
    return partition

@pytest.mark.parametrize("kind", ["node", "edge"])
def test_shp_keeps_no_step_that_is_worse_than_its_best_start(sbm_graph, monkeypatch, kind):
    """Every refinement returns a worse partition: shp must return its best
    start, bit for bit, and record every other step as not kept."""
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    good, bad = metis(a, pcfg), randomly(a, pcfg)
    monkeypatch.setattr(shp_build, "kahypar_partition", _bad_partitioner(4))
    monkeypatch.setattr(shp_build, "refine_weighted", lambda hg, *_: (_bad_partitioner(4)(hg, 4, 0, 0), {}))
    scfg = SHPConfig(sampler=kind, batch_size=120, max_rounds=2, min_gain=0.0, validation_batches=20)
    res = build_shp(a, g.adj, pcfg, scfg, starts={"gp": bad, "hp": good})  # the better one is "hp" here
    assert np.array_equal(res.part, good) and res.chosen == "start hp"
    assert [(r["step"], r.get("model"), r["kept"]) for r in res.rounds[:2]] == \
        [("start", "gp", True), ("start", "hp", True)]  # gp was the incumbent until hp beat it
    assert not any(r["kept"] for r in res.rounds[2:]) and len(res.rounds) > 3
    objective = Validation(a, sample.Sampler(g.adj, scfg.sampler_config(a.shape[0], 0)), 4, 20)
    assert all(r["validation_volume"] > objective(good) for r in res.rounds[2:])

def test_shp_starts_from_the_best_start_and_keeps_improvements(sbm_graph):
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    good, bad = metis(a, pcfg), randomly(a, pcfg)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=1), starts={"gp": bad, "hp": good})
    vols = [r["validation_volume"] for r in res.rounds]
    best = np.minimum.accumulate(vols)
    assert [r["kept"] for r in res.rounds] == [True] + list(np.diff(best) < 0)
    assert res.rounds[2]["step"] == "surrogate from hp"  # hp is refined first
    exact = batches.expected_volume_node(a, res.part, 4, 120)[0]
    assert exact == pytest.approx(best[-1]) and exact <= batches.expected_volume_node(a, good, 4, 120)[0]

def test_shp_says_how_far_it_is(sbm_graph, monkeypatch):
    """The progress lines a build shows while shp runs (runtime.child.report): every step, the best
    validation volume so far and where it came from, the time spent, and from round 1 on the round's
    expected time; the budget's time left when there is a budget."""
    from shgcn.pipeline.models.shp import build as shp_build

    lines: list[str] = []
    monkeypatch.setattr(shp_build, "report", lines.append)
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2, min_gain=0.0, tangent_passes=0),
                    starts={"gp": metis(a, pcfg)})
    assert lines[0].startswith("start: ") and "(start gp)" in lines[0]
    assert any(x.startswith("the inclusion surrogate") for x in lines)
    rounds = [x for x in lines if x.startswith("round ") and "sampled units" in x]
    assert len(rounds) == sum(r["step"].startswith("round") for r in res.rounds) >= 2
    assert "about" not in rounds[0] and "s for this step" in rounds[1]  # round 1 predicts from round 0
    best = min(r["validation_volume"] for r in res.rounds)
    assert f"validation volume best {best:,.0f} ({res.chosen})" in lines[-1]
    lines.clear()
    build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=1, time_budget=1e6), starts={"gp": metis(a, pcfg)})
    assert all(" s left" in x for x in lines)


def test_shp_batches_override_is_the_papers_model(sbm_graph):
    g, a = sbm_graph
    res = build_shp(a, g.adj, PartitionConfig(parts=4, seed=0), SHPConfig(sampler="edge", batch_size=100, batches=5))
    assert res.construction == "batches" and len(res.rounds) == 1 and res.batches_equivalent == 5

def test_time_budget_stops_the_sampling_rounds(sbm_graph):
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=4, min_gain=0.0, time_budget=0.0))
    assert [r["step"] for r in res.rounds] == ["start", "surrogate from gp"]
    # the V-cycles ran in a child stopped at the budget's end: recorded, nothing scored, the start kept
    stopped = res.rounds[1]
    assert stopped["stopped"] == "time budget" and stopped["validation_volume"] is None and not stopped["kept"]
    assert res.chosen == "start gp" and np.array_equal(res.part, metis(a, pcfg))
    free = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2, min_gain=0.0, tangent_passes=0))
    assert [r["step"] for r in free.rounds][:4] == ["start", "surrogate from gp", "surrogate from scratch",
                                                    "round 0"]  # V-cycles (the default) also partition from scratch
    lp = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2, min_gain=0.0, tangent_passes=0,
                                             refiner="lp"))
    assert [r["step"] for r in lp.rounds][:3] == ["start", "surrogate from gp", "round 0"]


def test_fast_vcycles_take_the_vcycles_steps_and_never_lose_to_the_start(sbm_graph):
    """``--shp-refiner fast-vcycles``: the same steps as the V-cycles (Mt-KaHyPar's default preset instead of its
    deterministic one), judged the same way: the result is at most the start's validation volume."""
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    start = metis(a, pcfg)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=1, min_gain=0.0, tangent_passes=0,
                                              refiner="fast-vcycles"), starts={"gp": start})
    assert [r["step"] for r in res.rounds][:3] == ["start", "surrogate from gp", "surrogate from scratch"]
    assert batches.expected_volume_node(a, res.part, 4, 120)[0] <= res.rounds[0]["validation_volume"] + 1e-9
