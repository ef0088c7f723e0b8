"""shgcn.testing used from outside the tree (issue 47, item 6): a part written and registered in this file
alone, run through its conformance class; and what keeps a conformance subclass honest (its ``quick`` ids
are ids of its tests, an algorithm's cases name registered parts).

A toy reader, a toy architecture with an option of its own and a toy exchange, each declared in this file
alone (one registry call each: :meth:`shgcn.trainer.parts.Parts.register` for the trainer's parts), run
through their conformance classes; the trainer's subprocesses load them as a user's plugin
(``SHGCN_PLUGINS=test_testing:register_toys``), so ``shgcn-train --help`` lists the architecture and its flag."""

import os
import subprocess
import sys

import pytest

from shgcn.core.archs import ArchSpec
from shgcn.core.exchanges.flat import P2P as P2PCost
from shgcn.core.options import Option
from shgcn.pipeline.sources import registry
from shgcn.pipeline.sources.base import Recognizes
from shgcn.pipeline.sources.text import TextReader
from shgcn.testing.algorithms import algorithm_cases
from shgcn.testing.archs import ArchitectureTests
from shgcn.testing.exchanges import ExchangeTests
from shgcn.testing.quick import case_ids, check_quick
from shgcn.testing.readers import ReaderTests
from shgcn.trainer import archs
from shgcn.trainer import exchanges as trainer_exchanges
from shgcn.trainer.archs.gcn import GCN
from shgcn.trainer.backends import backend
from shgcn.trainer.exchanges.p2p import P2P

# ---------------------------------------------------------------- a reader written here, tested by subclassing

# ``.pairs``: one ``u v`` pair per line, parsed by the library's text reader (as edgelist, mtx and metis are)
PAIRS = TextReader("pairs", Recognizes(suffixes=(".pairs",)), empty="no pairs found")


class TestToyReader(ReaderTests):
    fmt = "pairs"
    edges = [(0, 1), (1, 2), (3, 0)]
    n, directed = None, None

    @pytest.fixture(autouse=True)
    def registered(self):
        """The registry line, for this test only."""
        registry.READERS.register(PAIRS)
        yield
        registry.READERS.unregister(PAIRS.name)

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


# ---------------------------------------------------------------- an architecture and an exchange written here

SCALE = Option("--toy-scale", 1.0, "toygcn: the logits times this", type=float, low=0.0)
TOY_ARCH = ArchSpec("toygcn", "GCN with its logits scaled (a toy declared in tests/test_testing.py)",
                    options=(SCALE,))


class ToyGCN(GCN):
    """GCN whose logits are scaled by its own option ``--toy-scale`` (it reaches the constructor by name)."""

    spec = TOY_ARCH

    def __init__(self, dims, seed, backend, *, toy_scale=1.0):
        super().__init__(dims, seed, backend)
        self.scale = float(toy_scale)

    def forward(self, x, graph, noise):
        z, cache = super().forward(x, graph, noise)
        return z * self.scale, cache

    def backward(self, saved, g, graph):
        return super().backward(saved, g * self.scale, graph)


class ToyCost(P2PCost):
    """p2p's messages and time, under a name of its own."""

    name = "toy-p2p"
    description = "p2p again (a toy declared in tests/test_testing.py)"


class ToyP2P(P2P):
    name = ToyCost.name  # its spec's: a part's name is written once


def register_toys() -> None:
    """The registry lines of the toy parts (what a user's plugin function does); once per process."""
    if TOY_ARCH.name not in archs.ARCHS:
        archs.ARCHS.register(TOY_ARCH, ToyGCN)
    if ToyCost.name not in trainer_exchanges.EXCHANGES:
        trainer_exchanges.EXCHANGES.register(ToyCost(), ToyP2P)


@pytest.fixture(scope="class")
def toys():
    """The toy parts registered here and, through the plugin variable, in every trainer subprocess; both
    gone when the class's tests end."""
    from helpers import REPO

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHGCN_PLUGINS", "test_testing:register_toys")
        mp.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
        register_toys()
        try:
            yield
        finally:
            archs.ARCHS.unregister(TOY_ARCH.name)
            trainer_exchanges.EXCHANGES.unregister(ToyCost.name)


@pytest.mark.usefixtures("toys")
class TestToyArchitecture(ArchitectureTests):
    arch = "toygcn"
    quick = frozenset({"test_losses_do_not_depend_on_ranks[undirected]"})
    quick_only = True  # its other MPI runs would repeat gcn's (CI's time)

    @property
    def args(self) -> list[str]:
        return ["--arch", self.arch, "--toy-scale", "2"]

    def test_its_option_reaches_its_constructor_and_the_help(self):
        from helpers import REPO

        model = archs.build("toygcn", [4, 3, 2], 0, backend(), {"toy_scale": 3.0})
        assert model.scale == 3.0
        res = subprocess.run([sys.executable, str(REPO / "trainer" / "train.py"), "--help"], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert "--toy-scale" in res.stdout and "toygcn" in res.stdout and "toy-p2p" in res.stdout


@pytest.mark.usefixtures("toys")
class TestToyExchange(ExchangeTests):
    exchange = "toy-p2p"
    layouts = ((1, 1), (4, 2))
    quick = frozenset({"test_expand_and_fold_equal_the_dense_reference", "test_counters_equal_the_cost_model_by_path"})
    quick_only = True  # its other MPI runs would repeat p2p's (CI's time)


def test_the_toy_parts_are_gone_outside_their_tests():
    assert "toygcn" not in archs.ARCHS and "toy-p2p" not in trainer_exchanges.EXCHANGES


def test_a_plugin_that_fails_is_one_line_and_exit_2(tmp_path):
    from helpers import REPO

    env = {**os.environ, "SHGCN_PLUGINS": "no_such_module_here:register"}
    res = subprocess.run([sys.executable, str(REPO / "trainer" / "train.py"), "--help"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "shgcn-train: error: plugin 'no_such_module_here:register' (SHGCN_PLUGINS or entry point group "
        "shgcn.plugins): ModuleNotFoundError: No module named 'no_such_module_here'"]


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
