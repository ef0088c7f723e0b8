"""Mt-KaHyPar in this process (pipeline/models/kahypar.py): connectivity-1 on a hand-built hypergraph, the same
partition for a seed, a start improved by V-cycles, presets checked."""

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.metrics.hypergraph import Hypergraph
from shgcn.pipeline.models.kahypar import PRESETS, kahypar_partition


def two_groups() -> Hypergraph:
    """Vertices 0-3 and 4-7, each group joined by heavy nets, one light net between them."""
    nets = [[0, 1, 2, 3], [0, 1], [2, 3], [4, 5, 6, 7], [4, 5], [6, 7], [3, 4]]
    ptr = np.cumsum([0] + [len(p) for p in nets]).astype(np.int64)
    return Hypergraph(8, ptr, np.concatenate(nets).astype(np.int64), np.ones(8, np.int64),
                      np.array([5, 5, 5, 5, 5, 5, 1], np.int64), np.arange(len(nets), dtype=np.int64))


def km1(hg: Hypergraph, part: np.ndarray) -> int:
    return sum(int(hg.net_weights[j]) * (np.unique(part[hg.pins[hg.net_ptr[j]:hg.net_ptr[j + 1]]]).size - 1)
               for j in range(hg.n_nets))


def test_the_cheapest_cut_is_found_and_is_reproducible():
    hg = two_groups()
    part = kahypar_partition(hg, 2, 0.0, seed=3, threads=1)
    assert part.dtype == np.int32 and km1(hg, part) == 1  # only the light net is cut
    assert len(set(part[:4])) == 1 and len(set(part[4:])) == 1 and part[0] != part[4]
    assert np.array_equal(part, kahypar_partition(hg, 2, 0.0, seed=3, threads=1))


def test_a_start_is_improved_never_worsened():
    hg = two_groups()
    start = np.array([0, 1, 0, 1, 0, 1, 0, 1], np.int32)  # every heavy net cut
    better = kahypar_partition(hg, 2, 0.0, 1, threads=1, initial=start, vcycles=1)
    assert km1(hg, better) < km1(hg, start)


def test_an_unknown_preset_is_a_user_error():
    assert PRESETS[0] == "deterministic"
    with pytest.raises(UserError, match=r"^--hp-preset 'fast': choose one of deterministic, default"):
        kahypar_partition(two_groups(), 2, 0.03, 0, preset="fast")


@pytest.mark.timeout(120)
def test_in_a_child_with_a_deadline_the_same_partition_or_none():
    """kahypar_within: the partition of this process (deterministic preset, same seed) when it finishes in
    time, None when the deadline has passed (the child is stopped; nothing is returned half done)."""
    import time

    from shgcn.pipeline.models.kahypar import kahypar_within

    hg = two_groups()
    start = np.array([0, 1, 0, 1, 0, 1, 0, 1], np.int32)
    here = kahypar_partition(hg, 2, 0.0, 1, threads=1, initial=start, vcycles=1)
    there = kahypar_within(hg, 2, 0.0, 1, threads=1, initial=start, vcycles=1, deadline=time.monotonic() + 100)
    assert there is not None and there.dtype == np.int32 and np.array_equal(there, here)
    assert np.array_equal(kahypar_within(hg, 2, 0.0, 3, threads=1), kahypar_partition(hg, 2, 0.0, seed=3, threads=1))
    assert kahypar_within(hg, 2, 0.0, 1, threads=1, initial=start, deadline=time.monotonic()) is None


def test_the_library_is_initialized_once_whatever_the_threads(monkeypatch):
    """The place stage places every model in the worker's threads at once: each asked for the library, and two
    set it up ("[WARNING] Mt-KaHyPar is already initialized" in the build's log). A slow set-up widens the race."""
    import threading
    import time

    import mtkahypar

    from shgcn.pipeline.models import kahypar

    calls = []

    def initialize(threads):
        calls.append(threads)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(kahypar, "_INIT", [])
    monkeypatch.setattr(mtkahypar, "initialize", initialize)
    start = threading.Barrier(4)
    got = []

    def ask():
        start.wait(timeout=10)
        got.append(kahypar._kahypar(1))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert calls == [1] and len(got) == 4 and all(g is got[0] for g in got)


def test_a_build_process_placing_several_models_at_once_says_nothing(tmp_path):
    """The real library, four placements in threads of one process (as the place stage's worker runs them):
    no warning on either stream."""
    import subprocess
    import sys

    code = """
import threading
import numpy as np
from shgcn.pipeline.placement import _kahypar_nodes
ptr, pins, weights = np.array([0, 2, 4, 6]), np.array([0, 1, 1, 2, 2, 3]), np.array([5, 1, 5])
out = []
def place():
    out.append(_kahypar_nodes(ptr, pins, weights, 4, 2, 0).tolist())
ts = [threading.Thread(target=place) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print(out)
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "" and res.stdout.strip() == str([[0, 0, 1, 1]] * 4)
