"""The PostgreSQL backend: one database shared by many processes on many hosts (the ``postgres`` extra).

psycopg 3 and psycopg-pool are imported here only, and this module is imported only when a ``postgresql://`` URL is
opened, so ``import threadline`` never pays for the driver.

Ordering under concurrent writers. Each conversation row carries ``next_seq``. An append is one statement in one
transaction::

    WITH c AS (UPDATE conversations SET next_seq = next_seq + n ... WHERE id = $1 RETURNING next_seq - n AS base),
         ins AS (INSERT INTO messages SELECT ..., c.base + ordinality - 1, ... ON CONFLICT (conversation_id, id)
                 DO NOTHING RETURNING 1)
    SELECT base, count(ins)

The ``UPDATE`` takes the conversation's row lock, which it holds until commit, so appends to one conversation are
serialized across every host while appends to different conversations run in parallel. A writer that waited for the
lock re-reads the committed ``next_seq`` (READ COMMITTED), so ``seq`` values never repeat; and because the next
writer can only take the lock after the previous one committed, transactions commit in ``seq`` order — a reader
never sees a later message without the earlier ones, so every reader sees one order. The unique
``(conversation_id, id)`` constraint with ``ON CONFLICT DO NOTHING`` makes appends idempotent, including a retry racing
its own first attempt. Timestamps come from the database server's clock, so hosts with skewed clocks still agree.

Writer leases (`try_lease`) are session advisory locks, keyed by a hash of the schema and the conversation id, held
on one connection kept for them (beside the pool, so a long turn never takes a pooled connection away). The server
drops them when that connection ends: at once when the holding process dies on a live host, and within about half a
minute (TCP keepalives) when its host vanishes.

Tables live in the schema named by ``?schema=NAME`` in the URL (created if missing), else in the connection's default
schema. Migrations run under a transaction-scoped advisory lock, so hosts starting together migrate once.
"""

from __future__ import annotations

import hashlib
import re
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._artifact_names import artifact_uri
from .._ids import new_id
from ..errors import StoreError, UserError
from ..messages import Message, MessageList
from ..serialization import decode_message, decode_messages, encode_message
from ._common import (
    check_artifact,
    check_page,
    check_slice,
    conversation_exists,
    decode_json,
    different_message,
    distinct_messages,
    encode_json,
    encode_metadata,
    invalid_text,
    missing_artifact,
    missing_conversation,
    missing_message,
    missing_page,
    redact_url,
    same_stored,
    store_closed,
    store_text,
    unique_messages,
)
from ._search import conversation_figures, fork_end, postgres_query, query_words, search_text, snippet
from ._sql_rows import CONVERSATION_COLUMNS, PAGE_COLUMNS, conversation_from_row, page_from_row
from .base import ConversationInfo, ConversationSummary, ImportItem, MessagePage, PageInfo, Store
from .leases import Lease, appended_behind, local_leases
from .migrations import MIGRATIONS_TABLE, POSTGRES_MIGRATIONS, MigrationState, pending_migrations

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_OWN_PARAMETERS = ("schema", "pool_min", "pool_max")
# metadata as text, decoded by msgspec: psycopg's jsonb loader (the json module) is several times slower.
_CONVERSATION_COLUMNS = ", ".join(f"{c}::text" if c == "metadata" else c for c in CONVERSATION_COLUMNS)
_PAGE_COLUMNS = ", ".join(PAGE_COLUMNS)
_SUMMARY_COLUMNS = ", ".join(
    f"c.{column}::text" if column == "metadata" else f"c.{column}"
    for column in (*CONVERSATION_COLUMNS, "last_model", "failures", "forked_from")
)


def _split_url(url: str) -> tuple[str, dict[str, str]]:
    """Separate our own query parameters from the libpq connection string."""
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        (ours.__setitem__(key, value) if key in _OWN_PARAMETERS else theirs.append((key, value)))
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme
    return urlunsplit((scheme, parts.netloc, parts.path, urlencode(theirs), parts.fragment)), ours


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _text(value: str | None) -> str | None:
    """Text under the log's rule (lone surrogates become U+FFFD); and PostgreSQL text cannot hold NUL characters
    (messages are JSON bytes and are unaffected): titles, pages and artifacts get U+FFFD in their place too,
    instead of failing the turn that saves them."""
    value = store_text(value)
    return value.replace("\x00", "\ufffd") if value is not None and "\x00" in value else value


class PostgresStore(Store):
    """A store in a PostgreSQL database, safe for many writers on many hosts.

    Args:
        url: ``postgresql://user:password@host:port/dbname`` with optional ``?schema=NAME``, ``pool_min=N``,
            ``pool_max=N`` (other parameters go to libpq).
        connect_timeout: Seconds to wait for the first connection.

    Raises:
        UserError: if the ``postgres`` extra is not installed or the URL is malformed.
        StoreError: if the server cannot be reached or its schema is newer than this code knows.
    """

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover - depends on the install
            raise UserError("PostgreSQL needs the 'postgres' extra: pip install 'threadline[postgres]'") from None
        self.url = redact_url(url)
        conninfo, ours = _split_url(url)
        schema = ours.get("schema")
        if schema is not None and not _SCHEMA.match(schema):
            raise UserError(f"invalid schema name {schema!r} in {self.url}: use letters, digits and '_'")
        self.schema = schema
        self._prefix = f'"{schema}".' if schema else ""
        try:
            pool_min = int(ours.get("pool_min", "1"))
            pool_max = int(ours.get("pool_max", "8"))
        except ValueError:
            raise UserError(f"pool_min and pool_max must be integers in {self.url}") from None
        self._psycopg = psycopg
        self._conninfo = conninfo
        self._connect_timeout = connect_timeout
        self._lease_conn: psycopg.Connection[Any] | None = None
        self._lease_lock = threading.Lock()
        try:
            first = psycopg.connect(conninfo, connect_timeout=max(1, round(connect_timeout)))
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.url}: {_first_line(exc)}") from None
        try:
            with self._errors():
                self._migrate(first)
        finally:
            first.close()
        self._pool = ConnectionPool(
            conninfo, min_size=max(0, pool_min), max_size=max(1, pool_max, pool_min), open=False, name="threadline"
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except Exception as exc:
            self._pool.close()
            raise StoreError(f"cannot open a connection pool to {self.url}: {_first_line(exc)}") from None
        self._closed = False

    # -- connections ------------------------------------------------------------------------------------------
    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._psycopg.Error as exc:
            raise StoreError(f"{self.url}: {_first_line(exc)}") from None
        except UnicodeEncodeError:
            # Stored text follows the log's rule before it gets here; what is left is a key (an id) to look up.
            raise StoreError(f"{self.url}: {invalid_text()}") from None

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in one transaction: committed when the block ends, rolled back if it raises."""
        if self._closed:
            raise store_closed(self.url)
        with self._errors(), self._pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            yield cursor

    def _one(self, sql: str, args: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        """The first row one statement gives (in a transaction of its own), or None."""
        with self._tx() as cursor:
            cursor.execute(sql, args)
            return cursor.fetchone()

    def close(self) -> None:
        """Close the connection pool (and the lease connection: leases still held are released with it)."""
        if not getattr(self, "_closed", True):
            self._closed = True
            self._pool.close()
            with self._lease_lock:
                conn, self._lease_conn = self._lease_conn, None
            if conn is not None:
                conn.close()

    # -- schema -----------------------------------------------------------------------------------------------
    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        p = self._prefix
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
        row = self._one(f"SELECT max(version) FROM {self._prefix}{MIGRATIONS_TABLE}")
        return int(row[0] or 0) if row else 0

    # -- conversations ----------------------------------------------------------------------------------------
    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        conversation_id = id or new_id()
        row = self._one(
            f"INSERT INTO {self._prefix}conversations (id, title, created_at, updated_at, metadata) "
            f"VALUES (%s, %s, now(), now(), %s::jsonb) ON CONFLICT (id) DO NOTHING "
            f"RETURNING {_CONVERSATION_COLUMNS}",
            (conversation_id, _text(title), encode_metadata(metadata).decode()),
        )
        if row is None:
            raise conversation_exists(conversation_id, self.url)
        return conversation_from_row(row, _utc)

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        row = self._one(
            f"SELECT {_CONVERSATION_COLUMNS} FROM {self._prefix}conversations WHERE id = %s", (conversation_id,)
        )
        if row is None:
            raise missing_conversation(conversation_id, self.url)
        return conversation_from_row(row, _utc)

    def has_conversation(self, conversation_id: str) -> bool:
        return self._one(f"SELECT 1 FROM {self._prefix}conversations WHERE id = %s", (conversation_id,)) is not None

    def list_conversations(self, limit: int = 50, offset: int = 0) -> list[ConversationInfo]:
        check_slice(offset, limit)
        with self._tx() as cursor:
            cursor.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM {self._prefix}conversations "
                "ORDER BY updated_at DESC, id DESC LIMIT %s OFFSET %s",
                (limit, offset),
            )
            rows = cursor.fetchall()
        return [conversation_from_row(row, _utc) for row in rows]

    def update_metadata(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        active_mode: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConversationInfo:
        extra = encode_metadata(metadata).decode()
        # jsonb || merges the new keys into the stored object in one atomic statement.
        row = self._one(
            f"UPDATE {self._prefix}conversations SET title = coalesce(%s, title), "
            "active_mode = coalesce(%s, active_mode), metadata = metadata || %s::jsonb, updated_at = now() "
            f"WHERE id = %s RETURNING {_CONVERSATION_COLUMNS}",
            (_text(title), _text(active_mode), extra, conversation_id),
        )
        if row is None:
            raise missing_conversation(conversation_id, self.url)
        return conversation_from_row(row, _utc)

    def delete_conversation(self, conversation_id: str) -> None:
        with self._tx() as cursor:
            # Messages and artifacts go with it (ON DELETE CASCADE).
            cursor.execute(f"DELETE FROM {self._prefix}conversations WHERE id = %s", (conversation_id,))
            deleted = cursor.rowcount
        if not deleted:
            raise missing_conversation(conversation_id, self.url)

    # -- the log ----------------------------------------------------------------------------------------------
    def append(self, conversation_id: str, messages: Iterable[Message], *, expected_count: int | None = None) -> None:
        items = unique_messages(list(messages))
        ids = [message.id for message in items]
        payloads = [encode_message(message) for message in items]
        texts = [search_text(message) for message in items]
        p = self._prefix
        with self._tx() as cursor:
            if not items:
                cursor.execute(f"SELECT 1 FROM {p}conversations WHERE id = %s", (conversation_id,))
                if cursor.fetchone() is None:
                    raise missing_conversation(conversation_id, self.url)
                return
            count = len(items)
            model, failures = conversation_figures(items)
            cursor.execute(
                f"WITH c AS (UPDATE {p}conversations SET next_seq = next_seq + %(n)s, "
                "message_count = message_count + %(n)s, updated_at = now(), "
                "last_model = coalesce(%(model)s, last_model), failures = failures + %(failures)s "
                "WHERE id = %(cid)s "
                "AND (%(expected)s::bigint IS NULL OR message_count = %(expected)s::bigint) "
                "RETURNING next_seq - %(n)s AS base), "
                f"ins AS (INSERT INTO {p}messages (conversation_id, seq, id, data, search) "
                "SELECT %(cid)s, c.base + u.ord - 1, u.id, u.data, to_tsvector('simple', u.body) FROM c, "
                "unnest(%(ids)s::text[], %(data)s::bytea[], %(texts)s::text[]) "
                "WITH ORDINALITY AS u(id, data, body, ord) "
                "ON CONFLICT (conversation_id, id) DO NOTHING RETURNING 1) "
                "SELECT (SELECT base FROM c), (SELECT count(*) FROM ins)",
                {
                    "n": count,
                    "cid": conversation_id,
                    "ids": ids,
                    "data": payloads,
                    "texts": texts,
                    "model": model,
                    "failures": failures,
                    "expected": expected_count,
                },
            )
            row = cursor.fetchone()
            if row is None or row[0] is None:
                cursor.execute(f"SELECT message_count FROM {p}conversations WHERE id = %s", (conversation_id,))
                found = cursor.fetchone()
                if found is None:
                    raise missing_conversation(conversation_id, self.url)
                assert expected_count is not None  # the only other reason the update matched no row
                raise appended_behind(conversation_id, expected_count, int(found[0]))
            if int(row[1]) != count:
                # Some ids were stored already: fine for the same message again (a retry), refused for another
                # (raising here rolls the whole append back).
                cursor.execute(
                    f"SELECT id, data FROM {p}messages WHERE conversation_id = %s AND id = ANY(%s)",
                    (conversation_id, ids),
                    binary=True,
                )
                wanted = dict(zip(ids, payloads, strict=True))
                for message_id, data in cursor.fetchall():
                    if not same_stored(bytes(data), wanted[message_id]):
                        raise different_message(conversation_id, message_id, self.url)
                # This transaction's rows are the ones at or after its base seq.
                cursor.execute(
                    f"SELECT id FROM {p}messages WHERE conversation_id = %s AND seq >= %s", (conversation_id, row[0])
                )
                inserted = {r[0] for r in cursor.fetchall()}
                # Some ids were already stored: the count and figures above assumed every message was new.
                skipped = [message for message in items if message.id not in inserted]
                _, skipped_failures = conversation_figures(skipped)
                new_model, _ = conversation_figures(message for message in items if message.id in inserted)
                cursor.execute(
                    f"UPDATE {p}conversations SET message_count = message_count - %s, failures = failures - %s, "
                    "last_model = coalesce(%s, last_model) WHERE id = %s",
                    (len(skipped), skipped_failures, new_model, conversation_id),
                )

    # -- writer leases ---------------------------------------------------------------------------------------
    def try_lease(self, conversation_id: str) -> Lease | None:
        if self._closed:
            raise store_closed(self.url)
        digest = hashlib.blake2b(f"threadline-lease\0{self.schema or ''}\0{conversation_id}".encode(), digest_size=8)
        key = int.from_bytes(digest.digest(), "big", signed=True)
        # An advisory lock is re-entrant within its session, and every lease of this store shares one session:
        # the in-process table keeps two writers of this process apart.
        local = local_leases(self).try_lease(conversation_id, on_release=lambda: self._unlock(key))
        if local is None:
            return None
        try:
            taken = self._lease_query("SELECT pg_try_advisory_lock(%s)", key, reconnect=True)
        except BaseException:
            local.release()
            raise
        if not taken:
            local.release()
            return None
        return local

    def _lease_query(self, sql: str, key: int, *, reconnect: bool) -> bool:
        """Run one advisory-lock statement on the lease connection and return its boolean answer.

        With ``reconnect``, a lost connection is opened again (once); without it (an unlock), a lost connection
        means there is nothing left to unlock: its locks died with it.
        """
        psycopg = self._psycopg
        with self._lease_lock:
            for attempt in (1, 2):
                conn = self._lease_conn
                if conn is None or conn.closed:
                    if not reconnect:
                        return False
                    conn = self._lease_conn = self._open_lease_connection()
                try:
                    row = conn.execute(sql, (key,)).fetchone()
                    return bool(row and row[0])
                except psycopg.OperationalError as exc:
                    conn.close()
                    self._lease_conn = None
                    if not reconnect:
                        return False
                    if attempt == 2:
                        raise StoreError(f"{self.url}: {_first_line(exc)}") from None
                except psycopg.Error as exc:
                    raise StoreError(f"{self.url}: {_first_line(exc)}") from None
        return False  # pragma: no cover - the loop always returns or raises

    def _open_lease_connection(self) -> psycopg.Connection[Any]:
        driver = self._psycopg
        try:
            conn: psycopg.Connection[Any] = driver.connect(
                self._conninfo,
                autocommit=True,
                connect_timeout=max(1, round(self._connect_timeout)),
                # A host that vanishes is noticed within about 25 s, and its leases freed.
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=3,
            )
        except driver.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.url}: {_first_line(exc)}") from None
        return conn

    def _unlock(self, key: int) -> None:
        if self._closed:
            return  # the lease connection is closed: its locks went with it
        self._lease_query("SELECT pg_advisory_unlock(%s)", key, reconnect=False)

    def load(self, conversation_id: str) -> MessageList:
        p = self._prefix
        with self._tx() as cursor:
            cursor.execute(f"SELECT 1 FROM {p}conversations WHERE id = %s", (conversation_id,))
            if cursor.fetchone() is None:
                raise missing_conversation(conversation_id, self.url)
            cursor.execute(
                f"SELECT data FROM {p}messages WHERE conversation_id = %s ORDER BY seq", (conversation_id,), binary=True
            )
            rows = [bytes(row[0]) for row in cursor.fetchall()]
        return MessageList.unchecked(decode_messages(rows))

    # -- reading by sequence number, search, forks (the viewer) ----------------------------------------------
    def _check_conversation(self, cursor: psycopg.Cursor[Any], conversation_id: str) -> None:
        cursor.execute(f"SELECT 1 FROM {self._prefix}conversations WHERE id = %s", (conversation_id,))
        if cursor.fetchone() is None:
            raise missing_conversation(conversation_id, self.url)

    def read_tail(self, conversation_id: str, limit: int, *, before: int | None = None) -> MessagePage:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        with self._tx() as cursor:
            self._check_conversation(cursor, conversation_id)
            cursor.execute(
                f"SELECT seq, data FROM {self._prefix}messages WHERE conversation_id = %s AND seq < %s "
                "ORDER BY seq DESC LIMIT %s",
                (conversation_id, 2**62 if before is None else before, limit + 1),
                binary=True,
            )
            rows = cursor.fetchall()
        has_older = len(rows) > limit
        rows = rows[:limit][::-1]
        return MessagePage(decode_messages([bytes(r[1]) for r in rows]), [int(r[0]) for r in rows], has_older)

    def read_after(self, conversation_id: str, after: int, limit: int | None = None) -> MessagePage:
        check_slice(0, limit)
        p = self._prefix
        with self._tx() as cursor:
            self._check_conversation(cursor, conversation_id)
            cursor.execute(
                f"SELECT seq, data FROM {p}messages WHERE conversation_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                (conversation_id, after, limit),
                binary=True,
            )
            rows = cursor.fetchall()
            has_older = False
            if rows:
                cursor.execute(
                    f"SELECT 1 FROM {p}messages WHERE conversation_id = %s AND seq < %s LIMIT 1",
                    (conversation_id, rows[0][0]),
                )
                has_older = cursor.fetchone() is not None
        return MessagePage(decode_messages([bytes(r[1]) for r in rows]), [int(r[0]) for r in rows], has_older)

    def message_seq(self, conversation_id: str, message_id: str) -> int:
        row = self._one(
            f"SELECT seq FROM {self._prefix}messages WHERE conversation_id = %s AND id = %s",
            (conversation_id, message_id),
        )
        if row is None:
            raise missing_message(conversation_id, message_id)
        return int(row[0])

    def list_summaries(self, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        with self._tx() as cursor:
            cursor.execute(
                f"SELECT {_SUMMARY_COLUMNS} FROM {self._prefix}conversations AS c "
                "ORDER BY c.updated_at DESC, c.id DESC LIMIT %s OFFSET %s",
                (limit, offset),
            )
            rows = cursor.fetchall()
        return [_summary(row) for row in rows]

    def search_conversations(self, query: str, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        words = query_words(query)
        if not words:
            return []
        p = self._prefix
        with self._tx() as cursor:
            cursor.execute(
                f"WITH hits AS (SELECT conversation_id, max(seq) AS seq FROM {p}messages "
                "WHERE search @@ to_tsquery('simple', %s) GROUP BY conversation_id) "
                f"SELECT {_SUMMARY_COLUMNS}, hits.seq FROM {p}conversations AS c "
                "LEFT JOIN hits ON hits.conversation_id = c.id "
                "WHERE hits.seq IS NOT NULL OR coalesce(c.title, '') ILIKE ALL(%s) "
                "ORDER BY c.updated_at DESC, c.id DESC LIMIT %s OFFSET %s",
                (postgres_query(words), [f"%{word}%" for word in words], limit, offset),
            )
            rows = cursor.fetchall()
            wanted = [(row[0], row[-1]) for row in rows if row[-1] is not None]
            matched: dict[str, tuple[str, bytes]] = {}
            if wanted:
                cursor.execute(
                    f"SELECT m.conversation_id, m.id, m.data FROM {p}messages AS m "
                    "JOIN unnest(%s::text[], %s::bigint[]) AS w(cid, seq) "
                    "ON m.conversation_id = w.cid AND m.seq = w.seq",
                    ([w[0] for w in wanted], [w[1] for w in wanted]),
                    binary=True,
                )
                matched = {r[0]: (r[1], bytes(r[2])) for r in cursor.fetchall()}
        out = []
        for row in rows:
            hit = matched.get(row[0])
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
        p = self._prefix
        with self._tx() as cursor:
            # The row lock keeps appends out while the fork reads the log up to its cut.
            cursor.execute(
                f"SELECT title, active_mode, metadata::text FROM {p}conversations WHERE id = %s FOR SHARE",
                (conversation_id,),
            )
            source = cursor.fetchone()
            if source is None:
                raise missing_conversation(conversation_id, self.url)
            source_title, mode, metadata = source
            cursor.execute(f"SELECT seq FROM {p}messages WHERE conversation_id = %s AND id = %s", (conversation_id, at))
            found = cursor.fetchone()
            if found is None:
                raise missing_message(conversation_id, at)
            cursor.execute(
                f"SELECT seq, data FROM {p}messages WHERE conversation_id = %s AND seq > %s ORDER BY seq LIMIT 256",
                (conversation_id, found[0]),
                binary=True,
            )
            following = cursor.fetchall()
            extra = fork_end(decode_messages([bytes(r[1]) for r in following]))
            cut = int(following[extra - 1][0]) if extra else int(found[0])
            merged = decode_json(metadata)
            merged["forked_from"] = {"conversation": conversation_id, "message": at}
            cursor.execute(
                f"INSERT INTO {p}conversations (id, title, created_at, updated_at, active_mode, metadata, "
                "forked_from, next_seq) VALUES (%s, %s, now(), now(), %s, %s::jsonb, %s, %s) "
                "ON CONFLICT (id) DO NOTHING RETURNING 1",
                (
                    fork_id,
                    _text(title) or source_title,
                    mode,
                    encode_json(merged, "metadata").decode(),
                    conversation_id,
                    cut + 1,
                ),
            )
            if cursor.fetchone() is None:
                raise conversation_exists(fork_id, self.url)
            cursor.execute(
                f"INSERT INTO {p}messages (conversation_id, seq, id, data, search) "
                f"SELECT %s, seq, id, data, search FROM {p}messages WHERE conversation_id = %s AND seq <= %s",
                (fork_id, conversation_id, cut),
            )
            copied = cursor.rowcount
            cursor.execute(
                f"SELECT data FROM {p}messages WHERE conversation_id = %s ORDER BY seq", (fork_id,), binary=True
            )
            model, failures = conversation_figures(decode_messages([bytes(r[0]) for r in cursor.fetchall()]))
            cursor.execute(
                f"UPDATE {p}conversations SET message_count = %s, last_model = %s, failures = %s WHERE id = %s",
                (copied, model, failures, fork_id),
            )
        return self.get_conversation(fork_id)

    def list_forks(self, conversation_id: str) -> list[ConversationInfo]:
        with self._tx() as cursor:
            cursor.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM {self._prefix}conversations WHERE forked_from = %s "
                "ORDER BY created_at, id",
                (conversation_id,),
            )
            rows = cursor.fetchall()
        return [conversation_from_row(row, _utc) for row in rows]

    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        p = self._prefix
        infos: list[ConversationInfo] = []
        with self._tx() as cursor:
            for item in items:
                info = item.info
                messages = distinct_messages(item.messages, info.id)
                cursor.execute(
                    f"INSERT INTO {p}conversations (id, title, created_at, updated_at, active_mode, metadata, "
                    "message_count, next_seq) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s) "
                    f"ON CONFLICT (id) DO NOTHING RETURNING {_CONVERSATION_COLUMNS}",
                    (
                        info.id,
                        _text(info.title),
                        info.created_at,
                        info.updated_at,
                        _text(info.active_mode),
                        encode_metadata(info.metadata).decode(),
                        len(messages),
                        len(messages),
                    ),
                )
                row = cursor.fetchone()
                if row is None:
                    raise conversation_exists(info.id, self.url, importing=True)
                infos.append(conversation_from_row(row, _utc))
                if messages:
                    cursor.execute(
                        f"INSERT INTO {p}messages (conversation_id, seq, id, data, search) "
                        "SELECT %s, u.ord - 1, u.id, u.data, to_tsvector('simple', u.body) "
                        "FROM unnest(%s::text[], %s::bytea[], %s::text[]) WITH ORDINALITY AS u(id, data, body, ord)",
                        (
                            info.id,
                            [m.id for m in messages],
                            [encode_message(m) for m in messages],
                            [search_text(m) for m in messages],
                        ),
                    )
                    model, failures = conversation_figures(messages)
                    cursor.execute(
                        f"UPDATE {p}conversations SET last_model = %s, failures = %s WHERE id = %s",
                        (model, failures, info.id),
                    )
        return infos

    # -- artifacts --------------------------------------------------------------------------------------------
    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        content = check_artifact(conversation_id, name, content)
        p = self._prefix
        with self._tx() as cursor:
            cursor.execute(
                f"INSERT INTO {p}artifacts (conversation_id, name, content, created_at) "
                f"SELECT id, %s, %s, now() FROM {p}conversations WHERE id = %s "
                "ON CONFLICT (conversation_id, name) DO UPDATE SET content = excluded.content, created_at = now()",
                (name, _text(content), conversation_id),
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
        row = self._one(
            f"SELECT {sql} FROM {self._prefix}artifacts WHERE conversation_id = %s AND name = %s",
            (*args, conversation_id, name),
        )
        if row is None:
            raise missing_artifact(conversation_id, name)
        return str(row[0])

    # -- request cache ----------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> Any | None:
        row = self._one(f"SELECT value FROM {self._prefix}cache WHERE key = %s", (key,))
        return None if row is None else decode_json(row[0])

    def cache_put(self, key: str, value: Any) -> None:
        data = encode_json(value, "cache value").decode()
        with self._tx() as cursor:
            cursor.execute(
                f"INSERT INTO {self._prefix}cache (key, value, created_at) VALUES (%s, %s, now()) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = now()",
                (key, data),
            )

    # -- pages ------------------------------------------------------------------------------------------------
    def save_page(
        self, title: str, html: str, css: str = "", js: str = "", *, conversation_id: str | None = None
    ) -> PageInfo:
        title, html, css, js = check_page(title, html, css, js)
        # The server stamps the page, as it stamps conversations: hosts with skewed clocks still agree.
        row = self._one(
            f"INSERT INTO {self._prefix}pages ({_PAGE_COLUMNS}) "
            f"VALUES (%s, %s, %s, %s, %s, %s, now()) RETURNING {_PAGE_COLUMNS}",
            (new_id(), conversation_id, _text(title), _text(html), _text(css), _text(js)),
        )
        if row is None:  # pragma: no cover - INSERT ... RETURNING always returns the row
            raise StoreError(f"the page was not saved in {self.url}")
        return page_from_row(row, _utc)

    def get_page(self, page_id: str) -> PageInfo:
        row = self._one(f"SELECT {_PAGE_COLUMNS} FROM {self._prefix}pages WHERE id = %s", (page_id,))
        if row is None:
            raise missing_page(page_id, self.url)
        return page_from_row(row, _utc)

    def list_pages(self, conversation_id: str) -> list[PageInfo]:
        with self._tx() as cursor:
            cursor.execute(
                f"SELECT {_PAGE_COLUMNS} FROM {self._prefix}pages WHERE conversation_id = %s ORDER BY created_at, id",
                (conversation_id,),
            )
            rows = cursor.fetchall()
        return [page_from_row(row, _utc) for row in rows]

    def __repr__(self) -> str:
        return f"<PostgresStore {self.url}>"


def _summary(row: Sequence[Any], *, match_id: str | None = None, snippet: str | None = None) -> ConversationSummary:
    """A list entry from a row of `_SUMMARY_COLUMNS` (extra columns after them are ignored)."""
    width = len(CONVERSATION_COLUMNS)
    return ConversationSummary(
        info=conversation_from_row(row[:width], _utc),
        model=row[width],
        failures=int(row[width + 1]),
        forked_from=row[width + 2],
        match_id=match_id,
        snippet=snippet,
    )
