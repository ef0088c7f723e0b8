"""The exchanges' registry of specs (core/exchanges/__init__.py): one baseline exchange, the one every
prediction is compared with (``vs_bcast``)."""

from shgcn.core.exchanges import EXCHANGES, baseline_exchange


def test_the_baseline_is_the_one_spec_that_says_so():
    assert [name for name, x in EXCHANGES.items() if x.baseline] == [baseline_exchange()]
    assert not EXCHANGES[baseline_exchange()].sparsity_aware  # CAGNET's sparsity-oblivious 1D
