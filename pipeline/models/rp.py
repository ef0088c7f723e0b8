"""``rp``: random rows, row counts balanced. The baseline every quality table
is normalized to (the paper's Table 2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Assignment, Inputs, Model, PartitionConfig


def random_partition(n: int, parts: int, seed: int) -> np.ndarray:
    """(n,) int32: rows dealt uniformly at random; row counts differ by at most one."""
    order = np.random.default_rng([seed, 0x52]).permutation(n)
    part = np.empty(n, np.int32)
    part[order] = np.arange(n) % parts
    return part


@dataclass(frozen=True)
class Random(Model):
    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        return Assignment(random_partition(inputs.n, cfg.parts, cfg.seed))


MODEL = Random("rp", "random, row counts balanced: the baseline every table is normalized to", needs=frozenset(),
               balance="rows")
