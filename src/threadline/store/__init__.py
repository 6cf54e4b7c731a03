"""Storage: `open_store(url)` gives a `Store` (SQLite by default, PostgreSQL for many hosts)."""

from __future__ import annotations

from .base import ConversationInfo, PageInfo, Store

__all__ = ["ConversationInfo", "PageInfo", "Store", "open_store"]


def open_store(url: str | None = None) -> Store:
    """Open a store by URL.

    ``None`` is the SQLite file ``threadline.db`` in ``THREADLINE_HOME`` (default: the platform's user data
    directory); ``sqlite:///path/to/file.db``; ``postgresql://…`` (needs the ``postgres`` extra).
    """
    raise NotImplementedError("storage backends land with issue 4")
