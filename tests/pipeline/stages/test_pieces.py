"""A rank's rows made local (own columns first, then the halo's, each row
sorted), its send and receive lists, and the .npy files the spilled
patterns are saved in: by hand."""

import numpy as np

from shgcn.pipeline.stages import pieces


def test_rows_become_local_own_columns_then_the_halo_each_row_sorted():
    # rank 3..5 (new ids); rows: [7, 3] and [5, 0, 4]; halo [0, 7]
    rows = pieces.Rows(np.array([0, 2, 5]), np.array([7, 3, 5, 0, 4], np.int32),
                       np.array([1, 2, 3, 4, 5], np.float32))
    m = pieces.local_rows(rows, 3, 6, np.array([0, 7], np.int32))
    assert m.shape == (2, 5)  # 3 own columns and 2 received
    assert m.indptr.tolist() == [0, 2, 5]
    assert m.indices.tolist() == [0, 4, 1, 2, 3]  # 3 -> 0, 7 -> 3 + 1; 4 -> 1, 5 -> 2, 0 -> 3 + 0
    assert m.data.tolist() == [2, 1, 5, 3, 4]


def test_exchange_lists_are_the_senders_groups():
    offsets = np.array([0, 3, 6, 9])
    got = pieces.exchange_lists(np.array([0, 2, 7], np.int32), (np.array([0, 1, 1, 2]), np.array([1, 0])), offsets)
    assert got["recv_ptr"].tolist() == [0, 2, 2, 3] and got["recv_ids"].dtype == np.int64
    assert got["send_ptr"].tolist() == [0, 1, 1, 2] and got["send_rows"].dtype == np.int32


def test_saved_arrays_come_back_mapped(tmp_path):
    parts = [np.arange(3, dtype=np.int32), np.arange(3, 5, dtype=np.int32)]
    meta = pieces.save_npy(str(tmp_path / "x.npy"), parts)
    back = pieces.map_npy(str(tmp_path / "x.npy"), meta)
    assert back.tolist() == [0, 1, 2, 3, 4] and np.load(tmp_path / "x.npy").tolist() == [0, 1, 2, 3, 4]
    assert pieces.map_npy("nowhere", ("<i4", (0, 2), 0)).shape == (0, 2)  # an empty array is made, not mapped
