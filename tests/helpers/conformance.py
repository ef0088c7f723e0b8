"""The partition models' conformance class, installed as :mod:`shgcn.testing.partitioners` (re-exported here
for the tests that import it from ``helpers``)."""

from shgcn.testing.partitioners import PartitionerTests, sbm_graph

__all__ = ["PartitionerTests", "sbm_graph"]
