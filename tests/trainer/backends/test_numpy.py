"""The numpy backend (trainer/backends/numpy.py) under the backend conformance tests, with one thread and with
the parallel kernels (``--threads``)."""

from helpers.parts import BackendTests


class TestNumpyBackend(BackendTests):
    backend = "numpy"


class TestNumpyBackendThreads(BackendTests):
    backend = "numpy"
    threads = 3  # more than this machine's cores: the pool is capped, the chunks are still three
