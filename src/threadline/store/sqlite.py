"""The SQLite backend: the embedded default, one file, safe across threads and processes.

How it keeps its promises:

- WAL journal, so readers never block the writer and never see a half-written transaction; a busy timeout, so a
  writer waits for another (thread or process) instead of failing.
- ``append`` is one ``BEGIN IMMEDIATE`` transaction: it takes the database's write lock first, reads the
  conversation's ``next_seq``, inserts the messages with consecutive ``seq`` values (``INSERT OR IGNORE`` on the
  primary key ``(conversation, id)`` makes it idempotent), and moves ``next_seq`` on. Writers are serialized by the
  lock, so ``seq`` is one total order that every reader sees, and a writer's own messages keep its order.
- One connection per thread (and per process: a forked child opens its own), because a SQLite connection must not
  be used by two threads at once.
- Writer leases (`try_lease`) are ``flock`` locks on files in ``<db>-leases/`` (see `threadline.store.leases`): the
  kernel releases them when the holding process dies, and a file exists only while its lease is held.
- ``synchronous=NORMAL`` by default: in WAL mode a commit survives the process being killed at any point (the
  crash tests kill -9 at every persistence point); after a power cut the last commits may be lost but the file is
  never corrupt. ``sqlite:///path?synchronous=full`` syncs every commit to disk (much slower on most disks).

Where the parts live: connections, transactions and migrations in `threadline.store._sqlite_db`; the full-text
index and search in `threadline.store._sqlite_index`; artifacts, the request cache and pages in
`threadline.store._sqlite_side_tables`. This module keeps the conversations and their logs.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._ids import new_id
from .._page_ids import page_ids
from ..errors import StoreError
from ..message_list import MessageList
from ..message_types import Message
from ..serialization import decode_messages, encode_message
from ._common import (
    check_metadata,
    check_slice,
    conversation_exists,
    decode_json,
    distinct_messages,
    encode_json,
    encode_metadata,
    fork_title,
    format_ts,
    missing_conversation,
    missing_message,
    now,
    parse_ts,
    same_stored,
    store_closed,
    store_text,
    unique_messages,
)
from ._search import conversation_figures, fork_end
from ._sql_rows import (
    CONVERSATION_COLUMNS,
    SUMMARY_COLUMNS,
    check_same_messages,
    conversation_from_row,
    fork_metadata,
    message_page,
    summary_from_row,
    tail_page,
)
from ._sqlite_db import SYNCHRONOUS, SQLiteDatabase
from ._sqlite_index import SEQ_MASK, copy_index, key_range, search, search_in, search_rows
from ._sqlite_side_tables import SQLiteSideTables, delete_side_rows, share_pages
from .base import ConversationInfo, ConversationSummary, ImportItem, MessagePage, Store
from .leases import Lease, appended_behind, remove_lease_file, try_file_lease

__all__ = ["SQLiteStore"]

_CONVERSATION_COLUMNS = ", ".join(CONVERSATION_COLUMNS)
_SUMMARY_COLUMNS = ", ".join(f"c.{column}" for column in SUMMARY_COLUMNS)


class SQLiteStore(SQLiteSideTables, Store):
    """A store in one SQLite file.

    Args:
        path: The database file (created with its directory if missing).
        synchronous: SQLite's ``synchronous`` setting: ``"normal"`` (survives process crashes) or ``"full"``
            (also survives power loss, at the cost of a disk sync per commit).
        busy_timeout: Seconds a writer waits for another writer's lock before giving up.

    Raises:
        StoreError: if the file is not a usable SQLite database or has a newer schema than this code knows.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: str = "normal", busy_timeout: float = 30.0
    ) -> None:
        if synchronous.lower() not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, got {synchronous!r}")
        self.path = Path(path).expanduser().absolute()
        self._db = SQLiteDatabase(self.path, synchronous=synchronous, busy_timeout=busy_timeout)
        self.url = self._db.url

    def close(self) -> None:
        """Close every connection this store opened (in this process)."""
        self._db.close()

    def schema_version(self) -> int:
        """The number of migrations applied to this database."""
        return self._db.schema_version()

    # -- conversations ----------------------------------------------------------------------------------------
    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        conversation_id = id or new_id()
        stamp = format_ts(now())
        data = encode_metadata(metadata)
        with self._db.write() as conn:
            inserted = conn.execute(
                "INSERT OR IGNORE INTO conversations (id, title, created_at, updated_at, metadata) "
                "VALUES (?, ?, ?, ?, ?)",
                (conversation_id, store_text(title), stamp, stamp, data),
            ).rowcount
            if not inserted:
                raise conversation_exists(conversation_id, self.url)
        return self.get_conversation(conversation_id)

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        row = self._db.one(f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,))
        if row is None:
            raise missing_conversation(conversation_id, self.url)
        return conversation_from_row(row, parse_ts)

    def has_conversation(self, conversation_id: str) -> bool:
        return self._db.one("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)) is not None

    def list_conversations(self, limit: int = 50, offset: int = 0) -> list[ConversationInfo]:
        check_slice(offset, limit)
        rows = self._db.all(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [conversation_from_row(row, parse_ts) for row in rows]

    def update_metadata(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        active_mode: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConversationInfo:
        extra = check_metadata(metadata)
        with self._db.write() as conn:
            row = conn.execute("SELECT metadata FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if row is None:
                raise missing_conversation(conversation_id, self.url)
            merged = decode_json(row[0])
            merged.update(extra)
            conn.execute(
                "UPDATE conversations SET title = coalesce(?, title), active_mode = coalesce(?, active_mode), "
                "metadata = ?, updated_at = ? WHERE id = ?",
                (
                    store_text(title),
                    store_text(active_mode),
                    encode_json(merged, "metadata"),
                    format_ts(now()),
                    conversation_id,
                ),
            )
        return self.get_conversation(conversation_id)

    def delete_conversation(self, conversation_id: str) -> None:
        with self._db.write() as conn:
            row = conn.execute("DELETE FROM conversations WHERE id = ? RETURNING key", (conversation_id,)).fetchone()
            if row is None:
                raise missing_conversation(conversation_id, self.url)
            conn.execute("DELETE FROM messages WHERE conversation = ?", (row[0],))
            conn.execute("DELETE FROM message_search WHERE rowid BETWEEN ? AND ?", key_range(row[0]))
            delete_side_rows(conn, conversation_id)
        # Its lease file, if a writer that was killed left one (a released lease removes its own); a file that
        # cannot be removed is harmless, and the conversation is deleted already.
        with contextlib.suppress(OSError):
            remove_lease_file(self.path, conversation_id)

    # -- the log ----------------------------------------------------------------------------------------------
    def append(self, conversation_id: str, messages: Iterable[Message], *, expected_count: int | None = None) -> None:
        self._append_items(conversation_id, unique_messages(list(messages)), expected_count)

    def append_checked(self, conversation_id: str, messages: Sequence[Message], expected_count: int) -> None:
        if type(self).append is not SQLiteStore.append:  # a subclass's own append (a wrapper) stays on the path
            super().append_checked(conversation_id, messages, expected_count)
            return
        # The writer checked each message's fields (`field_problem`) already: they are not checked twice.
        self._append_items(conversation_id, unique_messages(list(messages), check_fields=False), expected_count)

    def _append_items(self, conversation_id: str, items: list[Message], expected_count: int | None) -> None:
        # Encode before taking the write lock: other writers wait only for the inserts.
        rows = [(message.id, encode_message(message)) for message in items]
        with self._db.write() as conn:
            found = conn.execute(
                "SELECT key, next_seq, message_count FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
            if found is None:
                raise missing_conversation(conversation_id, self.url)
            if not rows:
                return
            key, base, count = found
            if expected_count is not None and count != expected_count:
                if self._all_stored(conn, key, rows):
                    return  # a repeat of an append that was done
                raise appended_behind(conversation_id, expected_count, count)
            inserted = conn.executemany(
                "INSERT OR IGNORE INTO messages (conversation, id, seq, data) VALUES (?, ?, ?, ?)",
                [(key, mid, base + index, data) for index, (mid, data) in enumerate(rows)],
            ).rowcount
            new = list(range(len(rows)))
            if inserted != len(rows):
                # Some ids were stored already: fine for the same message again (a retry), refused for another.
                self._check_repeats(conn, key, conversation_id, rows)
                # Only the rows this transaction wrote (seq >= base) are new.
                stored = {
                    r[0]
                    for r in conn.execute("SELECT seq FROM messages WHERE conversation = ? AND seq >= ?", (key, base))
                }
                new = [index for index in new if base + index in stored]
            # The search index is filled by the next search (see `_catch_up`), in bulk.
            model, failures = conversation_figures(items[index] for index in new)
            conn.execute(
                "UPDATE conversations SET next_seq = ?, message_count = message_count + ?, updated_at = ?, "
                "last_model = coalesce(?, last_model), failures = failures + ? WHERE key = ?",
                (base + len(rows), inserted, format_ts(now()), model, failures, key),
            )

    def _all_stored(self, conn: sqlite3.Connection, key: int, rows: list[tuple[str, bytes]]) -> bool:
        """Whether every message of an append is stored already, as it is."""
        wanted = dict(rows)
        found = 0
        for stored in _stored_chunks(conn, key, list(wanted)):
            if not all(same_stored(bytes(data), wanted[message_id]) for message_id, data in stored):
                return False
            found += len(stored)
        return found == len(wanted)

    def _check_repeats(
        self, conn: sqlite3.Connection, key: int, conversation_id: str, rows: list[tuple[str, bytes]]
    ) -> None:
        """Raise if a stored message has the id of one of ``rows`` but other content (inside the append's
        transaction, so the append is rolled back)."""
        wanted = dict(rows)
        for stored in _stored_chunks(conn, key, list(wanted)):
            check_same_messages(stored, wanted, conversation_id, self.url)

    def load(self, conversation_id: str) -> MessageList:
        with self._db.errors():
            conn = self._db.connection()
            # One read transaction: the existence check and the rows come from the same snapshot.
            conn.execute("BEGIN")
            try:
                found = conn.execute("SELECT key FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
                if found is None:
                    raise missing_conversation(conversation_id, self.url)
                rows = conn.execute("SELECT data FROM messages WHERE conversation = ? ORDER BY seq", found).fetchall()
                conn.execute("COMMIT")
            except BaseException:
                self._db.end_failed(conn)
                raise
        return MessageList.unchecked(decode_messages([row[0] for row in rows]))

    # -- reading by sequence number, search, forks (the viewer) ----------------------------------------------
    def read_tail(self, conversation_id: str, limit: int, *, before: int | None = None) -> MessagePage:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        bound = SEQ_MASK + 1 if before is None else before
        with self._db.conversation_snapshot(conversation_id) as (conn, key):
            rows = conn.execute(
                "SELECT seq, data FROM messages WHERE conversation = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (key, bound, limit + 1),
            ).fetchall()
        return tail_page(rows, limit)

    def read_after(self, conversation_id: str, after: int, limit: int | None = None) -> MessagePage:
        check_slice(0, limit)
        with self._db.conversation_snapshot(conversation_id) as (conn, key):
            rows = conn.execute(
                "SELECT seq, data FROM messages WHERE conversation = ? AND seq > ? ORDER BY seq LIMIT ?",
                (key, after, -1 if limit is None else limit),
            ).fetchall()
            has_older = bool(rows) and (
                conn.execute(
                    "SELECT 1 FROM messages WHERE conversation = ? AND seq < ? LIMIT 1", (key, rows[0][0])
                ).fetchone()
                is not None
            )
        return message_page(rows, has_older)

    def message_seq(self, conversation_id: str, message_id: str) -> int:
        with self._db.conversation_snapshot(conversation_id) as (conn, key):
            row = conn.execute(
                "SELECT seq FROM messages WHERE conversation = ? AND id = ?", (key, message_id)
            ).fetchone()
        if row is None:
            raise missing_message(conversation_id, message_id)
        return int(row[0])

    def message_position(self, conversation_id: str, message_id: str) -> int:
        with self._db.conversation_snapshot(conversation_id) as (conn, key):
            row = conn.execute(
                "SELECT count(*) FROM messages WHERE conversation = ? AND seq <= "
                "(SELECT seq FROM messages WHERE conversation = ? AND id = ?) ",
                (key, key, message_id),
            ).fetchone()
        if not row[0]:
            raise missing_message(conversation_id, message_id)
        return int(row[0])

    def list_summaries(self, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        rows = self._db.all(
            f"SELECT {_SUMMARY_COLUMNS} FROM conversations AS c ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [summary_from_row(row, parse_ts) for row in rows]

    def search_conversations(self, query: str, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        return search(self._db, query, limit, offset)

    def search_messages(self, conversation_id: str, query: str, limit: int = 10_000) -> list[tuple[int, str]]:
        check_slice(0, limit)
        return search_in(self._db, conversation_id, query, limit)

    def fork_conversation(
        self, conversation_id: str, at: str, *, title: str | None = None, id: str | None = None
    ) -> ConversationInfo:
        fork_id = id or new_id()
        with self._db.write() as conn:
            source = conn.execute(
                "SELECT key, title, active_mode, metadata, indexed_to, next_seq FROM conversations WHERE id = ?",
                (conversation_id,),
            ).fetchone()
            if source is None:
                raise missing_conversation(conversation_id, self.url)
            key, source_title, mode, metadata, indexed_to, next_seq = source
            if title is None:
                siblings = conn.execute("SELECT title FROM conversations WHERE forked_from = ?", (conversation_id,))
                title = fork_title(source_title, (row[0] for row in siblings))
            found = conn.execute("SELECT seq FROM messages WHERE conversation = ? AND id = ?", (key, at)).fetchone()
            if found is None:
                raise missing_message(conversation_id, at)
            following = conn.execute(
                "SELECT seq, data FROM messages WHERE conversation = ? AND seq > ? ORDER BY seq LIMIT 256",
                (key, found[0]),
            ).fetchall()
            extra = fork_end(decode_messages([r[1] for r in following]))
            cut = following[extra - 1][0] if extra else found[0]
            merged = fork_metadata(metadata, conversation_id, at)
            stamp = format_ts(now())
            created = conn.execute(
                "INSERT OR IGNORE INTO conversations (id, title, created_at, updated_at, active_mode, metadata, "
                "forked_from) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING key",
                (fork_id, store_text(title), stamp, stamp, mode, encode_json(merged, "metadata"), conversation_id),
            ).fetchone()
            if created is None:
                raise conversation_exists(fork_id, self.url)
            new_key = created[0]
            copied = conn.execute(
                "INSERT INTO messages (conversation, id, seq, data) "
                "SELECT ?, id, seq, data FROM messages WHERE conversation = ? AND seq <= ?",
                (new_key, key, cut),
            ).rowcount
            copy_index(conn, key, new_key, cut, indexed_to, next_seq)  # the fork copies the original's index rows
            kept = decode_messages(
                [
                    r[0]
                    for r in conn.execute(
                        "SELECT data FROM messages WHERE conversation = ? ORDER BY seq", (new_key,)
                    ).fetchall()
                ]
            )
            model, failures = conversation_figures(kept)
            conn.execute(
                "UPDATE conversations SET message_count = ?, next_seq = ?, indexed_to = ?, last_model = ?, "
                "failures = ? WHERE key = ?",
                (copied, cut + 1, cut + 1, model, failures, new_key),
            )
            share_pages(conn, fork_id, page_ids(kept))
        return self.get_conversation(fork_id)

    def list_forks(self, conversation_id: str) -> list[ConversationInfo]:
        rows = self._db.all(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE forked_from = ? ORDER BY created_at, id",
            (conversation_id,),
        )
        return [conversation_from_row(row, parse_ts) for row in rows]

    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        with self._db.write() as conn:
            for item in items:
                info = item.info
                messages = distinct_messages(item.messages, info.id)
                found = conn.execute(
                    "INSERT OR IGNORE INTO conversations (id, title, created_at, updated_at, active_mode, metadata, "
                    "message_count, next_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING key",
                    (
                        info.id,
                        store_text(info.title),
                        format_ts(info.created_at),
                        format_ts(info.updated_at),
                        store_text(info.active_mode),
                        encode_metadata(info.metadata),
                        len(messages),
                        len(messages),
                    ),
                ).fetchone()
                if found is None:
                    raise conversation_exists(info.id, self.url, importing=True)
                conn.executemany(
                    "INSERT INTO messages (conversation, id, seq, data) VALUES (?, ?, ?, ?)",
                    [(found[0], message.id, seq, encode_message(message)) for seq, message in enumerate(messages)],
                )
                conn.executemany(
                    "INSERT INTO message_search (rowid, body) VALUES (?, ?)",
                    search_rows(found[0], enumerate(messages)),
                )
                model, failures = conversation_figures(messages)
                conn.execute(
                    "UPDATE conversations SET last_model = ?, failures = ?, indexed_to = next_seq WHERE key = ?",
                    (model, failures, found[0]),
                )
        return [self.get_conversation(item.info.id) for item in items]

    def try_lease(self, conversation_id: str) -> Lease | None:
        if self._db.closed:
            raise store_closed(self.url)
        try:
            return try_file_lease(self.path, conversation_id)
        except OSError as exc:
            raise StoreError(f"cannot take the lease of conversation {conversation_id!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"<SQLiteStore {self.path}>"


def _stored_chunks(conn: sqlite3.Connection, key: int, ids: list[str]) -> Iterator[list[tuple[str, bytes]]]:
    """The stored ``(id, data)`` of the messages with these ids, a chunk at a time (SQLite caps the number of
    parameters of one statement)."""
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        yield conn.execute(
            f"SELECT id, data FROM messages WHERE conversation = ? AND id IN ({', '.join('?' * len(chunk))})",
            (key, *chunk),
        ).fetchall()
