"""What every partition model must do: the conformance class that each
model's tests subclass (as zarr's ``StoreTests``). A new model gets these
tests by subclassing :class:`PartitionerTests` and naming itself (its
``sbm_graph`` fixture comes with the pytest plugin, :mod:`shgcn.testing.plugin`)::

    from shgcn.testing.partitioners import PartitionerTests

    class TestMyModel(PartitionerTests):
        model = "mine"
        bad_options = {"my_option": -1}     # a value its check refuses
"""

from __future__ import annotations

import numpy as np
import pytest

from shgcn.pipeline.config import BuildConfig
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.models import Inputs, PartitionConfig, default_options, get
from shgcn.pipeline.models.base import GRAPH, GRAPH_FILE, MATRIX
from shgcn.pipeline.models.run import run


class PartitionerTests:
    """Subclass and set ``model``; override ``options`` (the model's options
    for every test), ``bad_options`` (option values the model must refuse),
    ``balance_slack`` (a target rather than a bound: METIS' ufactor)."""

    model: str = ""
    parts = 4
    eps = 0.05
    options: dict = {}
    bad_options: dict = {}
    balance_slack = 0.0

    threads = 0  # the build's default: each model's reproducible choice

    @classmethod
    def config(cls, parts: int | None = None, seed: int = 1) -> PartitionConfig:
        return PartitionConfig(parts=cls.parts if parts is None else parts, eps=cls.eps, seed=seed,
                               threads=cls.threads, options={**default_options(), **cls.options})

    @classmethod
    def inputs(cls, sbm_graph) -> Inputs:
        a, adj = sbm_graph
        needs = get(cls.model).needs_for(cls.config())
        # a model that reads a graph file writes it from Â when the build gave none
        return Inputs(a.shape[0], a if needs & {MATRIX, GRAPH_FILE} else None, adj if GRAPH in needs else None)

    @pytest.fixture(scope="class")
    @classmethod
    def assignment(cls, sbm_graph):
        return run(cls.model, cls.inputs(sbm_graph), cls.config())

    def test_same_seed_same_assignment(self, sbm_graph, assignment):
        again = run(self.model, self.inputs(sbm_graph), self.config())
        assert np.array_equal(again.part, assignment.part)

    def test_ids_in_range_and_every_part_used(self, assignment, sbm_graph):
        part = assignment.part
        assert part.shape == (sbm_graph[0].shape[0],) and part.dtype == np.int32
        assert part.min() >= 0 and part.max() < self.parts
        assert np.bincount(part, minlength=self.parts).min() > 0  # n >= P: no empty part

    def test_balance_bound_holds(self, assignment, sbm_graph):
        part = assignment.part
        if get(self.model).balance == "rows":
            counts = np.bincount(part, minlength=self.parts)
            assert counts.max() - counts.min() <= 1
            return
        w = np.diff(sbm_graph[0].indptr)
        load = np.bincount(part, weights=w, minlength=self.parts)
        # (1 + eps) times the average, plus the heaviest vertex (a part cannot take half of one)
        assert load.max() <= (1 + self.eps + self.balance_slack) * load.mean() + w.max()

    def test_the_given_weights_are_the_ones_balanced(self, sbm_graph):
        """Weights of the build's work model (a row ~ 1000, a nonzero ~ 3): the
        weights' bound holds, and with it the rows are nearly balanced, which
        balancing the nonzeros would not give on this graph of uneven degrees."""
        if get(self.model).balance == "rows":
            pytest.skip("the model balances rows")
        a, _ = sbm_graph
        nnz = np.diff(a.indptr)
        w = 1000 + 3 * nnz
        inputs = self.inputs(sbm_graph)
        inputs.weights = w
        part = run(self.model, inputs, self.config()).part
        load = np.bincount(part, weights=w, minlength=self.parts)
        assert load.max() <= (1 + self.eps + self.balance_slack) * load.mean() + w.max()
        rows = np.bincount(part, minlength=self.parts)
        assert rows.max() <= (1 + self.eps + self.balance_slack) * rows.mean() + 2

    def test_child_process_equals_in_process(self, sbm_graph, assignment):
        here = run(self.model, self.inputs(sbm_graph), self.config(), child=False)
        child = run(self.model, self.inputs(sbm_graph), self.config(), child=True)
        assert np.array_equal(here.part, child.part)
        assert np.array_equal(here.part, assignment.part)
        assert child.peak_rss_mib > 0

    def test_one_part_is_all_zeros(self, sbm_graph):
        res = run(self.model, self.inputs(sbm_graph), self.config(parts=1))
        assert not res.part.any()

    def test_bad_option_is_a_user_error(self, tmp_path):
        bad = self.bad_options or {"no_such_option": 1}
        cfg = BuildConfig(source="sbm:n=100", out=str(tmp_path / "x.zarr"), parts=2, models=(self.model,),
                          options=bad)
        with pytest.raises(UserError):
            cfg.check()

    def test_described_for_the_cli(self):
        p = get(self.model)
        assert p.name == self.model and p.description and p.balance in ("rows", "weight")
        assert p.record in ("partitions", "attribute") and p.needs <= {MATRIX, GRAPH, GRAPH_FILE}
        assert p.needs_for(self.config()) <= p.needs
        for o in p.options:
            assert o.flag.startswith("--") and o.help

    def test_the_build_plan_counts_it(self):
        """The build's plan takes its figures (its own fitted ones, else those of the model it resembles) without
        naming it, and counts a child process for it exactly when it partitions in one."""
        from shgcn.pipeline.plan import Coefficients, make_plan
        from shgcn.pipeline.sources.counts import input_counts

        p = get(self.model)
        coef = Coefficients.load()
        plan = make_plan(input_counts("rmat:scale=12"), (self.model,), dict(self.options), coef=coef)
        rows = [r for r in plan.rows if r.stage == "partition"]
        assert rows[0].memory > 0 and isinstance(p.resembles, str)
        children = [r for r in rows if r.process.startswith(f"child {self.model} (")]
        assert len(children) <= 1 and (not children or p.runs_in_child)
