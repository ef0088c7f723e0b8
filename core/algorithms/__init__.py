"""The distributed algorithms the trainer offers (``shgcn-train --algorithm``),
each with its grid, exact bytes, modelled time and memory.

A new algorithm is its cost module here (an :class:`AlgorithmCost`), its
module in ``trainer/algorithms/`` (how a rank connects: its products and its
finished context) paired with its spec (the cost class's instance, a
constant listed in :data:`ALGORITHMS`: its name is written in its class
only), and its test class subclassing
:class:`shgcn.testing.algorithms.AlgorithmTests`.
"""

from __future__ import annotations

from ..registry import Registry
from .base import AlgorithmCost, Call
from .grid import GridShape, assign_pairs, block_nnz, chunk_bounds, chunk_of, local_index, row_supports, slice_bounds
from .oned import OneD
from .onehalfd import COMBINES, OneHalfD
from .twod import TwoD

# the built-in algorithms' specs: the trainer pairs its algorithms with these
ONED_COST, ONEHALFD_COST, TWOD_COST = OneD(), OneHalfD(), TwoD()
ALGORITHMS: Registry[AlgorithmCost] = Registry.of("--algorithm", ONED_COST, ONEHALFD_COST, TWOD_COST)

__all__ = ["ALGORITHMS", "COMBINES", "ONED_COST", "ONEHALFD_COST", "TWOD_COST", "AlgorithmCost", "Call", "GridShape",
           "assign_pairs", "block_nnz", "chunk_bounds", "chunk_of", "local_index", "row_supports", "slice_bounds"]
