import numpy as np

from shgcn.pipeline.models.rp import random_partition
from shgcn.testing.partitioners import PartitionerTests


class TestRandom(PartitionerTests):
    model = "rp"


def test_rows_dealt_evenly_and_seeded():
    p1 = random_partition(1500, 7, seed=5)
    counts = np.bincount(p1, minlength=7)
    assert counts.max() - counts.min() <= 1
    assert np.array_equal(p1, random_partition(1500, 7, seed=5))
    assert not np.array_equal(p1, random_partition(1500, 7, seed=6))
