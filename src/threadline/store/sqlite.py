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

from .._ids import new_id
from ..errors import StoreError
from ..messages import Message, MessageList
from ..serialization import decode_messages, encode_message
from ._common import (
    CONVERSATION_COLUMNS,
    PAGE_COLUMNS,
    artifact_uri,
    check_artifact,
    check_metadata,
    check_slice,
    conversation_exists,
    conversation_from_row,
    decode_json,
    encode_json,
    encode_metadata,
    format_ts,
    missing_artifact,
    missing_conversation,
    missing_page,
    new_page,
    now,
    page_from_row,
    parse_ts,
    slice_text,
    store_closed,
    unique_messages,
)
from .base import ConversationInfo, ImportItem, PageInfo, Store
from .migrations import MIGRATIONS_TABLE, SQLITE_MIGRATIONS, MigrationState, pending_migrations

__all__ = ["SQLiteStore"]

_SYNCHRONOUS = ("off", "normal", "full", "extra")
_CONVERSATION_COLUMNS = ", ".join(CONVERSATION_COLUMNS)
_PAGE_COLUMNS = ", ".join(PAGE_COLUMNS)


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

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database's write lock from its first statement."""
        with self._errors():
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

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
                conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (version, name, applied_at) VALUES (?, ?, ?)",
                    (version, migration.name, format_ts(now())),
                )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

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
                (conversation_id, title, stamp, stamp, data),
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
                (title, active_mode, encode_json(merged, "metadata"), format_ts(now()), conversation_id),
            )
        return self.get_conversation(conversation_id)

    def delete_conversation(self, conversation_id: str) -> None:
        with self._write() as conn:
            row = conn.execute("DELETE FROM conversations WHERE id = ? RETURNING key", (conversation_id,)).fetchone()
            if row is None:
                raise missing_conversation(conversation_id, self.url)
            conn.execute("DELETE FROM messages WHERE conversation = ?", (row[0],))
            conn.execute("DELETE FROM artifacts WHERE conversation_id = ?", (conversation_id,))

    # -- the log ----------------------------------------------------------------------------------------------
    def append(self, conversation_id: str, messages: Iterable[Message]) -> None:
        items = unique_messages(list(messages))
        # Encode before taking the write lock: other writers wait only for the insert itself.
        rows = [(message.id, encode_message(message)) for message in items]
        with self._write() as conn:
            found = conn.execute("SELECT key, next_seq FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if found is None:
                raise missing_conversation(conversation_id, self.url)
            if not rows:
                return
            key, base = found
            inserted = conn.executemany(
                "INSERT OR IGNORE INTO messages (conversation, id, seq, data) VALUES (?, ?, ?, ?)",
                [(key, mid, base + index, data) for index, (mid, data) in enumerate(rows)],
            ).rowcount
            conn.execute(
                "UPDATE conversations SET next_seq = ?, message_count = message_count + ?, updated_at = ? "
                "WHERE key = ?",
                (base + len(rows), inserted, format_ts(now()), key),
            )

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
            finally:
                conn.execute("COMMIT")
        return MessageList._from_trusted(decode_messages([row[0] for row in rows]))

    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        with self._write() as conn:
            for item in items:
                info = item.info
                messages = unique_messages(list(item.messages))
                found = conn.execute(
                    "INSERT OR IGNORE INTO conversations (id, title, created_at, updated_at, active_mode, metadata, "
                    "message_count, next_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING key",
                    (
                        info.id,
                        info.title,
                        format_ts(info.created_at),
                        format_ts(info.updated_at),
                        info.active_mode,
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
        return [self.get_conversation(item.info.id) for item in items]

    # -- artifacts --------------------------------------------------------------------------------------------
    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        check_artifact(conversation_id, name, content)
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
                (page.id, conversation_id, title, html, css, js, format_ts(page.created_at)),
            )
        return page

    def get_page(self, page_id: str) -> PageInfo:
        row = self._one(f"SELECT {_PAGE_COLUMNS} FROM pages WHERE id = ?", (page_id,))
        if row is None:
            raise missing_page(page_id, self.url)
        return page_from_row(row, parse_ts)

    def __repr__(self) -> str:
        return f"<SQLiteStore {self.path}>"
