"""gat (trainer/archs/gat.py) under the architecture conformance tests."""

from helpers.parts import ArchitectureTests


class TestGAT(ArchitectureTests):
    arch = "gat"
    quick = frozenset({"test_losses_do_not_depend_on_ranks[directed]", "test_minibatch_losses_do_not_depend_on_ranks",
                       "test_bytes_of_every_exchange_equal_the_prediction[4-directed]",
                       "test_minibatch_bytes_of_every_exchange_equal_the_batch_volume[directed]"})
