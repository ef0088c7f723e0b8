"""The torch backend's kernels as torch operations (trainer/backends/torchkernels.py): Philox in 64-bit integer
tensors against the numba kernels' bits, compiled against eager, the losses and GAT's attention against
direct formulas."""

import numpy as np
import pytest

from shgcn.trainer.backends import Noise

torch = pytest.importorskip("torch")


def test_philox_is_the_reference_generator():
    """Philox4x32-10 of counter 0 under key 0 and of the all-ones counter and key (Salmon et al.'s known
    answers, as in Random123's kat_vectors)."""
    from shgcn.trainer.backends import torchkernels as tk

    z = torch.zeros((), dtype=torch.int64)
    assert [int(w) for w in tk.philox(z, z, z, z, z, z)] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    f = torch.full((), 0xFFFFFFFF, dtype=torch.int64)
    assert [int(w) for w in tk.philox(f, f, f, f, f, f)] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def test_losses_against_formulas():
    from shgcn.trainer.backends import torchkernels as tk

    rng = np.random.default_rng(1)
    z = torch.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
    y = torch.tensor([0, 3, 1, 2, 0])
    idx = torch.tensor([0, 2, 3])
    w = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
    loss, g, correct = tk.softmax_xent(z, y, idx, w, 0.25)
    logp = torch.log_softmax(z.double(), 1)[idx, y[idx]]
    assert torch.isclose(loss, -(w * logp).sum()) and int(correct) == int((z[idx].argmax(1) == y[idx]).sum())
    want = torch.zeros(5, 4)
    want[idx] = ((torch.softmax(z[idx], 1) - torch.nn.functional.one_hot(y[idx], 4)) * (w[:, None] * 0.25)).float()
    assert torch.allclose(g, want, atol=1e-7) and g[1].abs().sum() == 0
    yb = torch.from_numpy(rng.integers(0, 2, (5, 4)).astype(np.float64))
    loss, g = tk.sigmoid_bce(z, yb, idx, w, 0.25)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(z[idx].double(), yb[idx], reduction="none").sum(1)
    assert torch.isclose(loss, (bce * w).sum())


def test_sparse_mask_equals_the_dense_masks_entries():
    from shgcn.trainer.backends import torchkernels as tk

    gids = torch.tensor([5, 1 << 34, 9], dtype=torch.int64)
    key, ctr = torch.tensor([3, 4]), torch.tensor([7, 1])
    dense = tk.dense_mask(gids, 20, key, ctr, 30000, 2.0)
    rows, cols = torch.tensor([0, 0, 1, 2, 2]), torch.tensor([0, 19, 8, 3, 17])
    got = tk.sparse_mask(rows, cols, gids, key, ctr, threshold=30000, scale=2.0)
    assert torch.equal(got, dense[rows, cols])


@pytest.mark.parametrize("shape", [(1, 1), (9, 8), (300, 19), (64, 200)])
@pytest.mark.parametrize("layer", [0, 1, 5])
def test_masks_drawn_by_torch_equal_the_numba_kernels_bits(shape, layer):
    """Philox in torch's int64 operations (trainer/backends/torchkernels.py) against the numba kernel: the
    same dropout bits for several shapes, row orders (shuffled ids, ids past 2**32) and layers."""
    from shgcn.trainer.backends import kernels
    from shgcn.trainer.backends import torchkernels as tk

    rng = np.random.default_rng([shape[0], shape[1], layer])
    gids = rng.permutation(shape[0]).astype(np.int64) * 11 + (np.int64(1) << 33) * rng.integers(0, 3, shape[0])
    noise = Noise(0.37, seed=2**40 + 9, epoch=3 + layer)
    want = np.ones(shape, np.float32)
    kernels.dropout_dense(want, gids, noise.key(), noise.ctr(layer, kernels.NODE), np.uint64(noise.threshold(0.37)),
                          noise.scale(0.37), 0, want, np.zeros((0, 0), np.uint8))
    key = torch.tensor(noise.key().astype(np.int64))
    ctr = torch.tensor(noise.ctr(layer, kernels.NODE).astype(np.int64))
    got = tk.dense_mask(torch.from_numpy(gids), shape[1], key, ctr, noise.threshold(0.37), noise.scale(0.37))
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.slow
def test_compiled_kernels_give_the_eager_bits():
    """torch.compile of the mask kernels (what a GPU runs by default; here the CPU's C++ code) gives the eager
    kernels' bits: the dropout of every row, and GAT's attention masks. Compiling takes tens of seconds."""
    from shgcn.trainer.backends import torchkernels as tk

    rng = np.random.default_rng(12)
    gids = torch.from_numpy(rng.permutation(700).astype(np.int64) * 5 + (1 << 33))
    noise = Noise(0.3, seed=77, epoch=4)
    key, ctr = torch.tensor(noise.key().astype(np.int64)), torch.tensor(noise.ctr(1, tk.NODE).astype(np.int64))
    h = torch.from_numpy(rng.standard_normal((700, 45)).astype(np.float32))
    cpu = torch.device("cpu")
    for width in (45, 8):
        words = tk.dense_words(gids, (width + 7) // 8, key, ctr)
        fast = tk.compiled(tk.dense_words, cpu)(gids, (width + 7) // 8, key, ctr)
        assert tk.compile_mode(cpu, "on")  # it compiled (a broken compiler would fall back to eager)
        for a, b in zip(words, fast):
            assert torch.equal(a, b)
        want = tk.dropout_words(h[:, :width], words, noise.threshold(0.3), noise.scale(0.3), 1, True)
        got = tk.compiled(tk.dropout_words, cpu)(h[:, :width], fast, noise.threshold(0.3), noise.scale(0.3), 1, True)
        assert torch.equal(want[0], got[0]) and torch.equal(want[1], got[1])
    gi, gj = gids[:300], gids[300:600]
    want = tk.mask_of_words(tk.edge_words(gi, gj, 1, key, ctr), 3, noise.threshold(0.3), noise.scale(0.3))
    got = tk.compiled(tk.mask_of_words, cpu)(tk.compiled(tk.edge_words, cpu)(gi, gj, 1, key, ctr), 3,
                                             noise.threshold(0.3), noise.scale(0.3))
    assert torch.equal(want, got)
