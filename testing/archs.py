"""What every architecture must do (:class:`ArchitectureTests`, ``arch = "gcn"``): gradients against finite
differences; under mpirun, P ranks give one rank's losses and every exchange sends exactly the predicted bytes
(full batch and mini-batch). ``quick`` names the MPI cases of the quick suite (:mod:`.quick`)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn import store
from shgcn.core.archs import ARCHS
from shgcn.core.sample import TRAIN, Sampler, SamplerConfig
from shgcn.trainer import archs
from shgcn.trainer.backends import Noise, backend
from shgcn.trainer.exchanges import make
from shgcn.trainer.graph import Graph, RowOperators
from shgcn.trainer.plan import CommPlan, LocalMatrix
from shgcn.trainer.wire import Wire

from .quick import check_quick
from .runs import ARCH_ARGS, GRAPHS, check_run_bytes, read_log, run

# 6 vertices: a path 0-1-2-3 with a chord 0-2, and 4 -> 5 one way (a directed edge),
# so rows have 0 to 3 neighbours and the directed case is not symmetric
EDGES = [(0, 1), (1, 2), (2, 3), (0, 2), (4, 5), (5, 1)]


def hand_matrix(directed: bool) -> np.ndarray:
    """Â-like weights on the pattern of A + I (row i, column j: edge j -> i)."""
    n = 6
    m = np.eye(n, dtype=np.float32)
    for s, t in EDGES:
        m[t, s] = 1
        if not directed:
            m[s, t] = 1
    deg = m.sum(1)
    a = m / np.sqrt(deg[:, None] * deg[None, :]) if not directed else m / deg[:, None]
    return a.astype(np.float32)


def one_rank_graph(a: np.ndarray, symmetric: bool, left=None) -> Graph:
    from mpi4py import MPI

    n = a.shape[0]
    cp = CommPlan(0, 1, np.array([0, n]), [], [], np.zeros(2, np.int64), np.zeros(0, np.int64))
    lm = LocalMatrix(own=sp.csr_matrix(a), halo={})
    ops = RowOperators(lm, make("p2p", MPI.COMM_SELF, cp, Wire()), symmetric, backend())
    return Graph(ops, np.arange(n, dtype=np.int64) * 7 + 3, left)


def fd_errors(model, graph, x, noise, r, rng) -> list[float]:
    """Per parameter array: the relative error of the backward's directional
    derivative along a random direction against central differences (the
    best of three steps: float32 wants large steps for rounding, small ones
    to stay clear of ReLU kinks)."""
    def loss() -> float:  # a random projection of the logits: dL/dlogits = r
        logits, _ = model.forward(x, graph, noise)
        return float((logits.astype(np.float64) * r).sum())

    _, cache = model.forward(x, graph, noise)
    grads = model.backward(cache, r, graph)
    assert len(grads) == len(model.params)
    out = []
    for p, g in zip(model.params, grads):
        assert g.shape == p.shape and g.dtype == np.float32
        v = rng.standard_normal(p.shape).astype(np.float32)
        want = float((g.astype(np.float64) * v).sum())
        errs = []
        for eps in (1e-2, 1e-3, 1e-4):
            p += eps * v
            up = loss()
            p -= 2 * eps * v
            down = loss()
            p += eps * v
            errs.append(abs((up - down) / (2 * eps) - want) / max(abs(want), 1e-2))
        out.append(min(errs))
    return out


def layer_case(arch: str, dims, directed: bool, seed: int = 1):
    """(model, graph, x, r, rng) on the hand graph, parameters moved off their initial point."""
    rng = np.random.default_rng([len(arch), dims[0], directed])
    a = hand_matrix(directed)
    graph = one_rank_graph(a, symmetric=not directed)
    spec = ARCHS[arch]
    model = archs.build(spec, dims, seed, backend(), {"heads": 2, "out_heads": 2} if spec.multihead else {})
    for p in model.params:  # a generic point: zero biases put GIN's dead rows exactly on ReLU's kink
        p += 0.1 * rng.standard_normal(p.shape).astype(np.float32)
    x = rng.standard_normal((a.shape[0], dims[0])).astype(np.float32)
    r = rng.standard_normal((a.shape[0], dims[-1])).astype(np.float32)
    return model, graph, x, r, rng


class ArchitectureTests:
    """Subclass and set ``arch`` (a name in :data:`shgcn.core.archs.ARCHS`); ``quick``: the MPI cases of the
    quick suite."""

    arch = ""
    quick: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        check_quick(cls)  # a name in quick that no test has: an error now, not a case silently left out

    @property
    def args(self) -> list[str]:
        return ["--arch", self.arch, *ARCH_ARGS.get(self.arch, [])]

    def test_the_spec_names_this_implementation(self):
        part = archs.ARCHS[self.arch]
        spec = ARCHS[self.arch]
        assert part.spec is spec and part.impl.spec is spec and spec.name == self.arch
        model = archs.build(spec, [5, 4, 3], 0, backend(), {"heads": 2, "out_heads": 1} if spec.multihead else {})
        assert [model.w_first(k) for k in range(2)] == [spec.w_first([5, 4, 3], k) for k in range(2)]
        assert all(p.dtype == np.float32 for p in model.params) and model.decay

    @pytest.mark.parametrize("directed", [False, True])
    @pytest.mark.parametrize("dims", [[5, 4, 3], [3, 6, 2]])  # the first multiplies by W first, the second not
    def test_gradients_match_finite_differences(self, directed, dims):
        model, graph, x, r, rng = layer_case(self.arch, dims, directed)
        noise = Noise(0.3, seed=4, epoch=2, attn_rate=0.3)  # fixed masks: a deterministic function of the params
        assert max(fd_errors(model, graph, x, noise, r, rng)) < 1e-2

    @pytest.mark.parametrize("directed", [False, True])
    def test_gradients_with_a_row_scaled_operator(self, directed):
        """GraphSAINT's aggregator diag(C_v) P: its transpose is P^T (C_v G), not the forward product again."""
        model, graph, x, r, rng = layer_case(self.arch, [5, 4, 3], directed)
        left = rng.uniform(0.5, 3.0, graph.n_own).astype(np.float32)
        scaled = Graph(graph.ops, graph.col_gids, left=left)
        assert max(fd_errors(model, scaled, x, Noise(0.3, seed=4, epoch=2), r, rng)) < 1e-2

    @pytest.mark.mpi
    @pytest.mark.parametrize("kind", GRAPHS)
    def test_losses_do_not_depend_on_ranks(self, mpi_stores, tmp_path, kind):
        """20 epochs, dropout (and attention dropout) on: the masks follow the vertices, P changes the
        summation order only."""
        losses = {}
        for ranks in (1, 2, 4):
            _, epochs = run(ranks, mpi_stores[kind, ranks], tmp_path / f"r{ranks}.jsonl", *self.args, "--epochs", 20,
                            "--hidden", "16", "--eval-every", 20)
            losses[ranks] = [e.loss for e in epochs]
        assert len(losses[1]) == 20 and losses[1][-1] < losses[1][0]
        np.testing.assert_allclose(losses[2], losses[1], rtol=1e-4)
        np.testing.assert_allclose(losses[4], losses[1], rtol=1e-4)

    @pytest.mark.mpi
    def test_minibatch_losses_do_not_depend_on_ranks(self, mpi_stores, tmp_path):
        """rw sampler, GraphSAINT on: every rank re-draws the batch; the aggregation runs over the induced
        subgraph, the same whoever holds the rows."""
        losses = {}
        for ranks in (1, 2, 4):
            run(ranks, mpi_stores["directed", ranks], tmp_path / f"r{ranks}.jsonl", *self.args, "--mode", "minibatch",
                "--sampler", "rw", "--batch-size", 100, "--epochs", 2)
            losses[ranks] = [s.loss for s in read_log(tmp_path / f"r{ranks}.jsonl", "step")[1]]
        assert len(losses[1]) > 5
        np.testing.assert_allclose(losses[2], losses[1], rtol=1e-4)
        np.testing.assert_allclose(losses[4], losses[1], rtol=1e-4)

    @pytest.mark.mpi
    @pytest.mark.parametrize("kind", GRAPHS)
    @pytest.mark.parametrize("ranks", [2, 4])
    def test_bytes_of_every_exchange_equal_the_prediction(self, mpi_stores, tmp_path, kind, ranks):
        header, epochs = run(ranks, mpi_stores[kind, ranks], tmp_path / "run.jsonl", *self.args, "--epochs", 2,
                             "--hidden", "32,8")
        assert header.arch == self.arch and header.heads == ARCHS[self.arch].layer_heads(3, {"heads": 3, "out_heads": 1})
        assert check_run_bytes(mpi_stores[kind, ranks], header, epochs)["bytes_sent"].sum() > 0

    @pytest.mark.mpi
    @pytest.mark.parametrize("kind", GRAPHS)
    def test_minibatch_bytes_of_every_exchange_equal_the_batch_volume(self, mpi_stores, tmp_path, kind):
        from shgcn.pipeline.metrics import batches as batch_quality
        from shgcn.pipeline.sources.synthetic import parse_spec
        from shgcn.pipeline.stages.ingest import to_graph
        from shgcn.pipeline.stages.normalize import normalized_adjacency

        spec, directed = GRAPHS[kind]
        path = mpi_stores[kind, 4]
        header, _ = run(4, path, tmp_path / "run.jsonl", *self.args, "--mode", "minibatch", "--batch-size", 90,
                        "--epochs", 1, "--hidden", "32,8", "--seed", 2)
        s = store.open_store(path)
        raw = parse_spec(spec)
        assert raw is not None, spec
        g = to_graph(raw, directed=directed)
        a = sp.csc_matrix(normalized_adjacency(g.adj, directed))
        sampler = Sampler(g.adj, SamplerConfig(kind="node", size=90, seed=2))
        steps = read_log(tmp_path / "run.jsonl", "step")[1]
        assert len(steps) == -(-s.attrs["n"] // 90)
        from shgcn.core.costs import call_bytes

        for rec in steps:
            send, recv, _, _ = batch_quality.batch_traffic(a, sampler.batch(rec.batch, TRAIN), s.partition("hp"), 4)
            assert np.array(rec.exchange_bytes).T.tolist() == call_bytes(send, recv, header.job(), directed).tolist()
            assert len(rec.wait_time) == 4 and min(rec.wait_time) >= 0
