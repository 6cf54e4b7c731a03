"""Fixtures of the generate_text tests: stores on SQLite and a real PostgreSQL (own schema per test)."""

from __future__ import annotations

from tests.store._backends import any_store, store, store_url

__all__ = ["any_store", "store", "store_url"]
