"""What every registered part of the trainer must do: the conformance classes
that each part's tests subclass (as zarr's ``StoreTests``, and the pipeline's
``PartitionerTests``):

- :class:`ArchitectureTests` (``arch = "gcn"``): gradients against finite
  differences; under mpirun, P ranks give one rank's losses and every
  exchange sends exactly the predicted bytes (full batch and mini-batch);
- :class:`ExchangeTests` (``exchange = "p2p"``): expand and fold equal a
  dense reference on a random matrix, and every rank's bytes and messages by
  path (within a node, between nodes) equal the cost model's, on flat and
  virtual-node layouts; training on P ranks gives one rank's losses and the
  predicted bytes by path;
- :class:`AlgorithmTests` (``algorithm = "1.5d"``): P ranks give one rank's
  losses and every rank's bytes, messages and received bytes by kind equal
  the prediction;
- :class:`BackendTests` (``backend = "numpy"``): every kernel against a plain
  numpy reference.

Which MPI cases run in the quick suite: a subclass's ``quick`` names them
(``test_name[params]``); the others are marked slow (tests/conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from helpers import REPO
from helpers.mpi import GRAPHS, mpirun, read_log, train
from shgcn import store
from shgcn.core import epoch
from shgcn.core.algorithms import ALGORITHMS
from shgcn.core.archs import ARCHS
from shgcn.core.costs import Job
from shgcn.core.exchanges import EXCHANGES, node_messages
from shgcn.core.memory import model_bytes
from shgcn.core.partition import PartitionCost
from shgcn.core.registry import load
from shgcn.core.sample import TRAIN, Sampler, SamplerConfig
from shgcn.trainer import archs
from shgcn.trainer.backends import AdamState, Attention, Dropped, Noise, backend
from shgcn.trainer.exchanges import make
from shgcn.trainer.graph import Graph, RowOperators
from shgcn.trainer.plan import CommPlan, LocalMatrix

EXCHANGE_CHECK = REPO / "tests" / "helpers" / "exchange_check.py"
ARCH_ARGS = {"gat": ["--heads", "3"]}


def run(ranks, path, log, *args, timeout=600):
    res = train(ranks, path, *args, log=log, use_mpirun=ranks > 1, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return read_log(log)


def layout_cost(path) -> PartitionCost:
    """The store's layout partition as the cost model takes it."""
    s = store.open_store(path)
    return next(c for c in s.partition_costs() if c.model == s.attrs["model"])


def check_run_bytes(path, header, epochs) -> dict:
    """Every epoch's bytes, messages, received bytes and per-exchange bytes equal the cost model's for the
    run's job (and by path or by kind where the algorithm counts them); so does every rank's modelled memory."""
    cost, job = layout_cost(path), header.job()
    pred = epoch.rank_traffic(cost, job)
    if header.memory:
        assert header.memory == (ALGORITHMS[job.algorithm].memory(cost, job) + model_bytes(job)).tolist()
    n_fwd = len(header.dims) - 1
    for e in epochs:
        assert e.bytes_sent == pred["bytes_sent"].tolist()
        assert e.msgs_sent == pred["msgs_sent"].tolist()
        assert e.bytes_recv == pred["bytes_recv"].tolist()
        if e.exchange_bytes is not None:
            assert np.array(e.exchange_bytes).T.tolist() == pred["calls"].tolist()
        if e.val_acc is not None:  # an evaluation epoch: the forward's exchanges once more
            assert e.eval_bytes_sent == pred["calls"][:n_fwd].sum(0).tolist()
        if e.path_bytes is not None:
            for kind in ("intra", "inter"):
                assert [b[kind] for b in e.path_bytes] == pred[f"{kind}_bytes"].tolist()
                assert [m[kind] for m in e.path_msgs] == pred[f"{kind}_msgs"].tolist()
        if e.bytes_split is not None:
            for kind in ("rows", "inrow", "matrix"):
                assert [b.get(kind, 0) for b in e.bytes_split] == pred[f"{kind}_bytes"].tolist()
    return pred


# ---------------------------------------------------------------- architectures

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
    ops = RowOperators(lm, make("p2p", MPI.COMM_SELF, cp, None), symmetric, backend())
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
    model = archs.build(spec, dims, seed, spec.layer_heads(len(dims) - 1, 2, 2), backend())
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

    @property
    def args(self) -> list[str]:
        return ["--arch", self.arch, *ARCH_ARGS.get(self.arch, [])]

    def test_the_spec_names_this_implementation(self):
        spec = ARCHS[self.arch]
        cls = load(spec.impl)
        assert cls.spec is spec and spec.name == self.arch
        model = archs.build(spec, [5, 4, 3], 0, spec.layer_heads(2, 2, 1), backend())
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
        assert header.arch == self.arch and header.heads == ARCHS[self.arch].layer_heads(3, 3, 1)
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
        g = to_graph(parse_spec(spec), directed=directed)
        a = sp.csc_matrix(normalized_adjacency(g.adj, directed))
        sampler = Sampler(g.adj, SamplerConfig(kind="node", size=90, seed=2))
        steps = read_log(tmp_path / "run.jsonl", "step")[1]
        assert len(steps) == -(-s.attrs["n"] // 90)
        from shgcn.core.costs import call_bytes

        for rec in steps:
            send, recv, _, _ = batch_quality.batch_traffic(a, sampler.batch(rec.batch, TRAIN), s.partition("hp"), 4)
            assert np.array(rec.exchange_bytes).T.tolist() == call_bytes(send, recv, header.job(), directed).tolist()
            assert len(rec.wait_time) == 4 and min(rec.wait_time) >= 0


# ---------------------------------------------------------------- exchanges

def exchange_check(name: str, ranks: int, per_node: int, seed: int, isolated: bool = False) -> list[dict]:
    """Run tests/helpers/exchange_check.py under mpirun: one record per rank."""
    cmd = [sys.executable, str(EXCHANGE_CHECK), name, str(seed), str(per_node), *(["isolated"] if isolated else [])]
    if ranks > 1:
        cmd = [mpirun(), "-n", str(ranks), *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert sorted(r["rank"] for r in out) == list(range(ranks))
    return out


class ExchangeTests:
    """Subclass and set ``exchange`` (a name in :data:`shgcn.core.exchanges.EXCHANGES`); ``quick``: the MPI
    training cases of the quick suite; ``layouts``: (ranks, ranks per node) the random-matrix checks run on."""

    exchange = ""
    quick: frozenset[str] = frozenset()
    layouts = ((1, 1), (2, 1), (4, 1), (4, 2), (5, 2), (8, 4))

    @pytest.fixture(scope="class")
    @classmethod
    def checks(cls):
        """Every layout's records; (P, k, "isolated"): node 0's rows need nothing from other nodes, nor they
        from it."""
        out = {(p, k): exchange_check(cls.exchange, p, k, 7 + p + k) for p, k in cls.layouts}
        out[4, 2, "isolated"] = exchange_check(cls.exchange, 4, 2, 3, isolated=True)
        return out

    def test_the_spec_names_this_implementation(self):
        spec = EXCHANGES[self.exchange]
        assert spec.name == self.exchange and load(spec.impl).name == self.exchange

    @pytest.mark.mpi
    def test_expand_and_fold_equal_the_dense_reference(self, checks):
        for layout, ranks in checks.items():
            assert all(r["expand_ok"] and r["fold_ok"] for r in ranks), layout

    @pytest.mark.mpi
    def test_counters_equal_the_cost_model_by_path(self, checks):
        """Bytes, messages and received bytes of one expand and one fold, every rank, within its node and to
        other nodes: exactly :mod:`shgcn.core.exchanges`' messages."""
        for layout, ranks in checks.items():
            for r in ranks:
                for op in ("expand", "fold"):
                    got, want = r[op], r[f"want_{op}"]
                    assert (got["bytes_sent"], got["msgs_sent"], got["bytes_recv"]) == \
                        (want["bytes_sent"], want["msgs_sent"], want["bytes_recv"]), (layout, r["rank"], op)
                    assert got["paths"] == {k: want[f"{k}_bytes"] for k in ("intra", "inter")}, (layout, op)
                    assert got["path_msgs"] == {k: want[f"{k}_msgs"] for k in ("intra", "inter")}, (layout, op)

    @pytest.mark.mpi
    def test_a_rank_receives_what_the_others_send(self, checks):
        for ranks in checks.values():
            assert sum(r["expand"]["bytes_recv"] for r in ranks) == sum(r["expand"]["bytes_sent"] for r in ranks)

    @pytest.mark.mpi
    @pytest.mark.parametrize("kind", GRAPHS)
    @pytest.mark.parametrize("ranks,per_node", [(2, 1), (4, 2)])
    def test_training_gives_one_rank_losses_and_the_predicted_bytes(self, mpi_stores, tmp_path, kind, ranks,
                                                                     per_node):
        """gcn and gat (its folds every layer), 5 epochs: one rank's losses, and every epoch's bytes and
        messages by path equal the prediction for the run's job (its virtual nodes included)."""
        for arch in ("gcn", "gat"):
            args = ["--arch", arch, *ARCH_ARGS.get(arch, []), "--epochs", 5, "--eval-every", 5]
            _, ref = run(1, mpi_stores[kind, 1], tmp_path / f"ref-{arch}.jsonl", *args)
            header, epochs = run(ranks, mpi_stores[kind, ranks], tmp_path / f"{arch}.jsonl", *args,
                                 "--exchange", self.exchange, "--ranks-per-node", per_node)
            assert header.exchange == self.exchange and header.ranks_per_node == per_node
            # the features' density (the first layer's modelled work) is the store's, over every rank's rows
            density = store.open_store(mpi_stores[kind, ranks]).feature_density()
            assert header.input_density == pytest.approx(density, abs=1e-6) and header.job().input_density > 0
            np.testing.assert_allclose([e.loss for e in epochs], [e.loss for e in ref], rtol=1e-4)
            check_run_bytes(mpi_stores[kind, ranks], header, epochs)


# ---------------------------------------------------------------- algorithms

class AlgorithmTests:
    """Subclass and set ``algorithm``; ``cases``: (replication or grid side c, exchange, row combine, arch,
    graph kind) to train; ``quick``: the cases of the quick suite."""

    algorithm = ""
    cases: tuple = ()
    quick: frozenset[str] = frozenset()
    _reference: dict = {}

    def parts(self, c: int) -> int:
        """The store's parts for a grid of side or replication c."""
        raise NotImplementedError

    def ranks(self, c: int) -> int:
        raise NotImplementedError

    def reference(self, mpi_stores, tmp_path, arch, kind):
        """The losses of one rank (20 epochs, dropout on), once per architecture and graph."""
        if (arch, kind) not in self._reference:
            _, epochs = run(1, mpi_stores[kind, 1], tmp_path / "ref.jsonl", "--arch", arch, *ARCH_ARGS.get(arch, []),
                            "--epochs", 20, "--eval-every", 20)
            self._reference[arch, kind] = [e.loss for e in epochs]
        return self._reference[arch, kind]

    def test_the_spec_names_this_implementation(self):
        spec = ALGORITHMS[self.algorithm]
        assert spec.name == self.algorithm and callable(load(spec.impl))

    @pytest.mark.mpi
    def test_grid_gives_one_rank_losses_and_predicted_bytes(self, mpi_stores, tmp_path, case):
        c, exchange, combine, arch, kind = case
        path, ranks = mpi_stores[kind, self.parts(c)], self.ranks(c)
        header, epochs = run(ranks, path, tmp_path / "run.jsonl", "--arch", arch, *ARCH_ARGS.get(arch, []),
                             "--epochs", 20, "--eval-every", 20, "--algorithm", self.algorithm, "--replication",
                             c if ALGORITHMS[self.algorithm].replicates else 1, "--exchange", exchange,
                             "--row-combine", combine)
        assert header.algorithm == self.algorithm and header.parts == ranks and len(header.memory) == ranks
        ref = self.reference(mpi_stores, tmp_path, arch, kind)
        np.testing.assert_allclose([e.loss for e in epochs], ref, rtol=1e-4)
        assert ref[-1] < ref[0]
        pred = check_run_bytes(path, header, epochs)
        if ranks > 1 and self.ranks(c) != self.parts(c):
            assert pred["inrow_bytes"].sum() > 0  # the row's ranks did combine


def algorithm_cases(cases, quick):
    """pytest params of ``cases``: those outside ``quick`` are slow."""
    return [pytest.param(c, id="-".join(map(str, c)), marks=() if c in quick else pytest.mark.slow) for c in cases]


# ---------------------------------------------------------------- backends

def naive_gat(csr: sp.csr_matrix, z, s_src, s_dst, slope):
    """GAT's aggregation without dropout, by loops over rows: (out, alpha)."""
    heads = s_src.shape[1]
    d = z.shape[1] // heads
    out = np.zeros((csr.shape[0], heads * d), np.float64)
    alpha = np.zeros((csr.nnz, heads))
    for i in range(csr.shape[0]):
        lo, hi = csr.indptr[i], csr.indptr[i + 1]
        cols = csr.indices[lo:hi]
        for h in range(heads):
            e = s_dst[i, h] + s_src[cols, h]
            e = np.where(e > 0, e, slope * e)
            w = np.exp(e - e.max())
            w /= w.sum()
            alpha[lo:hi, h] = w
            out[i, h * d:(h + 1) * d] = w @ z[cols, h * d:(h + 1) * d]
    return out, alpha


class BackendTests:
    """Subclass and set ``backend`` (a name in :data:`shgcn.trainer.backends.BACKENDS`) and ``threads``."""

    backend = ""
    threads = 1

    @pytest.fixture
    def be(self):
        return backend(self.backend, threads=self.threads)

    def test_products(self, be):
        rng = np.random.default_rng(0)
        m = sp.random(7, 5, density=0.4, random_state=rng, format="csr", dtype=np.float32)
        x = rng.standard_normal((5, 3)).astype(np.float32)
        w = rng.standard_normal((3, 4)).astype(np.float32)
        y = be.to_host(be.spmm(m, be.from_host(x)))
        assert y.dtype == np.float32 and np.allclose(y, m.toarray() @ x, atol=1e-5)
        assert np.allclose(be.to_host(be.gemm(be.from_host(x), be.from_host(w))), x @ w, atol=1e-5)
        assert np.allclose(be.to_host(be.gemm_tn(be.from_host(x), be.from_host(x))), x.T @ x, atol=1e-5)

    def test_array_functions(self, be):
        a = be.from_host(np.array([[1.0, -2.0], [3.0, -4.0]], np.float32))
        assert be.to_host(be.concat([a, a], 1)).shape == (2, 4) and be.to_host(be.concat([a, a], 0)).shape == (4, 2)
        assert be.to_host(be.relu(a)).tolist() == [[1, 0], [3, 0]]
        assert be.to_host(be.colsum(a)).tolist() == [4, -6]
        assert float(be.to_host(be.vdot(a, a))[0]) == 30.0
        assert be.to_host(be.zeros((2, 3))).tolist() == [[0] * 3] * 2 and be.to_host(be.empty((2, 3))).shape == (2, 3)
        assert be.to_host(be.dense(sp.csr_matrix(np.eye(2, dtype=np.float32)))).tolist() == [[1, 0], [0, 1]]

    def test_dropout_masks_follow_the_vertex(self, be):
        """The same vertex gets the same mask in any row order; the kept fraction is 1 - rate, the scale exact;
        sparse input keeps its pattern and gets the dense mask; a Dropped input is passed through."""
        rng = np.random.default_rng(3)
        gids = rng.permutation(3000).astype(np.int64) * 13 + 5
        ones = np.ones((gids.size, 21), np.float32)
        whole = be.to_host(be.act_dropout(be.from_host(ones), "none", Noise(0.5, 7, 3), 1, gids)[0])
        order = rng.permutation(gids.size)
        part = be.to_host(be.act_dropout(be.from_host(ones[order]), "none", Noise(0.5, 7, 3), 1, gids[order])[0])
        np.testing.assert_array_equal(part, whole[order])
        assert set(np.unique(whole)) == {0.0, 2.0} and abs((whole > 0).mean() - 0.5) < 0.02
        x = (rng.random((gids.size, 21)) < 0.2).astype(np.float32)
        xs, _ = be.act_dropout(sp.csr_matrix(x), "none", Noise(0.5, 7, 3), 1, gids)
        np.testing.assert_array_equal(be.to_host(be.dense(xs)), x * whole)
        assert be.act_dropout(Dropped(x), "relu", Noise(0.5, 7, 3), 0, gids)[0] is x

    def test_activations_and_their_gradients(self, be):
        z = np.array([[-1.0, 0.5, 2.0, -0.25]], np.float32)
        gid = np.zeros(1, np.int64)
        out, _ = be.act_dropout(be.from_host(z), "relu", None, 0, gid)
        np.testing.assert_array_equal(be.to_host(out), np.maximum(z, 0))
        out, _ = be.act_dropout(be.from_host(z), "elu", None, 0, gid)
        np.testing.assert_allclose(be.to_host(out), np.where(z > 0, z, np.expm1(z)), rtol=1e-6)
        hd = np.maximum(z, 0)  # the gradients are made in place: a fresh g each time
        np.testing.assert_array_equal(be.to_host(be.act_dropout_grad(be.from_host(np.ones_like(z)), hd, "relu", None,
                                                                     None)), (z > 0).astype(np.float32))
        elu = np.where(z > 0, z, np.expm1(z)).astype(np.float32)
        np.testing.assert_allclose(be.to_host(be.act_dropout_grad(be.from_host(np.ones_like(z)), elu, "elu", None,
                                                                  None)), np.where(z > 0, 1, np.exp(z)), rtol=1e-6)

    def test_attention_against_loops(self, be):
        rng = np.random.default_rng(4)
        csr = (sp.random(5, 7, density=0.5, random_state=rng, format="csr") + sp.eye(5, 7, format="csr")).tocsr()
        csr.sort_indices()
        heads, d = 2, 3
        z = rng.standard_normal((7, heads * d)).astype(np.float32)
        s_src = rng.standard_normal((7, heads)).astype(np.float32)
        s_dst = rng.standard_normal((5, heads)).astype(np.float32)
        att = Attention(csr, be.from_host(z), be.from_host(s_src), be.from_host(s_dst), 0.2,
                        np.arange(5, dtype=np.int64), np.arange(7, dtype=np.int64),
                        None, 0, be.empty((csr.nnz, heads)), be.empty((csr.nnz, heads)), be.empty((5, heads * d)))
        be.gat_forward(np.arange(5, dtype=np.int64), att)
        out, alpha = naive_gat(csr, z.astype(np.float64), s_src, s_dst, 0.2)
        np.testing.assert_allclose(be.to_host(att.out), out, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(be.to_host(att.alpha), alpha, rtol=1e-4, atol=1e-6)
        g = rng.standard_normal((5, heads * d)).astype(np.float32)
        dz, ds_src, ds_dst = be.gat_backward(att, be.from_host(g))
        # the gradient of sum(out * g) along a random direction of z, by central differences
        v = rng.standard_normal(z.shape)
        eps = 1e-3
        up = naive_gat(csr, z + eps * v, s_src, s_dst, 0.2)[0]
        down = naive_gat(csr, z - eps * v, s_src, s_dst, 0.2)[0]
        assert np.isclose(((up - down) * g).sum() / (2 * eps), (be.to_host(dz) * v).sum(), rtol=1e-3)
        assert be.to_host(ds_src).shape == (7, heads) and be.to_host(ds_dst).shape == (5, heads)

    def test_losses(self, be):
        rng = np.random.default_rng(5)
        z = rng.standard_normal((6, 3)).astype(np.float32)
        y = np.array([0, 2, 1, 1, 0, 2])
        idx = np.array([0, 1, 3, 5])
        w = np.array([1.0, 2.0, 1.0, 0.5])
        loss, g, correct = be.softmax_xent(be.from_host(z), y, idx, w, 4)
        loss, correct = be.host_values([loss, correct])  # a device backend's numbers stay there until read
        p = np.exp(z[idx] - z[idx].max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        assert np.isclose(loss, -(w * np.log(p[np.arange(4), y[idx]])).sum(), rtol=1e-5)
        want = np.zeros_like(z)
        want[idx] = (p - np.eye(3)[y[idx]]) * w[:, None] / 4
        np.testing.assert_allclose(be.to_host(g), want, atol=1e-6)
        assert correct == int((z[idx].argmax(1) == y[idx]).sum())
        yb = rng.integers(0, 2, (6, 3)).astype(bool)
        loss, g = be.sigmoid_bce(be.from_host(z), yb, idx, w, 4)
        (loss,) = be.host_values([loss])
        s = 1 / (1 + np.exp(-z[idx].astype(np.float64)))
        assert np.isclose(loss, -(w[:, None] * (yb[idx] * np.log(s) + ~yb[idx] * np.log(1 - s))).sum(), rtol=1e-6)
        want = np.zeros_like(z)
        want[idx] = (s - yb[idx]) * w[:, None] / 4
        np.testing.assert_allclose(be.to_host(g), want, atol=1e-6)

    def test_adam_step(self, be):
        p = np.array([1.0, -2.0], np.float32)
        state = AdamState([be.from_host(p.copy())], lr=0.1, m=[be.zeros((2,))], v=[be.zeros((2,))])
        g = np.array([0.5, -0.25], np.float32)
        be.adam_step(state, [be.from_host(g)])
        m, v = 0.1 * g, 0.001 * g * g
        want = p - 0.1 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
        np.testing.assert_allclose(be.to_host(state.params[0]), want, rtol=1e-6)
        assert state.t == 1

    def test_host_round_trip(self, be):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(be.to_host(be.from_host(x)), x)


def job_of(arch="gcn", dims=(5, 4, 3), **kw) -> Job:
    return Job(tuple(dims), arch=arch, **kw)


__all__ = ["AlgorithmTests", "ArchitectureTests", "BackendTests", "ExchangeTests", "algorithm_cases", "check_run_bytes",
           "fd_errors", "job_of", "layer_case", "node_messages", "run"]
