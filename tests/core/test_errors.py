"""The error every user-facing problem derives from (core/errors.py)."""

import pytest

from shgcn.core.errors import UserError


def test_a_user_error_exits_with_code_2():
    assert UserError.exit_code == 2
    assert UserError("bad option").exit_code == 2


def test_it_is_an_exception_with_its_message():
    with pytest.raises(Exception, match="^--parts 0: must be >= 1$") as e:
        raise UserError("--parts 0: must be >= 1")
    assert type(e.value) is UserError and str(e.value) == "--parts 0: must be >= 1"
    assert not issubclass(UserError, (ValueError, RuntimeError))  # not caught as a bug's error


def test_the_store_error_is_one():
    from shgcn.store.errors import StoreError

    assert issubclass(StoreError, UserError) and StoreError("x").exit_code == 2
