"""The tables of a PostgreSQL store beside the logs: artifacts, the request cache of ``generate_text``, and pages; and
what a conversation's deletion removes from them (`PostgresSideTables._delete_side_rows`).

Their timestamps come from the database server's clock, as the conversations' do, so hosts with skewed clocks still
agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

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
    own_cache_keys,
    page_heirs,
)
from ._postgres_db import PostgresDatabase, postgres_text, utc
from ._sql_rows import PAGE_COLUMNS, page_from_row
from .base import PageInfo, conversation_cache_prefix

if TYPE_CHECKING:
    import psycopg

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
            idempotent=False,  # a repeat would insert its id again
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

    # -- what a conversation leaves beside its log ------------------------------------------------------------
    def _share_pages(self, cursor: psycopg.Cursor[Any], conversation_id: str, page_ids: Sequence[str]) -> None:
        """Record that a fork's log shows these pages (those that exist and are not its own), inside its
        transaction: they stay while it does (see `_delete_side_rows`)."""
        if page_ids:
            p = self._db.prefix
            cursor.execute(
                f"INSERT INTO {p}page_shares (conversation_id, page_id) SELECT %s, id FROM {p}pages "
                "WHERE id = ANY(%s) AND conversation_id IS DISTINCT FROM %s ON CONFLICT DO NOTHING",
                (conversation_id, list(page_ids), conversation_id),
            )

    def _delete_side_rows(self, cursor: psycopg.Cursor[Any], conversation_id: str) -> None:
        """Delete what a deleted conversation left beside its log, in the transaction that deleted its row: its
        cached summaries, and its pages, except those a fork shares, which pass to the oldest such fork."""
        p = self._db.prefix
        prefix = conversation_cache_prefix(conversation_id)
        cursor.execute(f"SELECT key FROM {p}cache WHERE starts_with(key, %s)", (prefix,))
        keys = [r[0] for r in cursor.fetchall()]
        if keys:
            cursor.execute(f"SELECT id FROM {p}conversations WHERE starts_with(id, %s)", (f"{conversation_id}:",))
            own = own_cache_keys(conversation_id, keys, [r[0] for r in cursor.fetchall()])
            cursor.execute(f"DELETE FROM {p}cache WHERE key = ANY(%s)", (own,))
        # FOR KEY SHARE keeps each heir from being deleted before its page is handed to it (a deletion waits here,
        # and one that went first has taken its row away, so it is not chosen); appends to it are not held up.
        cursor.execute(
            f"SELECT s.page_id, s.conversation_id FROM {p}page_shares AS s JOIN {p}pages AS g ON g.id = s.page_id "
            f"JOIN {p}conversations AS c ON c.id = s.conversation_id WHERE g.conversation_id = %s "
            "ORDER BY c.created_at, c.id FOR KEY SHARE OF c",
            (conversation_id,),
        )
        heirs = page_heirs(cursor.fetchall())
        if heirs:
            pages, owners = list(heirs), list(heirs.values())
            cursor.execute(
                f"UPDATE {p}pages AS g SET conversation_id = u.owner "
                "FROM unnest(%s::text[], %s::text[]) AS u(page, owner) WHERE g.id = u.page",
                (pages, owners),
            )
            cursor.execute(
                f"DELETE FROM {p}page_shares AS s USING unnest(%s::text[], %s::text[]) AS u(page, owner) "
                "WHERE s.page_id = u.page AND s.conversation_id = u.owner",
                (pages, owners),
            )
        cursor.execute(f"DELETE FROM {p}pages WHERE conversation_id = %s", (conversation_id,))
