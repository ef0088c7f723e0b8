"""shgcn.testing used from outside the tree (issue 47, item 6): a part written and registered in this file
alone, run through its conformance class; and what keeps a conformance subclass honest (its ``quick`` ids
are ids of its tests, an algorithm's cases name registered parts).

A toy reader, not a toy architecture or exchange: the readers' registry takes a part from outside (a
reader object under its name); the trainer's parts are wired by ``impl`` strings and their options by the
trainer's command line, which issue 47's item 1 turns into declared parts."""

import subprocess
import sys

import pytest

from shgcn.pipeline.sources import registry
from shgcn.pipeline.sources.base import Recognizes
from shgcn.pipeline.sources.text import TextReader
from shgcn.testing.algorithms import algorithm_cases
from shgcn.testing.archs import ArchitectureTests
from shgcn.testing.exchanges import ExchangeTests
from shgcn.testing.quick import case_ids, check_quick
from shgcn.testing.readers import ReaderTests

# ---------------------------------------------------------------- a reader written here, tested by subclassing

# ``.pairs``: one ``u v`` pair per line, parsed by the library's text reader (as edgelist, mtx and metis are)
PAIRS = TextReader("pairs", Recognizes(suffixes=(".pairs",)), empty="no pairs found")


class TestToyReader(ReaderTests):
    fmt = "pairs"
    edges = [(0, 1), (1, 2), (3, 0)]
    n, directed = None, None

    @pytest.fixture(autouse=True)
    def registered(self, monkeypatch):
        """The registry line, for this test only."""
        monkeypatch.setitem(registry.READERS, PAIRS.name, PAIRS)

    def write(self, tmp_path):
        path = tmp_path / "toy.pairs"
        path.write_text("0 1\n1 2\n3 0\n")
        return path

    def write_malformed(self, tmp_path):
        path = tmp_path / "bad.pairs"
        path.write_text("0 1\n1 y\n")
        return path, ":2: non-numeric token 'y'"


def test_the_toy_reader_is_gone_outside_its_tests():
    assert "pairs" not in registry.formats()


# ---------------------------------------------------------------- the quick ids

def collected(path: str, cls: str) -> set[str]:
    """The names of the tests of class ``cls`` pytest collects from ``path`` (every mark included)."""
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "--collect-only", "-q",
                          "-m", "", path], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return {line.split("::")[-1] for line in res.stdout.splitlines() if f"::{cls}::" in line}


@pytest.mark.parametrize("path,cls", [("trainer/archs/test_gat.py", "TestGAT"),
                                      ("trainer/exchanges/test_node.py", "TestNode")])
def test_the_ids_a_quick_set_is_checked_against_are_the_ones_pytest_collects(path, cls):
    import importlib.util

    from helpers import REPO

    spec = importlib.util.spec_from_file_location(f"conformance_{cls}", REPO / "tests" / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    klass = getattr(module, cls)
    assert case_ids(klass) == collected(str(REPO / "tests" / path), cls) and klass.quick <= case_ids(klass)


def test_a_quick_id_that_names_no_test_is_an_error():
    with pytest.raises(ValueError, match=r"TestTypo.quick names no test of the class: "
                                         r"test_losses_do_not_depend_on_ranks\[undirectd\]"):
        class TestTypo(ArchitectureTests):
            arch = "gcn"
            quick = frozenset({"test_losses_do_not_depend_on_ranks[undirected]",
                               "test_losses_do_not_depend_on_ranks[undirectd]"})

    class TestRight(ExchangeTests):
        exchange = "p2p"
        quick = frozenset({"test_training_gives_one_rank_losses_and_the_predicted_bytes[4-2-directed]"})

    check_quick(TestRight)  # no error


def test_an_algorithm_case_is_checked_against_the_registries():
    good = (2, "p2p", "auto", "gcn", "directed")
    params = algorithm_cases([good, (4, "node", "auto", "gat", "undirected")], {good})
    assert [p.marks for p in params] == [(), (pytest.mark.slow,)] and params[0].id == "2-p2p-auto-gcn-directed"
    for bad, fragment in [((2, "p2q", "auto", "gcn", "directed"), "no exchange 'p2q'"),
                          ((2, "p2p", "auto", "gcm", "directed"), "no architecture 'gcm'"),
                          ((2, "p2p", "sum", "gcn", "directed"), "no row combine 'sum'"),
                          ((2, "p2p", "auto", "gcn", "direct"), "no graph 'direct'")]:
        with pytest.raises(ValueError, match=fragment):
            algorithm_cases([good, bad], set())
    with pytest.raises(ValueError, match="not among the cases"):
        algorithm_cases([good], {(2, "p2p", "auto", "gcn", "undirected")})


def test_the_algorithms_quick_cases_reach_the_quick_suite():
    """AlgorithmTests' cases carry their own marks: the quick hook must leave them (its ``quick`` None), or
    every case, quick or not, would be marked slow."""
    from shgcn.testing.algorithms import AlgorithmTests

    assert AlgorithmTests.quick is None
