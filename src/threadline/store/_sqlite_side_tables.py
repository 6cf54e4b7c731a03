"""The tables of a SQLite store beside the logs: artifacts, the request cache of ``generate_text``, and pages; and what
a conversation's deletion removes from them (`delete_side_rows`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from .._artifact_names import artifact_uri
from ._common import (
    check_artifact,
    check_slice,
    decode_cache_value,
    encode_json,
    format_ts,
    missing_artifact,
    missing_conversation,
    missing_page,
    new_page,
    now,
    own_cache_keys,
    page_heirs,
    parse_ts,
    slice_text,
)
from ._sql_rows import PAGE_COLUMNS, page_from_row
from ._sqlite_db import SQLiteDatabase
from .base import PageInfo, conversation_cache_prefix

__all__ = ["SQLiteSideTables", "delete_side_rows", "share_pages"]

_PAGE_COLUMNS = ", ".join(PAGE_COLUMNS)


class SQLiteSideTables:
    """The `Store` methods of artifacts, the request cache and pages, for `SQLiteStore` (mixed into it).

    Attributes:
        _db: The store's database (set by the store).
        url: The store's URL, for errors (set by the store).
    """

    _db: SQLiteDatabase
    url: str

    # -- artifacts --------------------------------------------------------------------------------------------
    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        content = check_artifact(conversation_id, name, content)
        with self._db.write() as conn:
            if conn.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone() is None:
                raise missing_conversation(conversation_id, self.url)
            conn.execute(
                "INSERT OR REPLACE INTO artifacts (conversation_id, name, content, created_at) VALUES (?, ?, ?, ?)",
                (conversation_id, name, content, format_ts(now())),
            )
        return artifact_uri(conversation_id, name)

    def read_artifact(self, conversation_id: str, name: str, offset: int = 0, limit: int | None = None) -> str:
        check_slice(offset, limit)
        # Sliced in Python: SQLite's substr() stops at a NUL character, and tool output may hold one.
        row = self._db.one(
            "SELECT content FROM artifacts WHERE conversation_id = ? AND name = ?", (conversation_id, name)
        )
        if row is None:
            raise missing_artifact(conversation_id, name)
        return slice_text(str(row[0]), offset, limit)

    # -- request cache ----------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> Any | None:
        data = self.cache_get_raw(key)
        return None if data is None else decode_cache_value(data, key)

    def cache_get_raw(self, key: str) -> bytes | None:
        row = self._db.one("SELECT value FROM cache WHERE key = ?", (key,))
        if row is None:
            return None
        value = row[0]
        # cache_put writes a BLOB; a row written by hand may be TEXT (or a number), which is still its JSON text.
        return value if isinstance(value, bytes) else str(value).encode()

    def cache_put(self, key: str, value: Any) -> None:
        data = encode_json(value, "cache value")
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO cache (key, value, created_at) VALUES (?, ?, ?)", (key, data, format_ts(now()))
            )

    # -- pages ------------------------------------------------------------------------------------------------
    def save_page(
        self, title: str, html: str, css: str = "", js: str = "", *, conversation_id: str | None = None
    ) -> PageInfo:
        page = new_page(title, html, css, js, conversation_id)
        with self._db.write() as conn:
            conn.execute(
                f"INSERT INTO pages ({_PAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (page.id, conversation_id, page.title, page.html, page.css, page.js, format_ts(page.created_at)),
            )
        return page

    def get_page(self, page_id: str) -> PageInfo:
        row = self._db.one(f"SELECT {_PAGE_COLUMNS} FROM pages WHERE id = ?", (page_id,))
        if row is None:
            raise missing_page(page_id, self.url)
        return page_from_row(row, parse_ts)

    def list_pages(self, conversation_id: str) -> list[PageInfo]:
        rows = self._db.all(
            f"SELECT {_PAGE_COLUMNS} FROM pages WHERE conversation_id = ? ORDER BY created_at, id", (conversation_id,)
        )
        return [page_from_row(row, parse_ts) for row in rows]


def _prefix_range(prefix: str) -> tuple[str, str]:
    """The bounds ``[low, high)`` of the text that starts with ``prefix`` (SQLite compares text by its UTF-8 bytes,
    whose order is that of code points), so a lookup by prefix uses the primary key's index."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def share_pages(conn: sqlite3.Connection, conversation_id: str, page_ids: Sequence[str]) -> None:
    """Record that a fork's log shows these pages (those that exist and are not its own), inside its write
    transaction: they stay while it does (see `delete_side_rows`)."""
    if page_ids:
        conn.execute(
            "INSERT OR IGNORE INTO page_shares (conversation_id, page_id) SELECT ?1, id FROM pages "
            "WHERE id IN (SELECT value FROM json_each(?2)) AND conversation_id IS NOT ?1",
            (conversation_id, json.dumps(list(page_ids))),
        )


def delete_side_rows(conn: sqlite3.Connection, conversation_id: str) -> None:
    """Delete what a conversation left beside its log (inside the write transaction that deletes it): its artifacts,
    its cached summaries, its shares of other conversations' pages, and its pages, except those a fork shares,
    which pass to the oldest such fork."""
    conn.execute("DELETE FROM artifacts WHERE conversation_id = ?", (conversation_id,))
    low, high = _prefix_range(conversation_cache_prefix(conversation_id))
    keys = [r[0] for r in conn.execute("SELECT key FROM cache WHERE key >= ? AND key < ?", (low, high))]
    if keys:
        low, high = _prefix_range(f"{conversation_id}:")
        others = [r[0] for r in conn.execute("SELECT id FROM conversations WHERE id >= ? AND id < ?", (low, high))]
        conn.executemany(
            "DELETE FROM cache WHERE key = ?", [(key,) for key in own_cache_keys(conversation_id, keys, others)]
        )
    conn.execute("DELETE FROM page_shares WHERE conversation_id = ?", (conversation_id,))
    shares = conn.execute(
        "SELECT s.page_id, s.conversation_id FROM page_shares AS s JOIN pages AS g ON g.id = s.page_id "
        "JOIN conversations AS c ON c.id = s.conversation_id WHERE g.conversation_id = ? ORDER BY c.created_at, c.id",
        (conversation_id,),
    ).fetchall()
    heirs = list(page_heirs(shares).items())
    conn.executemany("UPDATE pages SET conversation_id = ?2 WHERE id = ?1", heirs)
    conn.executemany("DELETE FROM page_shares WHERE page_id = ?1 AND conversation_id = ?2", heirs)
    conn.execute("DELETE FROM pages WHERE conversation_id = ?", (conversation_id,))
