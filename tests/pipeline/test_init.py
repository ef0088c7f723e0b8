"""The package (pipeline/__init__.py): its lazy attributes, listed by dir() before they load. The rules of
its shape (no import circle, no function over 6 positional parameters, a test file per module) hold for
every package: tests/test_structure.py."""

import subprocess
import sys

import pytest
from helpers import REPO

PIPELINE = REPO / "pipeline"
PACKAGE = "shgcn.pipeline"


def test_dir_lists_the_lazy_names_before_they_load():
    code = ("import sys, shgcn.pipeline as pl\nnames = dir(pl)\n"
            "print(all(n in names for n in ('build', 'BuildConfig', 'BuildResult', 'model_names', '__version__')),"
            " 'shgcn.pipeline.api' in sys.modules, 'dask' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.split() == ["True", "False", "False"], res.stderr


def test_lazy_names_load_their_module_and_others_are_attribute_errors():
    import shgcn.pipeline as pl
    from shgcn.pipeline.config import BuildConfig

    assert pl.BuildConfig is BuildConfig and pl.model_names()[:4] == ("rp", "gp", "hp", "shp")
    with pytest.raises(AttributeError, match="module 'shgcn.pipeline' has no attribute 'nope'"):
        pl.nope  # noqa: B018
