"""The rows' type on the wire (``--exchange-dtype``): float32, or 16 bits
(bfloat16, float16) to halve the bytes; computation stays float32.

bfloat16 is the upper half of a float32, rounded to nearest even (numpy
uint views); float16 is numpy's (IEEE half, round to nearest even). Both
travel as uint16 buffers, so MPI needs no 16-bit float type.
"""

from __future__ import annotations

import numpy as np

DTYPES = ("float32", "bfloat16", "float16")


def _bf16(x: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounding = ((u >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)  # ties to even
    return ((u + rounding) >> np.uint32(16)).astype(np.uint16)


class Wire:
    """Encode rows for sending and decode received ones.

    Attributes: name, itemsize (bytes per value), dtype (of the buffers).
    """

    def __init__(self, name: str = "float32"):
        if name not in DTYPES:
            raise ValueError(f"unknown exchange dtype {name!r}")
        self.name = name
        self.dtype = np.dtype(np.float32 if name == "float32" else np.uint16)
        self.itemsize = self.dtype.itemsize

    def encode(self, x: np.ndarray) -> np.ndarray:
        """A contiguous buffer of ``x`` (float32 rows) in the wire type."""
        if self.name == "float32":
            return np.ascontiguousarray(x, dtype=np.float32)
        if self.name == "float16":
            return np.ascontiguousarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)
        return _bf16(x)

    def decode(self, buf: np.ndarray) -> np.ndarray:
        """float32 rows from a received buffer."""
        if self.name == "float32":
            return buf
        if self.name == "float16":
            return buf.view(np.float16).astype(np.float32)
        return (buf.astype(np.uint32) << np.uint32(16)).view(np.float32)

    def empty(self, shape) -> np.ndarray:
        return np.empty(shape, self.dtype)
