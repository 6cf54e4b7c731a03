"""The tables of a PostgreSQL store beside the logs: artifacts, the request cache of ``generate_text``, and pages.

Their timestamps come from the database server's clock, as the conversations' do, so hosts with skewed clocks still
agree.
"""

from __future__ import annotations

from typing import Any

from .._artifact_names import artifact_uri
from .._ids import new_id
from ..errors import StoreError
from ._common import (
    check_artifact,
    check_page,
    check_slice,
    decode_cache_value,
    encode_json,
    missing_artifact,
    missing_conversation,
    missing_page,
)
from ._postgres_db import PostgresDatabase, postgres_text, utc
from ._sql_rows import PAGE_COLUMNS, page_from_row
from .base import PageInfo

__all__ = ["PostgresSideTables"]

_PAGE_COLUMNS = ", ".join(PAGE_COLUMNS)


class PostgresSideTables:
    """The `Store` methods of artifacts, the request cache and pages, for `PostgresStore` (mixed into it).

    Attributes:
        _db: The store's database (set by the store).
        url: The store's URL, for errors (set by the store).
    """

    _db: PostgresDatabase
    url: str

    # -- artifacts --------------------------------------------------------------------------------------------
    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        content = check_artifact(conversation_id, name, content)
        p = self._db.prefix
        with self._db.tx() as cursor:
            cursor.execute(
                f"INSERT INTO {p}artifacts (conversation_id, name, content, created_at) "
                f"SELECT id, %s, %s, now() FROM {p}conversations WHERE id = %s "
                "ON CONFLICT (conversation_id, name) DO UPDATE SET content = excluded.content, created_at = now()",
                (name, postgres_text(content), conversation_id),
            )
            if not cursor.rowcount:
                raise missing_conversation(conversation_id, self.url)
        return artifact_uri(conversation_id, name)

    def read_artifact(self, conversation_id: str, name: str, offset: int = 0, limit: int | None = None) -> str:
        check_slice(offset, limit)
        # substr counts characters and is 1-based; without a length it reads to the end.
        if limit is None:
            sql, args = "substr(content, %s)", [offset + 1]
        else:
            sql, args = "substr(content, %s, %s)", [offset + 1, limit]
        row = self._db.one(
            f"SELECT {sql} FROM {self._db.prefix}artifacts WHERE conversation_id = %s AND name = %s",
            (*args, conversation_id, name),
        )
        if row is None:
            raise missing_artifact(conversation_id, name)
        return str(row[0])

    # -- request cache ----------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> Any | None:
        data = self.cache_get_raw(key)
        return None if data is None else decode_cache_value(data, key)

    def cache_get_raw(self, key: str) -> bytes | None:
        row = self._db.one(f"SELECT value FROM {self._db.prefix}cache WHERE key = %s", (key,))
        return None if row is None else str(row[0]).encode()

    def cache_put(self, key: str, value: Any) -> None:
        data = encode_json(value, "cache value").decode()
        with self._db.tx() as cursor:
            cursor.execute(
                f"INSERT INTO {self._db.prefix}cache (key, value, created_at) VALUES (%s, %s, now()) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = now()",
                (key, data),
            )

    # -- pages ------------------------------------------------------------------------------------------------
    def save_page(
        self, title: str, html: str, css: str = "", js: str = "", *, conversation_id: str | None = None
    ) -> PageInfo:
        title, html, css, js = check_page(title, html, css, js)
        # The server stamps the page, as it stamps conversations: hosts with skewed clocks still agree.
        row = self._db.one(
            f"INSERT INTO {self._db.prefix}pages ({_PAGE_COLUMNS}) "
            f"VALUES (%s, %s, %s, %s, %s, %s, now()) RETURNING {_PAGE_COLUMNS}",
            (
                new_id(),
                conversation_id,
                postgres_text(title),
                postgres_text(html),
                postgres_text(css),
                postgres_text(js),
            ),
        )
        if row is None:  # pragma: no cover - INSERT ... RETURNING always returns the row
            raise StoreError(f"the page was not saved in {self.url}")
        return page_from_row(row, utc)

    def get_page(self, page_id: str) -> PageInfo:
        row = self._db.one(f"SELECT {_PAGE_COLUMNS} FROM {self._db.prefix}pages WHERE id = %s", (page_id,))
        if row is None:
            raise missing_page(page_id, self.url)
        return page_from_row(row, utc)

    def list_pages(self, conversation_id: str) -> list[PageInfo]:
        rows = self._db.all(
            f"SELECT {_PAGE_COLUMNS} FROM {self._db.prefix}pages WHERE conversation_id = %s ORDER BY created_at, id",
            (conversation_id,),
        )
        return [page_from_row(row, utc) for row in rows]
