"""The backends' registry (trainer/backends/__init__.py): every entry passes BackendTests (its own test
file); here, that names make backends and the protocol's methods are all there."""

import pytest

from shgcn.trainer.backends import BACKENDS, Backend, backend


def test_every_backend_has_the_protocols_methods():
    wanted = {m for m in Backend.__dict__ if not m.startswith("_")} - {"name"}
    for name in BACKENDS:
        be = backend(name)
        assert be.name == name and wanted <= set(dir(be)), wanted - set(dir(be))
    with pytest.raises(KeyError):
        backend("abacus")
