"""A PostgreSQL database as `PostgresStore` uses it: the URL, the connection pool, transactions, error mapping and
migrations.

psycopg 3 and psycopg-pool are imported when a `PostgresDatabase` is made, never at import, so ``import threadline``
never pays for the driver.

Tables live in the schema named by ``?schema=NAME`` in the URL (created if missing), else in the connection's default
schema; every statement names them with `PostgresDatabase.prefix`. Migrations run under a transaction-scoped advisory
lock, so hosts starting together migrate once.

A server restart ends every connection idle in the pool. A transaction never starts on a connection the server has
ended: its socket shows that without a round trip, and such a connection is closed (the pool replaces it). When a
connection is lost inside a transaction run by `PostgresDatabase.run` (the reads, the appends), the transaction runs
once more on a connection opened for it, if that is safe: the connection was lost before the commit (so nothing was
written), or the work is idempotent (appending messages by id, reading).

Connections are in autocommit mode: a transaction of several statements is opened and closed by
``conn.transaction()`` (``BEGIN`` ... ``COMMIT``), and one statement that is a transaction by itself (an append's
statement, see `PostgresDatabase.run`'s ``single``) is one round trip instead of three.
"""

from __future__ import annotations

import re
import select
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import StoreError, UserError
from ._common import invalid_text, redact_url, store_closed, store_text
from .migrations import MIGRATIONS_TABLE, POSTGRES_MIGRATIONS, MigrationState, pending_migrations

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresDatabase", "first_line", "postgres_text", "split_url", "utc"]

_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_OWN_PARAMETERS = ("schema", "pool_min", "pool_max")

T = TypeVar("T")


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """Separate our own query parameters (``schema``, ``pool_min``, ``pool_max``) from the libpq connection
    string."""
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        (ours.__setitem__(key, value) if key in _OWN_PARAMETERS else theirs.append((key, value)))
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme
    return urlunsplit((scheme, parts.netloc, parts.path, urlencode(theirs), parts.fragment)), ours


def first_line(exc: BaseException) -> str:
    """The first line of an error's text (the driver's errors run on with detail and hints), or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def utc(value: datetime) -> datetime:
    """A timestamp the server gave, in UTC."""
    return value.astimezone(UTC)


def postgres_text(value: str | None) -> str | None:
    """Text under the log's rule (lone surrogates become U+FFFD); and PostgreSQL text cannot hold NUL characters
    (messages are JSON bytes and are unaffected): titles, pages and artifacts get U+FFFD in their place too,
    instead of failing the turn that saves them."""
    value = store_text(value)
    return value.replace("\x00", "\ufffd") if value is not None and "\x00" in value else value


class PostgresDatabase:
    """The connection pool of one PostgreSQL database (schema) and the transactions made on it.

    Opening it connects once to apply pending migrations, then opens the pool.

    Args:
        url: ``postgresql://user:password@host:port/dbname`` with optional ``?schema=NAME``, ``pool_min=N``,
            ``pool_max=N`` (other parameters go to libpq).
        connect_timeout: Seconds to wait for the first connection.

    Attributes:
        url: The URL with any password replaced (for messages).
        schema: The schema of the tables, or None for the connection's default.
        prefix: What table names are qualified with (``"schema".`` or nothing).
        conninfo: The libpq connection string.
        driver: The ``psycopg`` module.

    Raises:
        UserError: if the ``postgres`` extra is not installed or the URL is malformed.
        StoreError: if the server cannot be reached or its schema is newer than this code knows.
    """

    def __init__(self, url: str, *, connect_timeout: float) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover - depends on the install
            raise UserError("PostgreSQL needs the 'postgres' extra: pip install 'threadline[postgres]'") from None
        self.url = redact_url(url)
        conninfo, ours = split_url(url)
        schema = ours.get("schema")
        if schema is not None and not _SCHEMA.match(schema):
            raise UserError(f"invalid schema name {schema!r} in {self.url}: use letters, digits and '_'")
        self.schema = schema
        self.prefix = f'"{schema}".' if schema else ""
        try:
            pool_min = int(ours.get("pool_min", "1"))
            pool_max = int(ours.get("pool_max", "8"))
        except ValueError:
            raise UserError(f"pool_min and pool_max must be integers in {self.url}") from None
        self.driver = psycopg
        self.conninfo = conninfo
        self.connect_timeout = connect_timeout
        try:
            first = psycopg.connect(conninfo, connect_timeout=max(1, round(connect_timeout)))
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.url}: {first_line(exc)}") from None
        try:
            with self.errors():
                self._migrate(first)
        finally:
            first.close()
        self._pool_size = max(1, pool_max, pool_min)
        self._pool = ConnectionPool(
            conninfo,
            min_size=max(0, pool_min),
            max_size=self._pool_size,
            open=False,
            name="threadline",
            kwargs={"autocommit": True},
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except Exception as exc:
            self._pool.close()
            raise StoreError(f"cannot open a connection pool to {self.url}: {first_line(exc)}") from None
        self.closed = False

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn what the driver raises inside the block into a `StoreError` naming the database."""
        try:
            yield
        except self.driver.Error as exc:
            raise StoreError(f"{self.url}: {first_line(exc)}") from None
        except UnicodeEncodeError:
            # Stored text follows the log's rule before it gets here; what is left is a key (an id) to look up.
            raise StoreError(f"{self.url}: {invalid_text()}") from None

    @contextmanager
    def tx(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in one transaction: committed when the block ends, rolled back if it raises.

        The transaction starts on a connection the server has not ended, but is not run again if the connection is
        lost inside it (then `StoreError`); `run` is.
        """
        if self.closed:
            raise store_closed(self.url)
        with self.errors(), self._live_connection() as conn, conn.transaction(), conn.cursor() as cursor:
            yield cursor

    def run(self, work: Callable[[psycopg.Cursor[Any]], T], *, idempotent: bool = False, single: bool = False) -> T:
        """Call ``work`` with a cursor in one transaction (committed when it returns, rolled back if it raises) and
        return what it returns.

        With ``single``, ``work`` runs no transaction around its statements: each one is a transaction of its own,
        committed when the server answers it (one round trip, no ``BEGIN`` and ``COMMIT`` of their own); for work
        that is one statement. A connection lost during that statement leaves unknown whether it committed, so it
        runs again only if ``idempotent``.

        When the connection turns out lost (the server restarted, or ended it), ``work`` runs once more, in a new
        transaction on a connection opened for it, if that is safe: the connection was lost before the commit, so
        the transaction was rolled back; or ``idempotent`` says that running ``work`` twice is running it once (a
        read; an append of messages by id), since a connection lost during the commit leaves unknown whether it
        committed.

        Raises:
            StoreError: what ``work`` raised, the driver's error (the second one, when it was tried again), or the
                store was closed.
        """
        if self.closed:
            raise store_closed(self.url)
        with self.errors():
            try:
                with self._pool.connection() as conn:
                    if _ended(conn):
                        conn.close()  # so the pool replaces it
                        raise _Lost(None, at_commit=False)
                    return self._transaction(conn, work, single)
            except _Lost as lost:
                if lost.at_commit and not idempotent and lost.error is not None:
                    raise lost.error from None
            # A fresh connection, not the pool's next one: after a restart, the others idle there were ended too.
            with self.connect() as conn:
                try:
                    return self._transaction(conn, work, single)
                except _Lost as lost:
                    assert lost.error is not None  # a new connection is never found ended before it is used
                    raise lost.error from None

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection of its own (not from the pool), in autocommit mode as the pool's are; the caller closes
        it.

        Raises:
            psycopg.Error: if the server cannot be reached.
        """
        return self.driver.connect(self.conninfo, autocommit=True, connect_timeout=max(1, round(self.connect_timeout)))

    def _transaction(
        self, conn: psycopg.Connection[Any], work: Callable[[psycopg.Cursor[Any]], T], single: bool = False
    ) -> T:
        """``work`` in one transaction on ``conn`` (with ``single``, each statement its own, see `run`); a lost
        connection is raised as `_Lost`, saying whether it was lost while committing."""
        at_commit = single  # a single statement commits as the server answers it
        try:
            if single:
                with conn.cursor() as cursor:
                    return work(cursor)
            with conn.transaction():
                with conn.cursor() as cursor:
                    result = work(cursor)
                at_commit = True  # leaving the transaction block commits
        except self.driver.Error as exc:
            if conn.broken:
                raise _Lost(exc, at_commit=at_commit) from None
            raise
        return result

    @contextmanager
    def _live_connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool the server has not ended; those it has are closed, and the pool replaces them."""
        for _ in range(self._pool_size):
            with self._pool.connection() as conn:
                if not _ended(conn):
                    yield conn
                    return
                conn.close()
        with self._pool.connection() as conn:  # every one was ended: this one is new
            yield conn

    def one(self, sql: str, args: Sequence[Any] | Mapping[str, Any] = (), *, idempotent: bool = True) -> Any:
        """The first row one statement gives (in a transaction of its own, see `run`), or None.

        Args:
            sql: The statement.
            args: Its parameters.
            idempotent: Whether running the statement twice is running it once (reads, and writes that set values);
                an insert that must happen once says False.
        """

        def work(cursor: psycopg.Cursor[Any]) -> Any:
            cursor.execute(sql, args)
            return cursor.fetchone()

        return self.run(work, idempotent=idempotent)

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """Every row one statement gives (in a transaction of its own, see `run`); for reads."""

        def work(cursor: psycopg.Cursor[Any]) -> list[Any]:
            cursor.execute(sql, args)
            return cursor.fetchall()

        return self.run(work, idempotent=True)

    def close(self) -> None:
        """Close the connection pool; later calls raise `StoreError`."""
        if not self.closed:
            self.closed = True
            self._pool.close()

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        p = self.prefix
        with conn.transaction(), conn.cursor() as cursor:
            # Hosts starting together serialize here; the lock ends with the transaction.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (zlib.crc32(f"threadline:{self.schema}".encode()),))
            if self.schema:
                cursor.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {p}{MIGRATIONS_TABLE} "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            cursor.execute(f"SELECT version, name FROM {p}{MIGRATIONS_TABLE} ORDER BY version")
            state = MigrationState.from_rows(cursor.fetchall())
            for version, migration in pending_migrations(state, POSTGRES_MIGRATIONS, self.url):
                for statement in migration.sql(p):
                    cursor.execute(statement)
                if migration.backfill is not None:
                    migration.backfill(cursor, p)
                cursor.execute(
                    f"INSERT INTO {p}{MIGRATIONS_TABLE} (version, name) VALUES (%s, %s)", (version, migration.name)
                )

    def schema_version(self) -> int:
        """The number of migrations applied to this database (schema)."""
        row = self.one(f"SELECT max(version) FROM {self.prefix}{MIGRATIONS_TABLE}")
        return int(row[0] or 0) if row else 0


class _Lost(Exception):
    """A transaction's connection was lost (``error``, None when it was found ended before use), before its commit
    or while committing (``at_commit``)."""

    def __init__(self, error: Exception | None, *, at_commit: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.at_commit = at_commit


def _ended(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server ended an idle connection (a restart, ``pg_terminate_backend``): an idle connection
    receives nothing, so a socket with something to read (the server's farewell, or the end of the stream) shows it,
    without a round trip."""
    if conn.closed:
        return True
    try:
        fd = conn.pgconn.socket
    except Exception:  # psycopg says "the connection is lost": it has no socket left
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])  # Windows has no poll
    except (OSError, ValueError):  # cannot tell: the transaction finds out
        return False
