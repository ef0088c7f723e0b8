"""The surrogate hypergraph of shp (pipeline/models/shp/surrogate.py)."""

import numpy as np
import pytest
from helpers.graphs import a_hat

from shgcn.pipeline.metrics.batches import expected_volume_node
from shgcn.pipeline.metrics.hypergraph import connectivity
from shgcn.pipeline.models.shp.surrogate import expected_surrogate


def test_surrogate_matches_the_exact_expectation_at_its_anchors():
    # a star: the leaves have one other row (the hub), the hub column has d = 12 leaves,
    # so its chord runs through c = 1 and c* = ceil(12 / 4) = 3
    n, batch = 13, 6
    a = a_hat(n, [(0, i) for i in range(1, n)])
    hg = expected_surrogate(a, batch, np.diff(a.indptr))

    def surrogate(part):
        return np.dot(hg.net_weights, connectivity(hg, part, 2) - 1) / 1000

    def exact(part):  # scaled by n/B: given its column in the batch
        return expected_volume_node(a, part, 2, batch)[0] * n / batch

    for c in (1, 3):  # c leaves in part 1 with their own columns; the hub and the rest in part 0
        part = np.array([0] + [1] * c + [0] * (n - 1 - c), np.int32)
        assert surrogate(part) == pytest.approx(exact(part), rel=2e-3)
    part = np.array([0] + [1] * 2 + [0] * 10, np.int32)  # c = 2: the chord lies below the concave f
    assert surrogate(part) < exact(part)
