"""p2p (trainer/exchanges/p2p.py) under the exchange conformance tests."""

from helpers.parts import ExchangeTests


class TestP2P(ExchangeTests):
    exchange = "p2p"
    layouts = ((1, 1), (4, 2), (5, 2))
    quick = frozenset({"test_expand_and_fold_equal_the_dense_reference", "test_counters_equal_the_cost_model_by_path",
                       "test_a_rank_receives_what_the_others_send",
                       "test_training_gives_one_rank_losses_and_the_predicted_bytes[4-2-directed]"})
