"""Parts declared outside the tree: one loader, at the bottom of the package graph.

A plugin is ``module:function`` (the function registers its parts with the
registries of :mod:`shgcn.parts`) or a module whose import registers them,
named by

- the ``SHGCN_PLUGINS`` environment variable (comma-separated; what every rank
  of an ``mpirun`` job and every Dask worker inherits), or
- an installed distribution's entry point in the group ``shgcn.plugins``.

Every :class:`~shgcn.core.registry.Registry` calls :func:`load_plugins` on its
first lookup, so a plugin's parts are choices wherever a name is read: the
trainer's command line, ``pipeline simulate``, ``pipeline build``, the run-log
reader, a Dask worker, an MPI rank, a user's script. A plugin that fails (any
exception, ``SystemExit`` and ``KeyboardInterrupt`` included) is one line,
a :class:`PluginError` naming it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os

from .errors import UserError


class PluginError(UserError):
    """A plugin that cannot be imported, whose registration fails or whose parts are malformed; exit code 2."""


ENV = "SHGCN_PLUGINS"
GROUP = "shgcn.plugins"
_LOADED: set[str] = set()
_FAILED: dict[str, PluginError] = {}  # a plugin that failed fails the same way at every later lookup
_LOADING: list[str] = []  # the plugin being loaded (a registry it looks up meanwhile does not load it again)


def one_line(text: object) -> str:
    """``text`` on one line (a message with newlines would print several)."""
    return " ".join(str(text).split())


def named() -> list[str]:
    """The plugins to load: the environment's, then the entry points' (each once, in that order)."""
    given = [p.strip() for p in os.environ.get(ENV, "").split(",") if p.strip()]
    points = [ep.value for ep in importlib.metadata.entry_points(group=GROUP)]
    return list(dict.fromkeys(given + points))


def loading() -> str | None:
    """The plugin being loaded now (its registrations are blamed on it), else None."""
    return _LOADING[-1] if _LOADING else None


def blame(problem: str) -> PluginError:
    """A :class:`PluginError` for ``problem``, naming the plugin being loaded (where one is)."""
    plugin = loading()
    where = f"plugin {plugin!r} ({ENV} or entry point group {GROUP}): " if plugin else ""
    return PluginError(one_line(where + problem))


def load_plugins() -> list[str]:
    """Import every plugin :func:`named` gives and call its function (once per process); the plugins
    loaded. A :class:`PluginError` naming the plugin and the problem."""
    if _LOADING:  # a registry looked up while a plugin registers: the plugins load once, not recursively
        return []
    done = []
    for plugin in named():
        if plugin in _FAILED:
            raise _FAILED[plugin]
        if plugin in _LOADED:
            continue
        module, _, func = plugin.partition(":")
        _LOADING.append(plugin)
        try:
            mod = importlib.import_module(module)
            if func:
                getattr(mod, func)()
        except PluginError as e:
            _FAILED[plugin] = e
            raise
        except BaseException as e:  # noqa: BLE001 - SystemExit and Ctrl-C in a user's plugin too: one line naming it
            what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            _FAILED[plugin] = blame(what)
            raise _FAILED[plugin] from None
        finally:
            _LOADING.pop()
        _LOADED.add(plugin)
        done.append(plugin)
    return done
