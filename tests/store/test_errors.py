"""The store's error (store/errors.py): a UserError, exit code 2."""

import pytest

from shgcn.core.errors import UserError
from shgcn.store import errors


def test_a_store_error_is_a_user_error():
    assert issubclass(errors.StoreError, UserError) and errors.UserError is UserError
    e = errors.StoreError("x.zarr: store not found")
    assert e.exit_code == 2 and str(e) == "x.zarr: store not found"
    with pytest.raises(UserError, match="^x.zarr: store not found$"):
        raise e
    assert errors.__all__ == ["StoreError", "UserError"]


def test_every_module_raises_the_same_class():
    from shgcn.store import StoreError, _schema

    assert StoreError is errors.StoreError is _schema.StoreError
