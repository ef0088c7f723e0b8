"""What every backend shares (trainer/backends/base.py): the dropout masks' keys and quantized rates."""

import numpy as np

from shgcn.trainer.backends import Noise


def test_noise_quantizes_the_rate_and_scales_exactly():
    n = Noise(0.5, seed=2**40 + 3, epoch=7)
    assert n.threshold(0.5) == 32768 and n.scale(0.5) == 2.0 and n.threshold(0.0) == 0 and n.threshold(1.0) == 65535
    assert n.key().tolist() == [3, 256] and n.ctr(2, 1).tolist() == [7, 2 | (1 << 8)]
    assert Noise(0.1, 0, 0).scale(0.1) == 65536 / (65536 - 6554)
    assert np.isclose(1 - Noise(0.1, 0, 0).threshold(0.1) / 65536, 0.9, atol=1e-4)
