"""Parts declared outside the tree, loaded before ``shgcn-train`` reads its
command line, so their names and their own options are choices and flags like
the built-in parts' (``--help`` lists them).

A plugin is ``module:function`` (the function registers its parts: for
example ``ARCHS.register(spec, Layers)`` of :mod:`shgcn.trainer.archs`) or a
module whose import registers them, named by

- the ``SHGCN_PLUGINS`` environment variable (comma-separated; what every rank
  of an ``mpirun`` job inherits), or
- an installed distribution's entry point in the group ``shgcn.plugins``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os

from shgcn.core.errors import UserError

ENV = "SHGCN_PLUGINS"
GROUP = "shgcn.plugins"
_LOADED: set[str] = set()


class PluginError(UserError):
    """A plugin that cannot be imported or whose registration fails; exit code 2."""


def named() -> list[str]:
    """The plugins to load: the environment's, then the entry points' (each once, in that order)."""
    given = [p.strip() for p in os.environ.get(ENV, "").split(",") if p.strip()]
    points = [ep.value for ep in importlib.metadata.entry_points(group=GROUP)]
    return list(dict.fromkeys(given + points))


def load_plugins() -> list[str]:
    """Import every plugin :func:`named` gives and call its function (once per process); the plugins
    loaded. A :class:`PluginError` naming the plugin and the problem."""
    done = []
    for plugin in named():
        if plugin in _LOADED:
            continue
        module, _, func = plugin.partition(":")
        try:
            mod = importlib.import_module(module)
            if func:
                getattr(mod, func)()
        except Exception as e:  # noqa: BLE001 - any failure of a user's plugin is one line naming it
            raise PluginError(f"plugin {plugin!r} ({ENV} or entry point group {GROUP}): "
                              f"{type(e).__name__}: {e}") from None
        _LOADED.add(plugin)
        done.append(plugin)
    return done
