"""The readers' conformance class, installed as :mod:`shgcn.testing.readers` (re-exported here for the tests
that import it from ``helpers``; the ``client`` fixture is the suite's own, tests/conftest.py)."""

from shgcn.testing.readers import ReaderTests, pairs

__all__ = ["ReaderTests", "pairs"]
