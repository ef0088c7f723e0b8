"""What the architectures share (trainer/archs/base.py): the dropout mask's definition, sparse inputs, the
registry's build, and a check that the finite-difference harness can fail."""

import numpy as np
import scipy.sparse as sp
from helpers.parts import fd_errors, layer_case

from shgcn.core.archs import ARCHS
from shgcn.trainer import archs
from shgcn.trainer.archs.base import as_input, dropout_mask
from shgcn.trainer.backends import Noise, backend


def test_a_wrong_gradient_is_caught():
    """The conformance check can fail: a backward that uses other dropout masks than the forward."""
    model, graph, x, r, rng = layer_case("gcn", [5, 4, 3], False)
    real_backward = model.backward

    def backward(cache, g, graph):
        _, other = type(model).forward(model, x, graph, Noise(0.3, seed=5, epoch=2))
        return real_backward(other, g, graph)

    model.backward = backward
    assert max(fd_errors(model, graph, x, Noise(0.3, seed=4, epoch=2), r, rng)) > 0.05


def test_dropout_mask_depends_on_the_vertex_only():
    """The same vertex gets the same mask in any row order and any split of the rows into ranks or blocks;
    other layers, epochs and seeds get other masks; the kept fraction is 1 - rate and the scale exact."""
    be = backend()
    rng = np.random.default_rng(3)
    gids = rng.permutation(5000).astype(np.int64) * 13 + 5
    whole = dropout_mask(be, Noise(0.5, 7, 3), 1, gids, 37)
    for parts in (2, 4, 7):
        order = rng.permutation(gids.size)
        for chunk in np.array_split(order, parts):  # any layout: a rank's rows in any order
            np.testing.assert_array_equal(dropout_mask(be, Noise(0.5, 7, 3), 1, gids[chunk], 37), whole[chunk])
    assert set(np.unique(whole)) == {0.0, 2.0} and abs((whole > 0).mean() - 0.5) < 0.01
    for other in (dropout_mask(be, Noise(0.5, 7, 3), 2, gids, 37), dropout_mask(be, Noise(0.5, 7, 4), 1, gids, 37),
                  dropout_mask(be, Noise(0.5, 8, 3), 1, gids, 37)):
        assert 0.4 < (other != whole).mean() < 0.6
    m = dropout_mask(be, Noise(0.1, 1, 0), 0, gids, 16)
    assert abs((m > 0).mean() - 0.9) < 0.01 and np.isclose(m.max(), 65536 / (65536 - 6554))


def test_sparse_features_become_csr_and_dense_ones_stay():
    x = np.zeros((10, 20), np.float32)
    x[0, 3] = 1
    assert sp.issparse(as_input(x)) and not sp.issparse(as_input(np.ones((3, 3))))


def test_build_gives_each_registered_architecture():
    own = {"heads": 4, "out_heads": 1}
    for name, spec in ARCHS.items():
        model = archs.build(spec, [6, 5, 2], 3, backend(), own)
        assert model.spec is spec and model.dims == [6, 5, 2] and model.heads == spec.layer_heads(2, own)
        assert model.options == spec.own(own) and model.attn_rate(0.5) == (0.5 if spec.attends else 0.0)
        again = archs.build(name, [6, 5, 2], 3, backend(), own)
        assert all(np.array_equal(a, b) for a, b in zip(model.params, again.params)), name  # seeded
