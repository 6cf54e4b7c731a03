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
  kernel releases them when the holding process dies.
- ``synchronous=NORMAL`` by default: in WAL mode a commit survives the process being killed at any point (the
  crash tests kill -9 at every persistence point); after a power cut the last commits may be lost but the file is
  never corrupt. ``sqlite:///path?synchronous=full`` syncs every commit to disk (much slower on most disks).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._artifact_names import artifact_uri
from .._ids import new_id
from ..errors import StoreError
from ..messages import Message, MessageList
from ..serialization import decode_message, decode_messages, encode_message
from ._common import (
    check_artifact,
    check_metadata,
    check_slice,
    conversation_exists,
    decode_json,
    different_message,
    distinct_messages,
    encode_json,
    encode_metadata,
    format_ts,
    invalid_text,
    missing_artifact,
    missing_conversation,
    missing_message,
    missing_page,
    new_page,
    now,
    parse_ts,
    same_stored,
    slice_text,
    store_closed,
    store_text,
    unique_messages,
)
from ._search import conversation_figures, fork_end, query_words, search_text, snippet, sqlite_query
from ._sql_rows import CONVERSATION_COLUMNS, PAGE_COLUMNS, conversation_from_row, page_from_row
from .base import ConversationInfo, ConversationSummary, ImportItem, MessagePage, PageInfo, Store
from .leases import Lease, appended_behind, try_file_lease
from .migrations import MIGRATIONS_TABLE, SQLITE_MIGRATIONS, MigrationState, pending_migrations

__all__ = ["SQLiteStore"]

_SYNCHRONOUS = ("off", "normal", "full", "extra")
_CONVERSATION_COLUMNS = ", ".join(CONVERSATION_COLUMNS)
_PAGE_COLUMNS = ", ".join(PAGE_COLUMNS)
_SUMMARY_COLUMNS = ", ".join(
    f"c.{column}" for column in (*CONVERSATION_COLUMNS, "last_model", "failures", "forked_from")
)
_SEQ_BITS = 32  # message_search rowid = conversation key << 32 | seq
_SEQ_MASK = (1 << _SEQ_BITS) - 1


def _search_rows(key: int, numbered: Iterable[tuple[int, Message]]) -> list[tuple[int, str]]:
    """The ``message_search`` rows of messages of one conversation, given as ``(seq, message)``."""
    return [((key << _SEQ_BITS) | seq, search_text(message)) for seq, message in numbered]


def _key_range(key: int) -> tuple[int, int]:
    """The first and last ``message_search`` rowid a conversation can have."""
    return key << _SEQ_BITS, (key << _SEQ_BITS) | _SEQ_MASK


class SQLiteStore(Store):
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
        if synchronous.lower() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, got {synchronous!r}")
        self.path = Path(path).expanduser().absolute()
        self.url = f"sqlite://{self.path}"
        self._synchronous = synchronous.upper()
        self._busy_timeout = busy_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[tuple[int, sqlite3.Connection]] = []
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the directory of {self.path}: {exc.strerror or exc}") from None
        with self._errors():
            self._migrate(self._conn())

    # -- connections ------------------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: the sqlite3 module must not open transactions behind our back; every write below
        # says BEGIN IMMEDIATE itself.
        conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: cannot switch the database to WAL mode (it is in {mode} mode)")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise store_closed(self.url)
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = self._connect()
            self._local.conn = conn
            self._local.pid = os.getpid()
            with self._lock:
                self._connections.append((os.getpid(), conn))
        return conn

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from None
        except UnicodeEncodeError:
            # Stored text follows the log's rule before it gets here; what is left is a key (an id) to look up.
            raise StoreError(f"{self.path}: {invalid_text()}") from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database's write lock from its first statement.

        Whatever fails inside it, the COMMIT included, the transaction ends with it (see `_end_failed`), so the next
        call on this thread starts clean, and the error raised is the one that caused the failure.
        """
        with self._errors():
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                self._end_failed(conn)
                raise

    def _end_failed(self, conn: sqlite3.Connection) -> None:
        """Roll back what a failed statement or COMMIT left open.

        SQLite rolls some failures back by itself (a full disk, an I/O error), and a ROLLBACK then fails with "no
        transaction is active", hiding the real error; others (a COMMIT refused by a deferred constraint) leave the
        transaction open, and every later BEGIN on this connection would fail. If even the ROLLBACK fails, the
        connection is dropped: this thread opens a new one on its next call.
        """
        if not conn.in_transaction:
            return
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            self._drop(conn)

    def _drop(self, conn: sqlite3.Connection) -> None:
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._connections = [(pid, c) for pid, c in self._connections if c is not conn]
        try:
            conn.close()
        except sqlite3.Error:
            pass

    def _read(self) -> sqlite3.Connection:
        return self._conn()

    def _one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """The first row a read statement gives, or None."""
        with self._errors():
            return self._read().execute(sql, args).fetchone()

    def close(self) -> None:
        """Close every connection this store opened (in this process)."""
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        # A forked child must not close what it inherited: the connections belong to the parent's process.
        pid = os.getpid()
        for owner, conn in connections:
            if owner == pid:
                conn.close()

    # -- schema -----------------------------------------------------------------------------------------------
    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            rows = conn.execute(f"SELECT version, name FROM {MIGRATIONS_TABLE} ORDER BY version").fetchall()
            state = MigrationState.from_rows(rows)
            for version, migration in pending_migrations(state, SQLITE_MIGRATIONS, str(self.path)):
                for statement in migration.sql():
                    conn.execute(statement)
                if migration.backfill is not None:
                    migration.backfill(conn, "")
                conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (version, name, applied_at) VALUES (?, ?, ?)",
                    (version, migration.name, format_ts(now())),
                )
            conn.execute("COMMIT")
        except BaseException:
            self._end_failed(conn)
            raise

    def schema_version(self) -> int:
        """The number of migrations applied to this database."""
        row = self._one(f"SELECT max(version) FROM {MIGRATIONS_TABLE}")
        return int(row[0] or 0)

    # -- conversations ----------------------------------------------------------------------------------------
    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        conversation_id = id or new_id()
        stamp = format_ts(now())
        data = encode_metadata(metadata)
        with self._write() as conn:
            inserted = conn.execute(
                "INSERT OR IGNORE INTO conversations (id, title, created_at, updated_at, metadata) "
                "VALUES (?, ?, ?, ?, ?)",
                (conversation_id, store_text(title), stamp, stamp, data),
            ).rowcount
            if not inserted:
                raise conversation_exists(conversation_id, self.url)
        return self.get_conversation(conversation_id)

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        row = self._one(f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,))
        if row is None:
            raise missing_conversation(conversation_id, self.url)
        return conversation_from_row(row, parse_ts)

    def has_conversation(self, conversation_id: str) -> bool:
        return self._one("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)) is not None

    def list_conversations(self, limit: int = 50, offset: int = 0) -> list[ConversationInfo]:
        check_slice(offset, limit)
        with self._errors():
            rows = (
                self._read()
                .execute(
                    f"SELECT {_CONVERSATION_COLUMNS} FROM conversations "
                    "ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
                    (limit, offset),
                )
                .fetchall()
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
        with self._write() as conn:
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
        with self._write() as conn:
            row = conn.execute("DELETE FROM conversations WHERE id = ? RETURNING key", (conversation_id,)).fetchone()
            if row is None:
                raise missing_conversation(conversation_id, self.url)
            conn.execute("DELETE FROM messages WHERE conversation = ?", (row[0],))
            conn.execute("DELETE FROM message_search WHERE rowid BETWEEN ? AND ?", _key_range(row[0]))
            conn.execute("DELETE FROM artifacts WHERE conversation_id = ?", (conversation_id,))

    # -- the log ----------------------------------------------------------------------------------------------
    def append(self, conversation_id: str, messages: Iterable[Message], *, expected_count: int | None = None) -> None:
        items = unique_messages(list(messages))
        # Encode before taking the write lock: other writers wait only for the inserts.
        rows = [(message.id, encode_message(message)) for message in items]
        with self._write() as conn:
            found = conn.execute(
                "SELECT key, next_seq, message_count FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
            if found is None:
                raise missing_conversation(conversation_id, self.url)
            if not rows:
                return
            key, base, count = found
            if expected_count is not None and count != expected_count:
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

    def _check_repeats(
        self, conn: sqlite3.Connection, key: int, conversation_id: str, rows: list[tuple[str, bytes]]
    ) -> None:
        """Raise if a stored message has the id of one of ``rows`` but other content (inside the append's
        transaction, so the append is rolled back)."""
        wanted = dict(rows)
        ids = list(wanted)
        for start in range(0, len(ids), 500):  # SQLite caps the number of parameters of one statement
            chunk = ids[start : start + 500]
            stored = conn.execute(
                f"SELECT id, data FROM messages WHERE conversation = ? AND id IN ({', '.join('?' * len(chunk))})",
                (key, *chunk),
            ).fetchall()
            for message_id, data in stored:
                if not same_stored(bytes(data), wanted[message_id]):
                    raise different_message(conversation_id, message_id, self.url)

    def load(self, conversation_id: str) -> MessageList:
        with self._errors():
            conn = self._read()
            # One read transaction: the existence check and the rows come from the same snapshot.
            conn.execute("BEGIN")
            try:
                found = conn.execute("SELECT key FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
                if found is None:
                    raise missing_conversation(conversation_id, self.url)
                rows = conn.execute("SELECT data FROM messages WHERE conversation = ? ORDER BY seq", found).fetchall()
                conn.execute("COMMIT")
            except BaseException:
                self._end_failed(conn)
                raise
        return MessageList.unchecked(decode_messages([row[0] for row in rows]))

    # -- reading by sequence number, search, forks (the viewer) ----------------------------------------------
    @contextmanager
    def _snapshot(self, conversation_id: str) -> Iterator[tuple[sqlite3.Connection, int]]:
        """One read transaction (so every statement sees the same snapshot) and the conversation's key."""
        with self._errors():
            conn = self._read()
            conn.execute("BEGIN")
            try:
                found = conn.execute("SELECT key FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
                if found is None:
                    raise missing_conversation(conversation_id, self.url)
                yield conn, found[0]
            finally:
                conn.execute("COMMIT")

    def _index(self, conn: sqlite3.Connection, key: int, start: int, end: int) -> None:
        """Index a conversation's messages from seq ``start`` on (inside a write transaction); it is indexed up
        to ``end`` (its ``next_seq``) afterwards."""
        rows = conn.execute(
            "SELECT seq, data FROM messages WHERE conversation = ? AND seq >= ? ORDER BY seq", (key, start)
        ).fetchall()
        if rows:
            messages = decode_messages([r[1] for r in rows])
            conn.executemany(
                "INSERT INTO message_search (rowid, body) VALUES (?, ?)",
                _search_rows(key, zip([r[0] for r in rows], messages, strict=True)),
            )
        conn.execute("UPDATE conversations SET indexed_to = ? WHERE key = ?", (end, key))

    def _catch_up(self) -> None:
        """Index whatever was appended since the last search, so a search covers every message stored before it."""
        if self._one("SELECT 1 FROM conversations WHERE indexed_to < next_seq LIMIT 1") is None:
            return
        with self._write() as conn:
            behind = conn.execute(
                "SELECT key, indexed_to, next_seq FROM conversations WHERE indexed_to < next_seq"
            ).fetchall()
            for key, start, end in behind:
                self._index(conn, key, start, end)

    def read_tail(self, conversation_id: str, limit: int, *, before: int | None = None) -> MessagePage:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        bound = _SEQ_MASK + 1 if before is None else before
        with self._snapshot(conversation_id) as (conn, key):
            rows = conn.execute(
                "SELECT seq, data FROM messages WHERE conversation = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (key, bound, limit + 1),
            ).fetchall()
        has_older = len(rows) > limit
        rows = rows[:limit][::-1]
        return MessagePage(decode_messages([r[1] for r in rows]), [r[0] for r in rows], has_older)

    def read_after(self, conversation_id: str, after: int, limit: int | None = None) -> MessagePage:
        check_slice(0, limit)
        with self._snapshot(conversation_id) as (conn, key):
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
        return MessagePage(decode_messages([r[1] for r in rows]), [r[0] for r in rows], has_older)

    def message_seq(self, conversation_id: str, message_id: str) -> int:
        with self._snapshot(conversation_id) as (conn, key):
            row = conn.execute(
                "SELECT seq FROM messages WHERE conversation = ? AND id = ?", (key, message_id)
            ).fetchone()
        if row is None:
            raise missing_message(conversation_id, message_id)
        return int(row[0])

    def list_summaries(self, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        with self._errors():
            rows = (
                self._read()
                .execute(
                    f"SELECT {_SUMMARY_COLUMNS} FROM conversations AS c "
                    "ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?",
                    (limit, offset),
                )
                .fetchall()
            )
        return [_summary(row) for row in rows]

    def search_conversations(self, query: str, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        words = query_words(query)
        if not words:
            return []
        title_match = " AND ".join("instr(lower(coalesce(c.title, '')), ?) > 0" for _ in words)
        self._catch_up()
        with self._errors():
            conn = self._read()
            conn.execute("BEGIN")
            try:
                rows = conn.execute(
                    "WITH hits AS (SELECT rowid >> 32 AS conversation, max(rowid & ?) AS seq FROM message_search "
                    "WHERE message_search MATCH ? GROUP BY rowid >> 32) "
                    f"SELECT {_SUMMARY_COLUMNS}, hits.seq, c.key FROM conversations AS c "
                    f"LEFT JOIN hits ON hits.conversation = c.key WHERE hits.seq IS NOT NULL OR ({title_match}) "
                    "ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?",
                    (_SEQ_MASK, sqlite_query(words), *words, limit, offset),
                ).fetchall()
                matched: dict[int, tuple[str, bytes]] = {}
                for row in rows:
                    if row[-2] is not None:
                        found = conn.execute(
                            "SELECT id, data FROM messages WHERE conversation = ? AND seq = ?", (row[-1], row[-2])
                        ).fetchone()
                        if found is not None:
                            matched[row[-1]] = (found[0], found[1])
            finally:
                conn.execute("COMMIT")
        out = []
        for row in rows:
            hit = matched.get(row[-1])
            if hit is None:
                out.append(_summary(row))
            else:
                text = search_text(decode_message(hit[1]))
                out.append(_summary(row, match_id=hit[0], snippet=snippet(text, words)))
        return out

    def fork_conversation(
        self, conversation_id: str, at: str, *, title: str | None = None, id: str | None = None
    ) -> ConversationInfo:
        fork_id = id or new_id()
        with self._write() as conn:
            source = conn.execute(
                "SELECT key, title, active_mode, metadata, indexed_to, next_seq FROM conversations WHERE id = ?",
                (conversation_id,),
            ).fetchone()
            if source is None:
                raise missing_conversation(conversation_id, self.url)
            key, source_title, mode, metadata, indexed_to, next_seq = source
            found = conn.execute("SELECT seq FROM messages WHERE conversation = ? AND id = ?", (key, at)).fetchone()
            if found is None:
                raise missing_message(conversation_id, at)
            following = conn.execute(
                "SELECT seq, data FROM messages WHERE conversation = ? AND seq > ? ORDER BY seq LIMIT 256",
                (key, found[0]),
            ).fetchall()
            extra = fork_end(decode_messages([r[1] for r in following]))
            cut = following[extra - 1][0] if extra else found[0]
            merged = decode_json(metadata)
            merged["forked_from"] = {"conversation": conversation_id, "message": at}
            stamp = format_ts(now())
            created = conn.execute(
                "INSERT OR IGNORE INTO conversations (id, title, created_at, updated_at, active_mode, metadata, "
                "forked_from) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING key",
                (fork_id, title or source_title, stamp, stamp, mode, encode_json(merged, "metadata"), conversation_id),
            ).fetchone()
            if created is None:
                raise conversation_exists(fork_id, self.url)
            new_key = created[0]
            copied = conn.execute(
                "INSERT INTO messages (conversation, id, seq, data) "
                "SELECT ?, id, seq, data FROM messages WHERE conversation = ? AND seq <= ?",
                (new_key, key, cut),
            ).rowcount
            if indexed_to < next_seq:
                self._index(conn, key, indexed_to, next_seq)  # the fork copies the original's index rows
            low, _ = _key_range(key)
            conn.execute(
                "INSERT INTO message_search (rowid, body) SELECT ? | (rowid & ?), body FROM message_search "
                "WHERE rowid BETWEEN ? AND ?",
                (new_key << _SEQ_BITS, _SEQ_MASK, low, low | cut),
            )
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
        return self.get_conversation(fork_id)

    def list_forks(self, conversation_id: str) -> list[ConversationInfo]:
        with self._errors():
            rows = (
                self._read()
                .execute(
                    f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE forked_from = ? ORDER BY created_at, id",
                    (conversation_id,),
                )
                .fetchall()
            )
        return [conversation_from_row(row, parse_ts) for row in rows]

    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        with self._write() as conn:
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
                    _search_rows(found[0], enumerate(messages)),
                )
                model, failures = conversation_figures(messages)
                conn.execute(
                    "UPDATE conversations SET last_model = ?, failures = ?, indexed_to = next_seq WHERE key = ?",
                    (model, failures, found[0]),
                )
        return [self.get_conversation(item.info.id) for item in items]

    def try_lease(self, conversation_id: str) -> Lease | None:
        if self._closed:
            raise store_closed(self.url)
        try:
            return try_file_lease(self.path, conversation_id)
        except OSError as exc:
            raise StoreError(f"cannot take the lease of conversation {conversation_id!r}: {exc}") from None

    # -- artifacts --------------------------------------------------------------------------------------------
    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        content = check_artifact(conversation_id, name, content)
        with self._write() as conn:
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
        row = self._one("SELECT content FROM artifacts WHERE conversation_id = ? AND name = ?", (conversation_id, name))
        if row is None:
            raise missing_artifact(conversation_id, name)
        return slice_text(str(row[0]), offset, limit)

    # -- request cache ----------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> Any | None:
        row = self._one("SELECT value FROM cache WHERE key = ?", (key,))
        return None if row is None else decode_json(row[0])

    def cache_put(self, key: str, value: Any) -> None:
        data = encode_json(value, "cache value")
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO cache (key, value, created_at) VALUES (?, ?, ?)", (key, data, format_ts(now()))
            )

    # -- pages ------------------------------------------------------------------------------------------------
    def save_page(
        self, title: str, html: str, css: str = "", js: str = "", *, conversation_id: str | None = None
    ) -> PageInfo:
        page = new_page(title, html, css, js, conversation_id)
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO pages ({_PAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (page.id, conversation_id, page.title, page.html, page.css, page.js, format_ts(page.created_at)),
            )
        return page

    def get_page(self, page_id: str) -> PageInfo:
        row = self._one(f"SELECT {_PAGE_COLUMNS} FROM pages WHERE id = ?", (page_id,))
        if row is None:
            raise missing_page(page_id, self.url)
        return page_from_row(row, parse_ts)

    def list_pages(self, conversation_id: str) -> list[PageInfo]:
        with self._errors():
            rows = (
                self._read()
                .execute(
                    f"SELECT {_PAGE_COLUMNS} FROM pages WHERE conversation_id = ? ORDER BY created_at, id",
                    (conversation_id,),
                )
                .fetchall()
            )
        return [page_from_row(row, parse_ts) for row in rows]

    def __repr__(self) -> str:
        return f"<SQLiteStore {self.path}>"


def _summary(row: Sequence[Any], *, match_id: str | None = None, snippet: str | None = None) -> ConversationSummary:
    """A list entry from a row of `_SUMMARY_COLUMNS` (extra columns after them are ignored)."""
    width = len(CONVERSATION_COLUMNS)
    return ConversationSummary(
        info=conversation_from_row(row[:width], parse_ts),
        model=row[width],
        failures=row[width + 1],
        forked_from=row[width + 2],
        match_id=match_id,
        snippet=snippet,
    )
