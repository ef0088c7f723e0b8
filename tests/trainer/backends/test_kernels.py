"""The numba kernels (trainer/backends/kernels.py): Philox4x32-10 against its published known-answer vector,
and the fused dropout kernels against a direct evaluation of the mask's definition."""

import numpy as np

from shgcn.trainer.backends import kernels


def test_philox_known_answer():
    """Random123's kat_vectors: philox4x32_10 with counter and key all ones (0xffffffff)."""
    ones = np.uint64(0xFFFFFFFF)
    out = kernels.philox(ones, ones, ones, ones, ones, ones)
    assert [int(w) for w in out] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def test_dense_dropout_is_the_eight_draws_of_one_philox_call():
    key = np.array([5, 0], np.uint64)
    ctr = np.array([3, 1], np.uint64)
    gids = np.array([7, 11], np.int64)
    h = np.ones((2, 8), np.float32)
    threshold = np.uint64(32768)
    out = kernels.dropout_dense(h, gids, key, ctr, threshold, 2.0, 0, np.empty_like(h), np.zeros((0, 0), np.uint8))
    for i, g in enumerate(gids):
        words = kernels.philox(np.uint64(0), np.uint64(g), ctr[0], ctr[1], key[0], key[1])
        draws = [(int(words[c >> 1]) >> (16 * (c & 1))) & 0xFFFF for c in range(8)]
        assert out[i].tolist() == [2.0 if d >= 32768 else 0.0 for d in draws]


def test_relu_gradient_kernel_in_place():
    g = np.ones((1, 3), np.float32)
    hd = np.array([[0.0, 2.0, -1.0]], np.float32)
    out = kernels.relu_dropout_grad(g, hd, 2.0)
    assert out is g and g.tolist() == [[0.0, 2.0, 0.0]]
