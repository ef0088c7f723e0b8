"""What every compute backend must do (:class:`BackendTests`, ``backend = "numpy"``): every kernel against a
plain numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.trainer.backends import AdamState, Attention, Dropped, Noise, backend


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

    def test_the_elementwise_work_between_the_products(self, be):
        """add (a + alpha b + bias, then ReLU; each part optional; into out), relu, relu_grad (in place), colsum
        and vdot: exact values on hand-made arrays; the inputs unchanged; alpha the backend's 0-d array."""
        a = np.array([[1.0, -2.0, 0.5], [3.0, -4.0, -0.5]], np.float32)
        b = np.array([[0.5, 1.0, -1.0], [2.0, 4.0, 1.0]], np.float32)
        x, y, bias = be.from_host(a.copy()), be.from_host(b.copy()), be.from_host(np.array([1.0, 0.0, -1.0], np.float32))
        assert be.to_host(be.add(x, y)).tolist() == [[1.5, -1.0, -0.5], [5.0, 0.0, 0.5]]
        assert be.to_host(be.add(x, y, alpha=2.0)).tolist() == [[2.0, 0.0, -1.5], [7.0, 4.0, 1.5]]
        assert be.to_host(be.add(x, y, alpha=2.0, bias=bias)).tolist() == [[3.0, 0.0, -2.5], [8.0, 4.0, 0.5]]
        assert be.to_host(be.add(x, y, alpha=2.0, bias=bias, relu=True)).tolist() == [[3, 0, 0], [8, 4, 0.5]]
        assert be.to_host(be.add(x, bias=bias, relu=True)).tolist() == [[2, 0, 0], [4, 0, 0]]
        eps = be.zeros((1,))  # GIN's 1 + eps: a 0-d array of the backend (a device's stays there)
        assert be.to_host(be.add(x, y, alpha=1 + eps[0])).tolist() == [[1.5, -1.0, -0.5], [5.0, 0.0, 0.5]]
        assert be.to_host(be.relu(x)).tolist() == [[1, 0, 0.5], [3, 0, 0]]
        np.testing.assert_array_equal(be.to_host(x), a)  # a new array each time: the inputs stay
        np.testing.assert_array_equal(be.to_host(y), b)
        out = be.from_host(a.copy())
        be.add(out, y, alpha=-1.0, out=out)  # into its first operand
        assert be.to_host(out).tolist() == [[0.5, -3.0, 1.5], [1.0, -8.0, -1.5]]
        g = be.from_host(np.array([[1, 2, 3], [4, 5, 6]], np.float32))
        assert be.to_host(be.relu_grad(g, x)).tolist() == [[1, 0, 3], [4, 0, 0]] == be.to_host(g).tolist()
        assert be.to_host(be.colsum(x)).tolist() == [4, -6, 0]
        assert be.to_host(be.vdot(x, y)).tolist() == [-12.5]

    def test_the_elementwise_work_on_no_rows(self, be):
        e, bias = be.zeros((0, 3)), be.from_host(np.ones(3, np.float32))
        assert be.to_host(be.add(e, e, alpha=2.0, bias=bias, relu=True)).shape == (0, 3)
        assert be.to_host(be.relu(e)).shape == (0, 3) and be.to_host(be.relu_grad(e, e)).shape == (0, 3)
        assert be.to_host(be.colsum(e)).tolist() == [0, 0, 0] and be.to_host(be.vdot(e, e)).tolist() == [0]
        assert be.to_host(be.concat([e, e], 1)).shape == (0, 6)
        assert be.to_host(be.concat([e, be.from_host(np.ones((2, 3), np.float32))], 0)).tolist() == [[1] * 3] * 2

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
