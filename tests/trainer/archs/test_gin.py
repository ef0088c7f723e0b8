"""gin (trainer/archs/gin.py) under the architecture conformance tests."""

from helpers.parts import ArchitectureTests


class TestGIN(ArchitectureTests):
    arch = "gin"
    quick = frozenset({"test_losses_do_not_depend_on_ranks[directed]",
                       "test_bytes_of_every_exchange_equal_the_prediction[4-directed]"})
