"""The package shgcn.core (core/__init__.py): its submodules load on first use, and ``dir()`` lists them."""

import subprocess
import sys
import tomllib

import pytest
from helpers import REPO

import shgcn.core

SUBMODULES = ["algorithms", "archs", "collectives", "contention", "costs", "csr", "epoch", "errors", "exchanges",
              "fluid", "machine", "machine_check", "machine_spec", "malloc", "memory", "options", "partition", "plugins",
              "profile", "registry", "runlog", "sample", "tables", "thread_scaling", "work"]


def test_all_names_every_submodule_and_only_those():
    on_disk = sorted(p.stem if p.suffix == ".py" else p.name for p in (REPO / "core").iterdir()
                     if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file())
    assert sorted(shgcn.core.__all__) == SUBMODULES == on_disk


def test_dir_lists_every_submodule():
    assert set(SUBMODULES) <= set(dir(shgcn.core))
    assert dir(shgcn.core) == sorted(dir(shgcn.core))


def test_a_submodule_loads_on_first_use():
    code = ("import sys\nimport shgcn.core as c\nbefore = 'shgcn.core.epoch' in sys.modules\n"
            "m = c.epoch\nprint(before, 'shgcn.core.epoch' in sys.modules, m.__name__, c.errors.UserError.exit_code)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "True", "shgcn.core.epoch", "2"]


def test_the_attribute_is_the_module():
    import shgcn.core.machine

    assert shgcn.core.machine is sys.modules["shgcn.core.machine"]
    assert shgcn.core.algorithms.ALGORITHMS.names() == ("1d", "1.5d", "2d")


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'shgcn.core' has no attribute 'nope'"):
        shgcn.core.nope  # noqa: B018
    assert not hasattr(shgcn.core, "store")


def test_every_subpackage_of_core_is_in_the_wheel():
    """pyproject lists packages one by one (package-dir maps the folders): a subpackage left out is missing from the
    wheel, and ``shgcn.core.epoch`` (which imports ``.algorithms``) fails to import from it."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(("shgcn", *p.parent.relative_to(REPO).parts)) for p in (REPO / "core").rglob("__init__.py")}
    assert folders == {"shgcn.core", "shgcn.core.algorithms", "shgcn.core.exchanges"}
    assert folders <= listed
