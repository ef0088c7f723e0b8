"""Shared fixtures: the shared datasets directory (tests that need it skip when it is absent), the stores the
tests read, helpers. The Dask client (one in-process cluster for the session) is shgcn.testing's plugin's."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from helpers import SHARED

# the quick suite's MPI cases of a conformance class (its ``quick``), the stores its MPI tests train on and the
# Dask client: shgcn.testing's pytest plugin (shgcn.testing.plugin, entry point pytest11)


class LongestFirst:
    """The longest tests first (a stable sort, the collection order otherwise): those with a timeout of 900 s or
    more (the longest timeout first), then the other ``slow`` tests, then the rest. pytest-xdist hands the
    first tests out round-robin, so the long ones start at once on separate workers instead of ending the run
    on one worker (CI's wall time)."""

    @pytest.hookimpl(trylast=True)  # after the quick suite's marks (shgcn.testing.quick)
    def pytest_collection_modifyitems(self, config, items):
        def rank(item) -> tuple[int, float]:
            timeout = item.get_closest_marker("timeout")
            if timeout is not None and timeout.args and timeout.args[0] >= 900:
                return 0, -timeout.args[0]
            return (1 if item.get_closest_marker("slow") is not None else 2), 0

        items.sort(key=rank)


def pytest_configure(config):
    """A test run started in the background of a non-interactive shell (``cmd &``) inherits SIGINT and
    SIGQUIT ignored, and so would every process the tests start: the tests that press Ctrl-C on a build or a
    training run would then see it ignored. Restore the defaults (a child inherits only SIG_IGN)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) is signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    config.pluginmanager.register(LongestFirst(), "shgcn-longest-first")
    if not config.pluginmanager.has_plugin("shgcn"):  # an install from before its pytest11 entry point, or a
        config.pluginmanager.import_plugin("shgcn.testing.plugin")  # stale shgcn.egg-info first on the path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED / "README.md").exists():
        pytest.skip(f"shared datasets not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def built(tmp_path_factory, client):
    """A small store (rp, gp, hp; 3 parts) that tests read and copy, never change."""
    from helpers.stores import make_in

    return make_in(tmp_path_factory.mktemp("store"), client)


@pytest.fixture
def copy(built, tmp_path):
    """A copy of the built store that a test may change (tmp_path/c.zarr)."""
    import shutil

    dst = tmp_path / "c.zarr"
    shutil.copytree(built.path, dst)
    return dst


@pytest.fixture(autouse=True)
def _numba_threads():
    """numba's pool size kept in step with NUMBA_NUM_THREADS across tests. Tests that set the variable (the CLIs'
    thread settings, in process) and compile a kernel meanwhile leave numba's config at their value; a pool
    launched later takes it, and any kernel compiled after the variable is restored then fails ("Cannot set
    NUMBA_NUM_THREADS to a different value once the threads have been launched"). So: after each test numba
    re-reads the restored variable while no pool runs yet; and once a pool runs, each test sees the variable
    at the pool's size."""
    import os
    import sys

    before = os.environ.get("NUMBA_NUM_THREADS")
    numba = sys.modules.get("numba")
    if numba is not None:
        from numba.np.ufunc import parallel

        if parallel._is_initialized:
            os.environ["NUMBA_NUM_THREADS"] = str(numba.config.NUMBA_NUM_THREADS)
    yield
    if before is None:
        os.environ.pop("NUMBA_NUM_THREADS", None)
    else:
        os.environ["NUMBA_NUM_THREADS"] = before
    numba = sys.modules.get("numba")
    if numba is not None:
        from numba.np.ufunc import parallel

        if not parallel._is_initialized:
            try:
                numba.core.config.reload_config()
            except RuntimeError:  # pragma: no cover - a pool started meanwhile: the next test pins the variable
                pass


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A real single-node Slurm (munged, slurmctld, slurmd: helpers.slurm) for the session's Slurm tests, stopped
    after them; skips in one line where it cannot run (not root, Debian's slurm-wlm and munge absent)."""
    from helpers.slurm import missing, start_slurm

    why = missing()
    if why:
        pytest.skip(why)
    s = start_slurm(tmp_path_factory.mktemp("slurm", numbered=True))
    try:
        yield s
    finally:
        s.stop()
