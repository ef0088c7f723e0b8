"""Parts declared outside the tree (core/plugins.py): the plugins the environment and the entry points
name, each loaded once, and a failing one a one-line PluginError naming it."""

import sys

import pytest

from shgcn.core import plugins


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    (tmp_path / "toy_plugin_mod.py").write_text("CALLS = []\n\ndef register():\n    CALLS.append(1)\n")
    (tmp_path / "toy_plugin_bad.py").write_text("def register():\n    raise ValueError('spec taken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_LOADED", set())
    monkeypatch.setattr(plugins, "_FAILED", {})
    yield tmp_path
    for m in ("toy_plugin_mod", "toy_plugin_bad"):
        sys.modules.pop(m, None)


def test_the_environments_plugins_load_once(plugin_dir, monkeypatch):
    monkeypatch.setenv(plugins.ENV, " toy_plugin_mod:register , toy_plugin_mod:register,")
    assert plugins.named()[:1] == ["toy_plugin_mod:register"]
    assert plugins.load_plugins() == ["toy_plugin_mod:register"] and plugins.load_plugins() == []
    assert sys.modules["toy_plugin_mod"].CALLS == [1]


def test_entry_points_are_plugins_too(plugin_dir, monkeypatch):
    class EP:
        value = "toy_plugin_mod:register"

    monkeypatch.delenv(plugins.ENV, raising=False)
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [EP()] if group == plugins.GROUP else [])
    assert plugins.named() == ["toy_plugin_mod:register"] and plugins.load_plugins() == ["toy_plugin_mod:register"]


@pytest.mark.parametrize("plugin,message", [
    ("toy_plugin_bad:register", "ValueError: spec taken"),
    ("toy_plugin_mod:nothing", "AttributeError: module 'toy_plugin_mod' has no attribute 'nothing'"),
    ("no_such_plugin_module", "ModuleNotFoundError: No module named 'no_such_plugin_module'")])
def test_a_failing_plugin_is_one_line_naming_it(plugin_dir, monkeypatch, plugin, message):
    monkeypatch.setenv(plugins.ENV, plugin)
    with pytest.raises(plugins.PluginError) as e:
        plugins.load_plugins()
    assert str(e.value) == f"plugin {plugin!r} (SHGCN_PLUGINS or entry point group shgcn.plugins): {message}"


# ---------------------------------------------------------------- hostile plugins (issue 63): one line, exit 2

HEAD = "from shgcn.core.archs import ARCHS, ArchSpec\nfrom shgcn.core.options import Option\n"
HOSTILE = {
    "sysexit": ("raise SystemExit(0)", "SystemExit: 0"),
    "ctrlc": ("raise KeyboardInterrupt", "KeyboardInterrupt"),
    "newline": ("raise ValueError('first\\nsecond')", "ValueError: first second"),
    "nodashes": ("ARCHS.register(ArchSpec('h1', 'x', options=(Option('width', 1, 'w', type=int),)))",
                 "--arch h1: option 'width': a flag is '--' and a name (--my-option)"),
    "badDefault": ("ARCHS.register(ArchSpec('h2', 'x', options=(Option('--h2-w', 0, 'w', type=int, low=1),)))",
                   "--arch h2: option '--h2-w': its own default is refused (--h2-w 0: must be >= 1)"),
    "twice": ("ARCHS.register(ArchSpec('h3', 'x', options=(Option('--hw', 1, 'w', type=int),)))\n"
              "ARCHS.register(ArchSpec('h4', 'x', options=(Option('--hw', 2, 'w', type=int),)))",
              "--arch h4: option '--hw': declared differently by --arch h3"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_plugin_is_one_line_naming_it(plugin_dir, monkeypatch, case):
    body, message = HOSTILE[case]
    (plugin_dir / f"hostile_{case}.py").write_text(HEAD + body + "\n")
    monkeypatch.setenv(plugins.ENV, f"hostile_{case}")
    from shgcn.core.archs import ARCHS

    try:
        with pytest.raises(plugins.PluginError) as e:
            ARCHS.names()
        assert str(e.value) == f"plugin 'hostile_{case}' (SHGCN_PLUGINS or entry point group shgcn.plugins): {message}"
        with pytest.raises(plugins.PluginError):  # every later lookup fails the same way, not half-loaded
            ARCHS.names()
    finally:
        for name in ("h1", "h2", "h3", "h4"):
            ARCHS.unregister(name)
        sys.modules.pop(f"hostile_{case}", None)
