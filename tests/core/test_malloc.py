"""glibc's mmap threshold fixed (core/malloc.py): freed arrays back to the system at once."""

import ctypes
import subprocess
import sys

import pytest

from shgcn.core import malloc


@pytest.mark.parametrize("call", ["return_freed_memory", "trim"])
def test_without_glibc_nothing_changes(monkeypatch, call):
    def no_libc(*args, **kwargs):
        raise OSError("no such library")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert getattr(malloc, call)() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_fresh_process_sets_the_threshold():
    # in a child: the setting is per process and lasts, and the test's own process keeps its allocator as it was
    code = ("from shgcn.core import malloc; import numpy as np; ok = malloc.return_freed_memory(); "
            "x = np.ones(1 << 22); del x; print(ok)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_gives_the_free_pages_of_small_arrays_back():
    # in a child: 20,000 arrays of 64 KiB (below the threshold: from the heap), every other one freed; the
    # holes stay resident until trimmed
    code = ("from shgcn.core import malloc; import numpy as np\n"
            "malloc.return_freed_memory()\n"
            "def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
            "xs = [np.ones(8192) for _ in range(20000)]\n"
            "del xs[::2]\nbefore = rss()\nok = malloc.trim()\nprint(ok, before - rss())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    ok, freed = out.stdout.split()
    assert ok == "True" and int(freed) > 400 * 2**20  # most of the 625 MiB freed
