"""Fixtures of the store tests (defined in `_backends` so the CLI tests can use them too)."""

from __future__ import annotations

from tests.store._backends import any_store, store, store_url

__all__ = ["any_store", "store", "store_url"]
