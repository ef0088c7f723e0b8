"""alltoallv (trainer/exchanges/alltoallv.py) under the exchange conformance tests."""

from helpers.parts import ExchangeTests


class TestAllToAllV(ExchangeTests):
    exchange = "alltoallv"
    layouts = ((1, 1), (4, 2), (5, 2))
    quick = frozenset({"test_expand_and_fold_equal_the_dense_reference", "test_counters_equal_the_cost_model_by_path",
                       "test_a_rank_receives_what_the_others_send"})
