"""Which MPI cases of a conformance class run in the quick suite: a subclass's ``quick`` names them
(``test_name[params]``), and its other MPI cases are marked slow (:func:`pytest_collection_modifyitems`:
import it into your conftest.py). A name in ``quick`` that none of the class's tests has is an error when the
class is defined (:func:`check_quick`), not a case silently dropped."""

from __future__ import annotations

import inspect

import pytest


def _param_ids(mark) -> list[str]:
    """The ids pytest gives the values of one ``parametrize`` mark (its own ids, a ``pytest.param``'s id, or
    the values as text joined by ``-``)."""
    names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
    given = mark.kwargs.get("ids")
    out = []
    for i, value in enumerate(mark.args[1]):
        if given is not None and not callable(given):
            out.append(str(list(given)[i]))
            continue
        if hasattr(value, "id") and hasattr(value, "values"):  # pytest.param(...)
            if value.id is not None:
                out.append(value.id)
                continue
            value = value.values if len(names) > 1 else value.values[0]
        values = value if len(names) > 1 else (value,)
        out.append("-".join(str(v) if isinstance(v, (str, int, float, bool)) else f"{n}{i}"
                            for n, v in zip(names, values)))
    return out


def case_ids(cls) -> set[str]:
    """Every id the ``test_*`` methods of ``cls`` collect as, from their ``parametrize`` marks (a method with
    none: its bare name); fixture params (``@pytest.fixture(params=...)``) are not expanded."""
    out = set()
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("test"):
            continue
        ids = [""]
        for mark in getattr(fn, "pytestmark", []):  # the decorator nearest the function first: pytest's order
            if mark.name == "parametrize":
                ids = [f"{a}-{b}" if a else b for a in ids for b in _param_ids(mark)]
        out |= {f"{name}[{i}]" if i else name for i in ids}
    return out


def check_quick(cls) -> None:
    """``cls.quick``: every name one of the class's tests collects as; ValueError naming the others."""
    quick = getattr(cls, "quick", None)
    if not quick:
        return
    known = case_ids(cls)
    unknown = sorted(set(quick) - known)
    if unknown:
        raise ValueError(f"{cls.__name__}.quick names no test of the class: {', '.join(unknown)} "
                         f"(its MPI cases: {', '.join(sorted(known))})")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A conformance subclass names the MPI cases of the quick suite (``quick``: ``test_name[params]``); its
    other MPI cases are slow, or skipped when the class says ``quick_only`` (a part whose MPI runs would repeat
    another's: the toy parts that show a part written outside the tree). Runs before the marks select. A class
    whose ``quick`` is None (the algorithms: their cases carry their own marks,
    :func:`shgcn.testing.algorithms.algorithm_cases`) is left alone."""
    for item in items:
        quick = getattr(item.cls, "quick", None)
        if quick is None or item.get_closest_marker("mpi") is None:
            continue
        if item.name not in quick:
            item.add_marker(pytest.mark.skip(reason=f"{item.cls.__name__}.quick_only: its quick cases run")
                            if getattr(item.cls, "quick_only", False) else pytest.mark.slow)
