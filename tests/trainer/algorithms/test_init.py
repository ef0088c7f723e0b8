"""The algorithms' registry in the trainer (trainer/algorithms/__init__.py): each spec of
shgcn.core.algorithms.ALGORITHMS joined to its connect function, and connect dispatching by the run's option."""

from types import SimpleNamespace

from shgcn.core.algorithms import ALGORITHMS as SPECS
from shgcn.trainer import algorithms
from shgcn.trainer.algorithms import ALGORITHMS, oned, onehalfd, twod


def test_every_algorithm_is_joined_to_its_connect():
    assert [ALGORITHMS[n].impl for n in SPECS] == [oned.connect, onehalfd.connect, twod.connect]
    assert all(ALGORITHMS[n].spec is SPECS[n] for n in SPECS)


def test_connect_hands_the_rank_to_the_chosen_algorithm(monkeypatch):
    seen = []
    monkeypatch.setitem(ALGORITHMS.impls, "2d", lambda local, comm: seen.append((local, comm)) or "ctx")
    local = SimpleNamespace(cfg=SimpleNamespace(algorithm="2d"))
    assert algorithms.connect(local, "comm") == "ctx" and seen == [(local, "comm")]
