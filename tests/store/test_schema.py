"""What a store holds (store/_schema.py): plans, rank blocks, their arrays and data types."""

from dataclasses import fields

import numpy as np
import pytest

from shgcn.store._schema import (
    FEATURE_DTYPES,
    LABEL_KINDS,
    NODE_DTYPES,
    PLAN_DTYPES,
    SCHEMA_VERSION,
    Plan,
    RankBlock,
    StoreError,
    block_arrays,
    node_dtypes,
)


def plan(n_own=2) -> Plan:
    """Rank 1 of 3: sends its row 0 to rank 0 and rows 1, 0 to rank 2; receives 1 row from rank 0, 2 from rank 2."""
    return Plan(indptr=np.array([0, 2, 3][:n_own + 1], np.int64), indices=np.array([0, 2, 1], np.int32),
                data=np.ones(3, np.float32), send_ptr=np.array([0, 1, 1, 3], np.int64),
                send_rows=np.array([0, 1, 0], np.int32), recv_ptr=np.array([0, 1, 1, 3], np.int64),
                recv_ids=np.array([0, 5, 6], np.int64))


def block(transpose=None) -> RankBlock:
    return RankBlock(rank=1, offset=2, plan=plan(), features=np.zeros((2, 3), np.float32),
                     labels=np.array([1, -1], np.int32), train_mask=np.array([True, False]),
                     val_mask=np.array([False, True]), test_mask=np.array([False, False]),
                     node_index=np.array([7, 3], np.int64), transpose=transpose)


def test_a_plans_rows_and_volumes():
    p = plan()
    assert p.n_own == 2 and p.send_volume().tolist() == [1, 0, 2] and p.recv_volume().tolist() == [1, 0, 2]
    assert block().n_own == 2 and plan(n_own=1).n_own == 1


def test_the_arrays_of_a_block_in_checksum_order():
    b = block()
    arrays = block_arrays(b)
    assert list(arrays) == ["indptr", "indices", "data", "send_ptr", "send_rows", "recv_ptr", "recv_ids", "features",
                            "labels", "train_mask", "val_mask", "test_mask", "node_index"]
    assert arrays["recv_ids"] is b.plan.recv_ids and arrays["node_index"] is b.node_index  # views, not copies
    directed = block_arrays(block(transpose=plan()))
    assert list(directed)[13:] == [f"transpose/{f.name}" for f in fields(Plan)]


def test_data_types():
    assert SCHEMA_VERSION == 2
    assert list(PLAN_DTYPES) == [f.name for f in fields(Plan)]
    assert PLAN_DTYPES["indices"] == "<i4" and PLAN_DTYPES["recv_ids"] == "<i8"
    assert node_dtypes({}) == NODE_DTYPES
    assert node_dtypes({"feature_dtype": "float16"})["features"] == "<f2" == FEATURE_DTYPES["float16"]
    assert node_dtypes({"feature_dtype": "float64"})["features"] == "<f4"  # unknown: the default
    multi = node_dtypes({"label_kind": "multi"})
    assert multi["labels"] == "|b1" and NODE_DTYPES["labels"] == "<i4"  # a copy: the defaults stay
    assert LABEL_KINDS == ("single", "multi")


def test_the_error_is_re_exported():
    from shgcn.core.errors import UserError

    with pytest.raises(UserError):
        raise StoreError("bad")
