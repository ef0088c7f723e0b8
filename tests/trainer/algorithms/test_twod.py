"""2D SUMMA (trainer/algorithms/twod.py) under the algorithm conformance tests: on 1 x 1 and 2 x 2 grids,
the architectures that aggregate by a product: one rank's losses and exactly the predicted bytes by kind."""

import pytest
from helpers.parts import AlgorithmTests, algorithm_cases

from shgcn.core.archs import ARCHS

CASES = [(s, "p2p", "auto", a, k) for s in (1, 2) for a in ARCHS if ARCHS[a].by_product
         for k in ("undirected", "directed")]
QUICK = {(2, "p2p", "auto", "sage", "directed")}


class TestTwoD(AlgorithmTests):
    algorithm = "2d"

    def parts(self, c):
        return c

    def ranks(self, c):
        return c * c

    @pytest.fixture(params=algorithm_cases(CASES, QUICK))
    def case(self, request):
        return request.param
