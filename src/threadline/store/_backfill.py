"""Backfills of the migration that gives the viewer its search index and list figures: they fill them from the logs
a database already holds, in the migration's own transaction.

Both read every stored message once, in batches, so a large database migrates in bounded memory. A row that no
longer decodes is left out of the index rather than failing the migration: the store would refuse to open.
"""

from __future__ import annotations

from typing import Any

from ..errors import MessageListDeserializationError
from ..messages import Message
from ..serialization import decode_message
from ._search import conversation_figures, search_text

__all__ = ["postgres_viewer_backfill", "sqlite_viewer_backfill"]

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
