"""The backends' registry (trainer/backends/__init__.py): every entry passes BackendTests (its own test
file); here, that names make backends and the protocol's methods are all there, the devices each runs on,
and that an optional backend's library loads only when that backend is made."""

import importlib.util
import subprocess
import sys

import pytest

from shgcn.core.errors import UserError
from shgcn.trainer.backends import BACKENDS, SPECS, Backend, BackendError, backend, check_device, devices

# a backend whose optional library is not installed here is skipped (its own test file skips too)
OPTIONAL = {"torch": "torch"}


def test_every_backend_has_the_protocols_methods():
    wanted = {m for m in Backend.__dict__ if not m.startswith("_")} - {"name"}
    for name in BACKENDS:
        if name in OPTIONAL and importlib.util.find_spec(OPTIONAL[name]) is None:
            continue
        be = backend(name)
        assert be.name == name and wanted <= set(dir(be)), wanted - set(dir(be))
    with pytest.raises(KeyError):
        backend("abacus")


def test_devices_are_checked_by_name_before_any_library_loads():
    assert set(SPECS) == set(BACKENDS) and devices() == ("cpu", "cuda")
    check_device("torch", "cuda")
    with pytest.raises(BackendError, match="--device cuda: the numpy backend runs on cpu") as e:
        check_device("numpy", "cuda")
    assert isinstance(e.value, UserError)
    with pytest.raises(UserError, match="runs on nothing"):
        check_device("abacus", "cpu")


def test_a_missing_torch_is_a_user_error_naming_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(BackendError, match=r"needs PyTorch.*CPU build.*shgcn\[pyg\]"):
        backend("torch")


def test_importing_the_backends_loads_no_torch():
    code = ("import sys\nimport shgcn.trainer.backends, shgcn.trainer.config\n"
            "print('torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"


def test_a_backends_own_options_reach_its_maker(monkeypatch):
    """--torch-kernels and --torch-compile are the torch backend's declared options: its maker takes them by
    name, and another backend takes none."""
    got = {}
    part = BACKENDS["torch"]
    monkeypatch.setitem(BACKENDS.impls, "torch", lambda device, threads, **kw: got.update(kw) or "made")
    assert backend("torch", "cpu", 1, torch_kernels="torch", unrelated=1) == "made"
    assert got == {"torch_compile": "auto", "torch_kernels": "torch"}
    assert [o.flag for o in part.spec.options] == ["--torch-compile", "--torch-kernels"]
    assert BACKENDS["numpy"].own({"torch_kernels": "torch"}) == {}
