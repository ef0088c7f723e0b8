"""The trainer's conformance classes, installed as :mod:`shgcn.testing` (architectures, exchanges,
algorithms, backends), re-exported here for the tests that import them from ``helpers``, with the trainer's
names some of those tests reach through this module."""

from shgcn.core.archs import ARCHS
from shgcn.testing.algorithms import AlgorithmTests, algorithm_cases
from shgcn.testing.archs import ArchitectureTests, fd_errors, hand_matrix, layer_case, one_rank_graph
from shgcn.testing.backends import BackendTests
from shgcn.testing.exchanges import ExchangeTests
from shgcn.testing.runs import ARCH_ARGS, check_run_bytes, run
from shgcn.trainer import archs
from shgcn.trainer.backends import Attention
from shgcn.trainer.exchanges import make
from shgcn.trainer.graph import Graph, RowOperators
from shgcn.trainer.plan import CommPlan, LocalMatrix

__all__ = ["ARCHS", "ARCH_ARGS", "AlgorithmTests", "ArchitectureTests", "Attention", "BackendTests", "CommPlan",
           "ExchangeTests", "Graph", "LocalMatrix", "RowOperators", "algorithm_cases", "archs", "check_run_bytes",
           "fd_errors", "hand_matrix", "layer_case", "make", "one_rank_graph", "run"]
