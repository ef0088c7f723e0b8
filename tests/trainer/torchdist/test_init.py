"""The package's lazy names (trainer/torchdist/__init__.py): importing it loads no torch; every public name
resolves; an unknown one is an AttributeError."""

import subprocess
import sys

import pytest

from shgcn.trainer import torchdist


def test_importing_the_package_loads_no_torch():
    code = "import sys, shgcn.trainer.torchdist; print('torch' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "False", res.stderr


def test_every_name_resolves():
    pytest.importorskip("torch_geometric")
    assert sorted(torchdist.__all__) == dir(torchdist)
    for name in torchdist.__all__:
        assert getattr(torchdist, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Halos'"):
        torchdist.Halos  # noqa: B018
