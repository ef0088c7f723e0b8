"""glibc's mmap threshold fixed (core/malloc.py): freed arrays back to the system at once, or kept for the
next step's."""

import ctypes
import subprocess
import sys
import textwrap

import pytest

from shgcn.core import malloc


@pytest.mark.parametrize("call", ["return_freed_memory", "trim", "reuse_freed_memory"])
def test_without_glibc_nothing_changes(monkeypatch, call):
    def no_libc(*args, **kwargs):
        raise OSError("no such library")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert getattr(malloc, call)() is False


def _in_a_child(code: str) -> list[str]:
    """What ``code`` prints, run in a fresh interpreter (the allocator's settings are per process: the test's own
    keeps its allocator as it was), split into words."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_fresh_process_sets_the_threshold():
    # in a child: the setting is per process and lasts, and the test's own process keeps its allocator as it was
    code = ("from shgcn.core import malloc; import numpy as np; ok = malloc.return_freed_memory(); "
            "x = np.ones(1 << 22); del x; print(ok)")
    assert _in_a_child(code) == ["True"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_gives_the_free_pages_of_small_arrays_back():
    # in a child: 20,000 arrays of 64 KiB (below the threshold: from the heap), every other one freed; the
    # holes stay resident until trimmed
    code = ("from shgcn.core import malloc; import numpy as np\n"
            "malloc.return_freed_memory()\n"
            "def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
            "xs = [np.ones(8192) for _ in range(20000)]\n"
            "del xs[::2]\nbefore = rss()\nok = malloc.trim()\nprint(ok, before - rss())")
    ok, freed = _in_a_child(code)
    assert ok == "True" and int(freed) > 400 * 2**20  # most of the 625 MiB freed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_loop_reuses_its_temporaries_pages():
    # in a child, like the trainer: the setup's threshold (1 MiB), then the steps'. A 4 MiB temporary made and
    # freed 50 times faults its pages in each time with the first (a fault maps 4-16 KiB, by the kernel), once
    # with the second
    code = textwrap.dedent("""
        from shgcn.core import malloc; import numpy as np, resource
        def loop():  # the page faults of 50 rounds
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in range(50): x = np.ones(1 << 19); del x
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        malloc.return_freed_memory(); fresh = loop()
        ok = malloc.reuse_freed_memory(); print(ok, fresh, loop())
    """)
    ok, fresh, reused = _in_a_child(code)
    assert ok == "True" and int(fresh) >= 50 * 256 and int(reused) < int(fresh) / 10
