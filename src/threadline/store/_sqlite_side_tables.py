"""The tables of a SQLite store beside the logs: artifacts, the request cache of ``generate_text``, and pages."""

from __future__ import annotations

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
    parse_ts,
    slice_text,
)
from ._sql_rows import PAGE_COLUMNS, page_from_row
from ._sqlite_db import SQLiteDatabase
from .base import PageInfo

__all__ = ["SQLiteSideTables"]

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
