"""The numpy backend (trainer/backends/numpy.py) under the backend conformance tests."""

from helpers.parts import BackendTests


class TestNumpyBackend(BackendTests):
    backend = "numpy"
