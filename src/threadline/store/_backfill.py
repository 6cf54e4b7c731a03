"""Backfills of migrations: they fill what a step made from the logs a database already holds, in the migration's own
transaction.

- the viewer's search index and list figures: every stored message is read once, in batches, so a large database
  migrates in bounded memory;
- the pages that existing forks share (``page_shares``): the messages of forks that mention a ``page_id``.

A row that no longer decodes is left out rather than failing the migration: the store would refuse to open.
"""

from __future__ import annotations

from typing import Any

from .._page_ids import page_ids
from ..errors import MessageListDeserializationError
from ..message_types import Message
from ..serialization import decode_message
from ._search import conversation_figures, search_text

__all__ = [
    "postgres_page_shares_backfill",
    "postgres_viewer_backfill",
    "sqlite_page_shares_backfill",
    "sqlite_viewer_backfill",
]

_BATCH = 2_000


def _decoded(data: bytes) -> Message | None:
    try:
        return decode_message(data)
    except MessageListDeserializationError:
        return None


class _Figures:
    """Each conversation's latest model and failure count, gathered while its messages stream past in order."""

    def __init__(self) -> None:
        self.by_conversation: dict[Any, tuple[str | None, int]] = {}

    def add(self, conversation: Any, message: Message) -> None:
        model, failures = self.by_conversation.get(conversation, (None, 0))
        new_model, new_failures = conversation_figures((message,))
        self.by_conversation[conversation] = (new_model or model, failures + new_failures)


def sqlite_viewer_backfill(conn: Any, prefix: str = "") -> None:
    """Set each conversation's figures (SQLite). Its search index fills at the first search, as for every
    append (see ``SQLiteStore.search_conversations``)."""
    figures = _Figures()
    rows = conn.execute("SELECT conversation, data FROM messages ORDER BY conversation, seq")
    while batch := rows.fetchmany(_BATCH):
        for key, data in batch:
            message = _decoded(bytes(data))
            if message is not None:
                figures.add(key, message)
    conn.executemany(
        "UPDATE conversations SET last_model = ?, failures = ? WHERE key = ?",
        [(model, failures, key) for key, (model, failures) in figures.by_conversation.items()],
    )


def postgres_viewer_backfill(cursor: Any, prefix: str) -> None:
    """Fill every stored message's ``search`` vector and set each conversation's figures (PostgreSQL)."""
    figures = _Figures()
    last: tuple[str, int] = ("", -1)
    while True:
        cursor.execute(
            f"SELECT conversation_id, seq, data FROM {prefix}messages WHERE (conversation_id, seq) > (%s, %s) "
            "ORDER BY conversation_id, seq LIMIT %s",
            (*last, _BATCH),
            binary=True,
        )
        batch = cursor.fetchall()
        if not batch:
            break
        ids: list[str] = []
        seqs: list[int] = []
        texts: list[str] = []
        for conversation_id, seq, data in batch:
            message = _decoded(bytes(data))
            if message is None:
                continue
            figures.add(conversation_id, message)
            ids.append(conversation_id)
            seqs.append(seq)
            texts.append(search_text(message))
        last = (batch[-1][0], batch[-1][1])
        cursor.execute(
            f"UPDATE {prefix}messages AS m SET search = to_tsvector('simple', u.body) "
            "FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS u(cid, seq, body) "
            "WHERE m.conversation_id = u.cid AND m.seq = u.seq",
            (ids, seqs, texts),
        )
    items = list(figures.by_conversation.items())
    if items:
        cursor.execute(
            f"UPDATE {prefix}conversations AS c SET last_model = u.model, failures = u.failures "
            "FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS u(id, model, failures) WHERE c.id = u.id",
            ([i for i, _ in items], [f[0] for _, f in items], [f[1] for _, f in items]),
        )


def _shown_pages(rows: Any) -> list[tuple[str, str]]:
    """``(conversation id, page id)`` for each page that the given ``(conversation id, message data)`` rows report."""
    pairs: dict[tuple[str, str], None] = {}
    while batch := rows.fetchmany(_BATCH):
        for conversation_id, data in batch:
            message = _decoded(bytes(data))
            if message is not None:
                pairs.update(((conversation_id, page_id), None) for page_id in page_ids((message,)))
    return list(pairs)


def sqlite_page_shares_backfill(conn: Any, prefix: str = "") -> None:
    """Share with each existing fork the pages of other conversations that its log shows (SQLite)."""
    rows = conn.execute(
        "SELECT c.id, m.data FROM messages AS m JOIN conversations AS c ON c.key = m.conversation "
        "WHERE c.forked_from IS NOT NULL AND instr(m.data, CAST('page_id' AS BLOB)) > 0"
    )
    conn.executemany(
        "INSERT OR IGNORE INTO page_shares (conversation_id, page_id) "
        "SELECT ?1, id FROM pages WHERE id = ?2 AND conversation_id IS NOT ?1",
        _shown_pages(rows),
    )


def postgres_page_shares_backfill(cursor: Any, prefix: str) -> None:
    """Share with each existing fork the pages of other conversations that its log shows (PostgreSQL)."""
    cursor.execute(
        f"SELECT m.conversation_id, m.data FROM {prefix}messages AS m JOIN {prefix}conversations AS c "
        "ON c.id = m.conversation_id WHERE c.forked_from IS NOT NULL AND position('page_id'::bytea IN m.data) > 0",
        binary=True,
    )
    pairs = _shown_pages(cursor)
    if pairs:
        cursor.execute(
            f"INSERT INTO {prefix}page_shares (conversation_id, page_id) "
            f"SELECT u.cid, g.id FROM unnest(%s::text[], %s::text[]) AS u(cid, page) JOIN {prefix}pages AS g "
            "ON g.id = u.page WHERE g.conversation_id IS DISTINCT FROM u.cid ON CONFLICT DO NOTHING",
            ([c for c, _ in pairs], [p for _, p in pairs]),
        )
