"""Test helpers shared by every test package: where the repository and the
shared datasets are, and how to run the ``pipeline`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SHGCN_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m shgcn.pipeline ARGS`` and capture its output."""
    return subprocess.run([sys.executable, "-m", "shgcn.pipeline", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def one_line(res, *fragments, code=2, prefix=None):
    """Exit ``code`` with one line on stderr naming every fragment, no traceback (the one helper of the tests
    for "one readable line, exit 2"). Log lines (INFO, WARNING) and argparse's usage block are not the error's
    lines; ``prefix``: how the line starts (``pipeline: error:``)."""
    assert res.returncode == code, (res.returncode, res.stderr[-2000:])
    lines = [x for x in res.stderr.splitlines() if x.strip() and " INFO: " not in x and " WARNING: " not in x
             and not x.startswith(("usage:", " "))]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert prefix is None or lines[0].startswith(prefix), (prefix, lines[0])
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def build_cli(*args, cwd=None, timeout=300):
    return run_cli("build", *args, cwd=cwd, timeout=timeout)


def run_main(*args) -> subprocess.CompletedProcess:
    """``pipeline ARGS`` as :func:`run_cli` runs it, but by calling ``shgcn.pipeline.cli.main`` in this process:
    for the refusals that come before any work (no interpreter, Dask and numba start per call). The exit code
    (``main``'s return or argparse's ``SystemExit``), stdout and stderr come back as a ``CompletedProcess``; the
    signal handler, logging and warning filters ``main`` sets are put back. A command that gets as far as
    starting a Dask cluster is a test error (use :func:`run_cli`). Keep one :func:`run_cli` case per command
    for the process's own exit path."""
    import contextlib
    import io
    import logging
    import signal
    import warnings
    from unittest import mock

    from shgcn.pipeline import cli

    def no_cluster(*a, **k):
        raise AssertionError(f"pipeline {' '.join(map(str, args))}: reached the Dask cluster; run it with run_cli")

    out, err = io.StringIO(), io.StringIO()
    term = signal.getsignal(signal.SIGTERM)
    root, named = logging.getLogger(), {n: logging.getLogger(n) for n in ("shgcn", *cli._LIBRARIES)}
    saved = (root.level, root.handlers[:], {n: lg.level for n, lg in named.items()})
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                mock.patch("shgcn.pipeline.runtime.client.dask_client", no_cluster):
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 0 if e.code is None else 2
    finally:
        signal.signal(signal.SIGTERM, term)
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        for n, level in saved[2].items():
            named[n].setLevel(level)
    return subprocess.CompletedProcess(["pipeline", *map(str, args)], code, out.getvalue(), err.getvalue())
