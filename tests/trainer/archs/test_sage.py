"""sage (trainer/archs/sage.py) under the architecture conformance tests."""

from helpers.parts import ArchitectureTests


class TestSAGE(ArchitectureTests):
    arch = "sage"
    quick = frozenset({"test_losses_do_not_depend_on_ranks[undirected]",
                       "test_bytes_of_every_exchange_equal_the_prediction[4-directed]",
                       "test_bytes_of_every_exchange_equal_the_prediction[4-undirected]",
                       "test_minibatch_bytes_of_every_exchange_equal_the_batch_volume[undirected]"})
