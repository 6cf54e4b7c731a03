"""The SQLite store's full-text index: the FTS5 table ``message_search``, how it is filled, and the search over it.

Each message's row in ``message_search`` has the rowid ``conversation key << 32 | seq``, so one conversation's rows
are one rowid range (deleted or copied to a fork at once) and a hit names its message without a join.

An append pays nothing for the index: each conversation records how far it is indexed (``indexed_to``), and a search
first indexes whatever was appended since the last one (`catch_up`), in bulk, so it covers every message stored
before it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from ..message_types import Message
from ..serialization import decode_messages
from ._common import parse_ts
from ._search import query_words, search_text, sqlite_query
from ._sql_rows import SUMMARY_COLUMNS, search_summaries
from ._sqlite_db import SQLiteDatabase
from .base import ConversationSummary

__all__ = [
    "SEQ_BITS",
    "SEQ_MASK",
    "catch_up",
    "copy_index",
    "index_from",
    "key_range",
    "search",
    "search_in",
    "search_rows",
]

SEQ_BITS = 32  # message_search rowid = conversation key << 32 | seq
SEQ_MASK = (1 << SEQ_BITS) - 1
_SUMMARY_COLUMNS = ", ".join(f"c.{column}" for column in SUMMARY_COLUMNS)


def search_rows(key: int, numbered: Iterable[tuple[int, Message]]) -> list[tuple[int, str]]:
    """The ``message_search`` rows of messages of one conversation, given as ``(seq, message)``."""
    return [((key << SEQ_BITS) | seq, search_text(message)) for seq, message in numbered]


def key_range(key: int) -> tuple[int, int]:
    """The first and last ``message_search`` rowid a conversation can have."""
    return key << SEQ_BITS, (key << SEQ_BITS) | SEQ_MASK


def index_from(conn: sqlite3.Connection, key: int, start: int, end: int) -> None:
    """Index a conversation's messages from seq ``start`` on (inside a write transaction); it is indexed up to
    ``end`` (its ``next_seq``) afterwards."""
    rows = conn.execute(
        "SELECT seq, data FROM messages WHERE conversation = ? AND seq >= ? ORDER BY seq", (key, start)
    ).fetchall()
    if rows:
        messages = decode_messages([r[1] for r in rows])
        conn.executemany(
            "INSERT INTO message_search (rowid, body) VALUES (?, ?)",
            search_rows(key, zip([r[0] for r in rows], messages, strict=True)),
        )
    conn.execute("UPDATE conversations SET indexed_to = ? WHERE key = ?", (end, key))


def catch_up(db: SQLiteDatabase) -> None:
    """Index whatever was appended since the last search, so a search covers every message stored before it."""
    if db.one("SELECT 1 FROM conversations WHERE indexed_to < next_seq LIMIT 1") is None:
        return
    with db.write() as conn:
        behind = conn.execute(
            "SELECT key, indexed_to, next_seq FROM conversations WHERE indexed_to < next_seq"
        ).fetchall()
        for key, start, end in behind:
            index_from(conn, key, start, end)


def copy_index(conn: sqlite3.Connection, key: int, new_key: int, cut: int, indexed_to: int, next_seq: int) -> None:
    """Give a fork (``new_key``) the index rows of its source's (``key``) messages up to seq ``cut``, inside the
    fork's write transaction. The source, indexed up to ``indexed_to`` of its ``next_seq``, is indexed to its end
    first, so every copied message has its row."""
    if indexed_to < next_seq:
        index_from(conn, key, indexed_to, next_seq)
    low, _ = key_range(key)
    conn.execute(
        "INSERT INTO message_search (rowid, body) SELECT ? | (rowid & ?), body FROM message_search "
        "WHERE rowid BETWEEN ? AND ?",
        (new_key << SEQ_BITS, SEQ_MASK, low, low | cut),
    )


def search(db: SQLiteDatabase, query: str, limit: int, offset: int) -> list[ConversationSummary]:
    """`Store.search_conversations` on SQLite: conversations with a message holding every word of ``query`` (as
    word prefixes) or a title holding them, most recently updated first, each with its latest matching message."""
    words = query_words(query)
    if not words:
        return []
    title_match = " AND ".join("instr(lower(coalesce(c.title, '')), ?) > 0" for _ in words)
    catch_up(db)
    with db.snapshot() as conn:
        rows: Sequence[Sequence[object]] = conn.execute(
            "WITH hits AS (SELECT rowid >> 32 AS conversation, max(rowid & ?) AS seq, count(*) AS n "
            "FROM message_search WHERE message_search MATCH ? GROUP BY rowid >> 32) "
            f"SELECT {_SUMMARY_COLUMNS}, coalesce(hits.n, 0), hits.seq, c.key FROM conversations AS c "
            f"LEFT JOIN hits ON hits.conversation = c.key WHERE hits.seq IS NOT NULL OR ({title_match}) "
            "ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?",
            (SEQ_MASK, sqlite_query(words), *words, limit, offset),
        ).fetchall()
        matched: dict[object, tuple[str, bytes]] = {}
        for row in rows:
            if row[-2] is not None:
                found = conn.execute(
                    "SELECT id, data FROM messages WHERE conversation = ? AND seq = ?", (row[-1], row[-2])
                ).fetchone()
                if found is not None:
                    matched[row[-1]] = (found[0], found[1])
    return search_summaries(rows, matched, lambda row: row[-1], words, parse_ts)


def search_in(db: SQLiteDatabase, conversation_id: str, query: str, limit: int) -> list[tuple[int, str]]:
    """`Store.search_messages` on SQLite: one conversation's rowid range of the index, in log order."""
    words = query_words(query)
    catch_up(db)
    with db.conversation_snapshot(conversation_id) as (conn, key):
        if not words:
            return []
        low, high = key_range(key)
        seqs = [
            row[0]
            for row in conn.execute(
                "SELECT rowid & ? FROM message_search WHERE message_search MATCH ? AND rowid BETWEEN ? AND ? "
                "ORDER BY rowid LIMIT ?",
                (SEQ_MASK, sqlite_query(words), low, high, limit),
            )
        ]
        ids: dict[int, str] = {}
        for start in range(0, len(seqs), 500):  # SQLite caps the number of parameters of one statement
            chunk = seqs[start : start + 500]
            ids.update(
                conn.execute(
                    f"SELECT seq, id FROM messages WHERE conversation = ? AND seq IN ({', '.join('?' * len(chunk))})",
                    (key, *chunk),
                ).fetchall()
            )
    return [(seq, ids[seq]) for seq in seqs if seq in ids]
