"""Sizes on the command line and the modelled bytes of a rank (core/memory.py), by hand."""

import os
import subprocess
import sys

import numpy as np
import pytest

from shgcn.core.costs import Job
from shgcn.core.memory import BYTES_PER_NONZERO, Held, gib, machine_memory, model_bytes, parse_size, rank_bytes


@pytest.mark.parametrize("text, nbytes", [("8G", 8 * 2**30), ("512M", 512 * 2**20), ("1.5T", 3 * 2**39),
                                          ("24GiB", 24 * 2**30), ("100", 100), ("2kb", 2048), (" 1e3 ", 1000),
                                          ("2p", 2**51), ("1.5k", 1536), ("7B", 7)])
def test_parse_size_in_binary_units(text, nbytes):
    assert parse_size(text) == nbytes and type(parse_size(text)) is int


@pytest.mark.parametrize("text", ["8X", "", "G", "-1G", "1..5G", "8 GB extra", "0", "0.5", "0G"])
def test_parse_size_refuses_anything_else(text):
    with pytest.raises(ValueError, match="expected a size|at least one byte"):
        parse_size(text)


def test_gib():
    assert gib(1.5 * 2**30) == "1.5 GiB"
    assert gib(320 * 2**20) == "320.0 MiB"
    assert gib(3.6 * 2**40) == "3.6 TiB"
    assert gib(2**10) == "1.0 KiB" and gib(1023) == "1023 bytes" and gib(0) == "0 bytes"
    assert gib(2**60) == "1,024.0 PiB"


def test_machine_memory_is_at_most_the_physical_memory():
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < machine_memory() <= physical


def test_rank_bytes_of_a_gcn_by_hand():
    """10 rows, 30 nonzeros, 5 received rows, GCN [8, 4, 2] (both layers multiply first: widest exchange 4)."""
    held = Held(rows=10, nnz=30, halo=5)
    # matrix 16 x 30 = 480; 16 x 10 = 160; features 4 x 10 x 8 = 320;
    # activations 8 x 10 x ((4 + 4) + (0 + 2)) + 4 x 10 x 8 = 800 + 320; halo 4 x 5 x 4 = 80
    assert BYTES_PER_NONZERO == 16
    assert rank_bytes(held, Job((8, 4, 2))) == 480 + 160 + 320 + 1120 + 80
    assert rank_bytes(Held(10, 30, 5, buffer_nnz=7), Job((8, 4, 2))) == 2160 + 8 * 7
    # the architecture's spec decides, not its name: sage keeps what gcn keeps
    assert rank_bytes(held, Job((8, 4, 2), arch="sage")) == 2160


def test_rank_bytes_of_a_gat_by_hand():
    """GAT, heads [2, 1]: layer inputs 8 and 2 x 4 = 8 wide, outputs 8 and 2; Z travels 8 wide."""
    held = Held(rows=10, nnz=30, halo=5)
    # 480 + 160 + 320; activations 8 x 10 x ((8 + 8) + (0 + 2)) + 320 = 1760; halo 4 x 5 x 8 = 160;
    # attention 8 B x 30 nonzeros x (2 + 1) heads = 720
    assert rank_bytes(held, Job((8, 4, 2), arch="gat", heads=(2, 1))) == 480 + 160 + 320 + 1760 + 160 + 720


def test_rank_bytes_per_rank():
    out = rank_bytes(Held(rows=np.array([10, 0]), nnz=np.array([30, 0]), halo=np.array([5, 0])), Job((8, 4, 2)))
    assert out.tolist() == [2160, 0]


def test_model_bytes_by_hand():
    # GCN [8, 4, 2]: 8 x 4 + 4 x 2 = 40 weights, 16 B each (weight, gradient, Adam's two moments)
    assert model_bytes(Job((8, 4, 2))) == 640
    # GAT heads [2, 1]: inputs 8 and 2 x 4 = 8, outputs 2 x 4 = 8 and 2: 64 + 16 weights
    assert model_bytes(Job((8, 4, 2), arch="gat", heads=(2, 1))) == 16 * 80


def test_peak_resident_grows_with_what_a_fresh_process_touches():
    code = ("import numpy as np; from shgcn.core.memory import peak_resident; a = peak_resident(); "
            "x = np.ones(200 * 2**20 // 8); print(a, peak_resident())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    before, after = map(int, out.stdout.split())
    assert 200 * 2**20 <= after - before < 260 * 2**20  # the 200 MiB block, every page written; and not more
