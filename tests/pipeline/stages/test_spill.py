"""A's patterns to disk while a partitioner's child runs (pipeline/stages/spill.py): the same arrays, memory-mapped."""

import numpy as np

from shgcn.pipeline.blocks import RowBlock
from shgcn.pipeline.stages.spill import forget_pattern, forget_transpose, spill_block, spill_patterns


def test_a_spilled_block_is_the_same_block_memory_mapped(tmp_path):
    b = RowBlock(3, 6, 9, np.array([0, 2, 2, 5], np.int64), np.array([1, 8, 0, 4, 7], np.int32))
    s = spill_block(b, str(tmp_path / "a.0"))
    assert isinstance(s.indptr, np.memmap) and isinstance(s.indices, np.memmap) and s.data is None
    assert (s.lo, s.hi, s.n) == (3, 6, 9)
    assert s.indptr.tobytes() == b.indptr.tobytes() and s.indices.dtype == np.int32
    assert s.indices.tobytes() == b.indices.tobytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.0.indices.npy", "a.0.indptr.npy"]


def test_spill_patterns_replaces_every_pattern_block(fig2_directed, tmp_path):
    s = fig2_directed
    ing, nrm = spill_patterns(s.tasks, s.ing, s.nrm, str(tmp_path))
    for new, old in ((ing.a, s.ing.a), (ing.at, s.ing.at), (nrm.patterns()[0], s.ing.a), (nrm.patterns()[1], s.ing.at)):
        got, want = s.tasks.gather(list(new)), s.tasks.gather(list(old))
        assert all(isinstance(g.indices, np.memmap) for g in got)
        assert [(g.lo, g.indptr.tobytes(), g.indices.tobytes()) for g in got] == \
            [(w.lo, w.indptr.tobytes(), w.indices.tobytes()) for w in want]
    assert nrm.degrees() == s.nrm.degrees() and ing.node_recipe is s.ing.node_recipe


def test_forgotten_pattern_files_are_gone_and_their_mapped_blocks_still_read(tmp_path):
    # the write (A's) and the layout (A^T's) are the last readers: the files go, the mappings stay until let go
    where = tmp_path / "patterns"
    where.mkdir()
    b = RowBlock(0, 2, 4, np.array([0, 1, 3], np.int64), np.array([3, 0, 2], np.int32))
    a, at = spill_block(b, str(where / "a.0")), spill_block(b, str(where / "at.0"))
    forget_pattern(str(tmp_path))
    assert sorted(p.name for p in where.iterdir()) == ["at.0.indices.npy", "at.0.indptr.npy"]
    assert a.indices.tolist() == [3, 0, 2] and a.indptr.tolist() == [0, 1, 3]
    forget_transpose(str(tmp_path))
    assert list(where.iterdir()) == [] and at.indices.tolist() == [3, 0, 2]
    forget_pattern(str(tmp_path / "none"))  # no patterns spilled: nothing to do
