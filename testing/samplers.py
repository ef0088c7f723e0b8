"""What every mini-batch sampler must do: the conformance class each sampler's tests subclass (as
:class:`~shgcn.testing.partitioners.PartitionerTests` for the partition models)::

    class TestMySampler(SamplerTests):
        sampler = "mine"                   # its name in the registry (--sampler)

Its batches are sorted, distinct vertex ids of the graph; the same (seed, stream, batch) draws the same batch
in any process (so every rank and worker re-draws it from its number); its capabilities are consistent.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.core.sample import BUILD, SAMPLERS, TRAIN, Sampler, SamplerConfig


def ring_graph(n: int = 60) -> sp.csr_matrix:
    """A ring with chords: every vertex has neighbours, no self loops."""
    i = np.arange(n)
    rows = np.concatenate([i, i, i])
    cols = np.concatenate([(i + 1) % n, (i - 1) % n, (i + 7) % n])
    return sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(n, n))


class SamplerTests:
    """Subclass and set ``sampler``; ``size`` is the batch size the checks draw with."""

    sampler: str = ""
    size = 12

    def make(self, seed: int = 0) -> Sampler:
        return Sampler(ring_graph(), SamplerConfig(self.sampler, size=self.size, seed=seed))

    def test_registered_under_its_name_with_its_capabilities(self):
        spec = SAMPLERS[self.sampler]
        assert spec.name == self.sampler and spec.description and callable(spec.draw)
        assert not (spec.closed_form and spec.needs_graph), "a closed form here is the uniform vertices' one"
        for o in spec.options:
            assert o.flag.startswith("--") and o.help

    @pytest.mark.parametrize("stream", [BUILD, TRAIN])
    def test_batches_are_sorted_distinct_vertices(self, stream):
        s = self.make()
        for k in range(5):
            b = s.batch(k, stream)
            assert b.dtype == np.int64 and b.ndim == 1 and b.size >= 1
            assert np.all(np.diff(b) > 0) and b.min() >= 0 and b.max() < s.n

    def test_the_same_numbers_draw_the_same_batch(self):
        assert np.array_equal(self.make().batch(3, TRAIN), self.make().batch(3, TRAIN))
        draws = {tuple(self.make(seed).batch(k, TRAIN)) for seed in range(3) for k in range(3)}
        assert len(draws) > 1, "every seed and batch number drew one batch"

    def test_an_unknown_sampler_is_one_line_naming_the_known_ones(self):
        from shgcn.core.errors import UserError

        with pytest.raises(UserError, match=f"--sampler 'no-such-sampler': choose from .*{self.sampler}"):
            Sampler(ring_graph(), SamplerConfig("no-such-sampler", size=self.size))
