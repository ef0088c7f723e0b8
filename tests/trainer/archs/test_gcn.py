"""gcn (trainer/archs/gcn.py) under the architecture conformance tests."""

from helpers.parts import ArchitectureTests


class TestGCN(ArchitectureTests):
    arch = "gcn"
    quick = frozenset({"test_bytes_of_every_exchange_equal_the_prediction[4-directed]"})
