"""A SQLite database file as `SQLiteStore` uses it: connections, transactions, error mapping and migrations.

- WAL journal, so readers never block the writer and never see a half-written transaction; a busy timeout, so a
  writer waits for another (thread or process) instead of failing.
- One connection per thread (and per process: a forked child opens its own), because a SQLite connection must not
  be used by two threads at once.
- Every write is one ``BEGIN IMMEDIATE`` transaction (`SQLiteDatabase.write`): it takes the database's write lock
  with its first statement, so writers are serialized and each sees what the previous one committed.
- Every ``sqlite3`` error leaves as a `StoreError` naming the file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ._common import format_ts, invalid_text, missing_conversation, now, store_closed
from .migrations import MIGRATIONS_TABLE, SQLITE_MIGRATIONS, MigrationState, pending_migrations

__all__ = ["SYNCHRONOUS", "SQLiteDatabase"]

SYNCHRONOUS = ("off", "normal", "full", "extra")


class _StoreErrors:
    """The block of `SQLiteDatabase.errors`: a class, not a ``@contextmanager`` generator, because every statement
    passes through it and the generator cost ~1 µs each (a read by primary key takes ~6 µs)."""

    __slots__ = ("path",)

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, traceback: Any) -> None:
        if kind is None:
            return
        if issubclass(kind, sqlite3.Error):
            raise StoreError(f"{self.path}: {exc}") from None
        if issubclass(kind, UnicodeEncodeError):
            # Stored text follows the log's rule before it gets here; what is left is a key (an id) to look up.
            raise StoreError(f"{self.path}: {invalid_text()}") from None


class SQLiteDatabase:
    """The connections of one SQLite file, opened per thread, and the transactions made on them.

    Opening it creates the file's directory if missing and applies pending migrations.

    Args:
        path: The database file.
        synchronous: SQLite's ``synchronous`` setting, one of `SYNCHRONOUS` (checked by the caller).
        busy_timeout: Seconds a writer waits for another writer's lock before giving up.

    Raises:
        StoreError: if the file is not a usable SQLite database or has a newer schema than this code knows.
    """

    def __init__(self, path: Path, *, synchronous: str, busy_timeout: float) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"  # the path is absolute: four slashes, as SQLAlchemy reads them
        self._synchronous = synchronous.upper()
        self._busy_timeout = busy_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[tuple[int, sqlite3.Connection]] = []
        self.closed = False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the directory of {path}: {exc.strerror or exc}") from None
        with self.errors():
            self._migrate(self.connection())

    # -- connections ------------------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: the sqlite3 module must not open transactions behind our back; every write says
        # BEGIN IMMEDIATE itself.
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

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use, and again after a fork).

        Raises:
            StoreError: if the database was closed.
        """
        if self.closed:
            raise store_closed(self.url)
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = self._connect()
            self._local.conn = conn
            self._local.pid = os.getpid()
            with self._lock:
                self._connections.append((os.getpid(), conn))
        return conn

    def errors(self) -> AbstractContextManager[None]:
        """A block that turns what ``sqlite3`` raises inside it into a `StoreError` naming the file."""
        return _StoreErrors(self.path)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database's write lock from its first statement.

        Whatever fails inside it, the COMMIT included, the transaction ends with it (see `end_failed`), so the next
        call on this thread starts clean, and the error raised is the one that caused the failure.
        """
        with self.errors():
            conn = self.connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                self.end_failed(conn)
                raise

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction, so every statement in it sees the same snapshot."""
        with self.errors():
            conn = self.connection()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    @contextmanager
    def conversation_snapshot(self, conversation_id: str) -> Iterator[tuple[sqlite3.Connection, int]]:
        """A `snapshot` and the conversation's key (its row id, which messages refer to).

        Raises:
            StoreError: if there is no such conversation.
        """
        with self.snapshot() as conn:
            found = conn.execute("SELECT key FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if found is None:
                raise missing_conversation(conversation_id, self.url)
            yield conn, found[0]

    def end_failed(self, conn: sqlite3.Connection) -> None:
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

    def one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """The first row a read statement gives, or None."""
        with self.errors():
            return self.connection().execute(sql, args).fetchone()

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """Every row a read statement gives."""
        with self.errors():
            return self.connection().execute(sql, args).fetchall()

    def close(self) -> None:
        """Close every connection opened in this process; later calls raise `StoreError`."""
        with self._lock:
            self.closed = True
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
            self.end_failed(conn)
            raise

    def schema_version(self) -> int:
        """The number of migrations applied to this database."""
        row = self.one(f"SELECT max(version) FROM {MIGRATIONS_TABLE}")
        return int(row[0] or 0)
