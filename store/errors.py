"""The store's error: a missing, incomplete or corrupt store, or one that
does not fit the request. It is a :class:`shgcn.core.errors.UserError`
(exit code 2), defined at the bottom of the package graph."""

from __future__ import annotations

from shgcn.core.errors import UserError

__all__ = ["StoreError", "UserError"]


class StoreError(UserError):
    """The store is missing, incomplete, corrupt, or does not fit the request."""
