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

The usual append (every message new, the count as expected) is that statement without ``ON CONFLICT``, sent as a
transaction by itself (the connection in autocommit): one round trip instead of three (``BEGIN``, the statement,
``COMMIT``). A stored id fails it (a unique violation: it wrote nothing), and an update that matched no row leaves it
nothing to insert; either way the append is then made as above, in a transaction with its checks.

Writer leases (`try_lease`) are session advisory locks, keyed by a hash of the schema and the conversation id, held
on one connection kept for them (beside the pool, so a long turn never takes a pooled connection away). The server
drops them when that connection ends: at once when the holding process dies on a live host, and within about half a
minute (TCP keepalives) when its host vanishes.

Tables live in the schema named by ``?schema=NAME`` in the URL (created if missing), else in the connection's default
schema. Migrations run under a transaction-scoped advisory lock, so hosts starting together migrate once.

Where the parts live: the URL, the pool, transactions and migrations in `threadline.store._postgres_db`; writer
leases in `threadline.store._postgres_leases`; artifacts, the request cache and pages in
`threadline.store._postgres_side_tables`. This module keeps the conversations, their logs and their search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._ids import new_id
from .._page_ids import page_ids
from ..message_list import MessageList
from ..message_types import Message
from ..serialization import decode_messages, encode_message
from ._common import (
    check_slice,
    conversation_exists,
    distinct_messages,
    encode_json,
    encode_metadata,
    fork_title,
    missing_conversation,
    missing_message,
    same_stored,
    unique_messages,
)
from ._postgres_db import PostgresDatabase, postgres_text, utc
from ._postgres_leases import AdvisoryLeases
from ._postgres_side_tables import PostgresSideTables
from ._search import conversation_figures, fork_end, postgres_query, query_words, search_text
from ._sql_rows import (
    CONVERSATION_COLUMNS,
    SUMMARY_COLUMNS,
    check_same_messages,
    conversation_from_row,
    fork_metadata,
    message_page,
    search_summaries,
    summary_from_row,
    tail_page,
)
from .base import ConversationInfo, ConversationSummary, ImportItem, MessagePage, Store
from .leases import Lease, appended_behind

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

# metadata as text, decoded by msgspec: psycopg's jsonb loader (the json module) is several times slower.
_CONVERSATION_COLUMNS = ", ".join(f"{c}::text" if c == "metadata" else c for c in CONVERSATION_COLUMNS)
_SUMMARY_COLUMNS = ", ".join(f"c.{c}::text" if c == "metadata" else f"c.{c}" for c in SUMMARY_COLUMNS)


class PostgresStore(PostgresSideTables, Store):
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
        self._db = PostgresDatabase(url, connect_timeout=connect_timeout)
        self.url = self._db.url
        self.schema = self._db.schema
        self._leases = AdvisoryLeases(self._db)

    def close(self) -> None:
        """Close the connection pool (and the lease connection: leases still held are released with it)."""
        db = getattr(self, "_db", None)
        if db is not None and not db.closed:
            db.close()
            self._leases.close()

    def schema_version(self) -> int:
        """The number of migrations applied to this database (schema)."""
        return self._db.schema_version()

    def try_lease(self, conversation_id: str) -> Lease | None:
        return self._leases.try_lease(conversation_id)

    # -- conversations ----------------------------------------------------------------------------------------
    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        conversation_id = id or new_id()
        row = self._db.one(
            f"INSERT INTO {self._db.prefix}conversations (id, title, created_at, updated_at, metadata) "
            f"VALUES (%s, %s, now(), now(), %s::jsonb) ON CONFLICT (id) DO NOTHING "
            f"RETURNING {_CONVERSATION_COLUMNS}",
            (conversation_id, postgres_text(title), encode_metadata(metadata).decode()),
            idempotent=False,  # a repeat would find the row it made, and say it exists
        )
        if row is None:
            raise conversation_exists(conversation_id, self.url)
        return conversation_from_row(row, utc)

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        row = self._db.one(
            f"SELECT {_CONVERSATION_COLUMNS} FROM {self._db.prefix}conversations WHERE id = %s", (conversation_id,)
        )
        if row is None:
            raise missing_conversation(conversation_id, self.url)
        return conversation_from_row(row, utc)

    def has_conversation(self, conversation_id: str) -> bool:
        return (
            self._db.one(f"SELECT 1 FROM {self._db.prefix}conversations WHERE id = %s", (conversation_id,)) is not None
        )

    def list_conversations(self, limit: int = 50, offset: int = 0) -> list[ConversationInfo]:
        check_slice(offset, limit)
        rows = self._db.all(
            f"SELECT {_CONVERSATION_COLUMNS} FROM {self._db.prefix}conversations "
            "ORDER BY updated_at DESC, id DESC LIMIT %s OFFSET %s",
            (limit, offset),
        )
        return [conversation_from_row(row, utc) for row in rows]

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
        row = self._db.one(
            f"UPDATE {self._db.prefix}conversations SET title = coalesce(%s, title), "
            "active_mode = coalesce(%s, active_mode), metadata = metadata || %s::jsonb, updated_at = now() "
            f"WHERE id = %s RETURNING {_CONVERSATION_COLUMNS}",
            (postgres_text(title), postgres_text(active_mode), extra, conversation_id),
        )
        if row is None:
            raise missing_conversation(conversation_id, self.url)
        return conversation_from_row(row, utc)

    def delete_conversation(self, conversation_id: str) -> None:
        with self._db.tx() as cursor:
            # Messages, artifacts and its shares of other conversations' pages go with it (ON DELETE CASCADE). The
            # row lock it takes waits for a fork being made of it (which holds the row FOR SHARE), so that fork's
            # shares are seen below.
            cursor.execute(f"DELETE FROM {self._db.prefix}conversations WHERE id = %s", (conversation_id,))
            if not cursor.rowcount:
                raise missing_conversation(conversation_id, self.url)
            self._delete_side_rows(cursor, conversation_id)

    # -- the log ----------------------------------------------------------------------------------------------
    def append(self, conversation_id: str, messages: Iterable[Message], *, expected_count: int | None = None) -> None:
        self._append_items(conversation_id, unique_messages(list(messages)), expected_count)

    def append_checked(self, conversation_id: str, messages: Sequence[Message], expected_count: int) -> None:
        if type(self).append is not PostgresStore.append:  # a subclass's own append (a wrapper) stays on the path
            super().append_checked(conversation_id, messages, expected_count)
            return
        # The writer checked each message's fields (`field_problem`) already: they are not checked twice.
        self._append_items(conversation_id, unique_messages(list(messages), check_fields=False), expected_count)

    def _append_items(self, conversation_id: str, items: list[Message], expected_count: int | None) -> None:
        ids = [message.id for message in items]
        payloads = [encode_message(message) for message in items]
        texts = [search_text(message) for message in items]
        p = self._db.prefix
        count = len(items)
        model, failures = conversation_figures(items)
        args = {
            "n": count,
            "cid": conversation_id,
            "ids": ids,
            "data": payloads,
            "texts": texts,
            "model": model,
            "failures": failures,
            "expected": expected_count,
        }
        unique_violation = self._db.driver.errors.UniqueViolation

        def first_try(cursor: psycopg.Cursor[Any]) -> bool:
            try:
                if count == 1:  # the turn engine's append: plain parameters are cheaper to send than arrays
                    cursor.execute(_append_one_sql(p), {**args, "id": ids[0], "datum": payloads[0], "text": texts[0]})
                else:
                    cursor.execute(_append_sql(p, skip_stored=False), args)
            except unique_violation:
                return False  # an id is stored already: the statement (its own transaction) wrote nothing
            row = cursor.fetchone()
            return row is not None and row[0] is not None  # else the update matched no row, and nothing was written

        # The usual append, every message new and the count as expected, is one statement and one round trip; the
        # others are done again below, where the checks are. Idempotent: a repeat finds its ids stored, and goes
        # below.
        done: bool = bool(items) and self._db.run(first_try, idempotent=True, single=True)
        if done:
            return

        def write(cursor: psycopg.Cursor[Any]) -> None:
            if not items:
                cursor.execute(f"SELECT 1 FROM {p}conversations WHERE id = %s", (conversation_id,))
                if cursor.fetchone() is None:
                    raise missing_conversation(conversation_id, self.url)
                return
            cursor.execute(_append_sql(p, skip_stored=True), args)
            row = cursor.fetchone()
            if row is None or row[0] is None:
                cursor.execute(f"SELECT message_count FROM {p}conversations WHERE id = %s", (conversation_id,))
                found = cursor.fetchone()
                if found is None:
                    raise missing_conversation(conversation_id, self.url)
                assert expected_count is not None  # the only other reason the update matched no row
                if self._all_stored(cursor, conversation_id, ids, payloads):
                    return  # a repeat: this append was done before (a retry whose first commit went unseen)
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
                check_same_messages(cursor.fetchall(), wanted, conversation_id, self.url)
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

        # Idempotent by message id: when the connection is lost while committing, trying again on a new one is safe.
        self._db.run(write, idempotent=True)

    def _all_stored(
        self, cursor: psycopg.Cursor[Any], conversation_id: str, ids: list[str], payloads: list[bytes]
    ) -> bool:
        """Whether every message of an append is stored already, as it is."""
        cursor.execute(
            f"SELECT id, data FROM {self._db.prefix}messages WHERE conversation_id = %s AND id = ANY(%s)",
            (conversation_id, ids),
            binary=True,
        )
        stored = cursor.fetchall()
        wanted = dict(zip(ids, payloads, strict=True))
        return len(stored) == len(wanted) and all(same_stored(bytes(data), wanted[key]) for key, data in stored)

    def load(self, conversation_id: str) -> MessageList:
        p = self._db.prefix

        def read(cursor: psycopg.Cursor[Any]) -> list[bytes]:
            cursor.execute(f"SELECT 1 FROM {p}conversations WHERE id = %s", (conversation_id,))
            if cursor.fetchone() is None:
                raise missing_conversation(conversation_id, self.url)
            cursor.execute(
                f"SELECT data FROM {p}messages WHERE conversation_id = %s ORDER BY seq", (conversation_id,), binary=True
            )
            return [bytes(row[0]) for row in cursor.fetchall()]

        return MessageList.unchecked(decode_messages(self._db.run(read, idempotent=True)))

    # -- reading by sequence number, search, forks (the viewer) ----------------------------------------------
    def _check_conversation(self, cursor: psycopg.Cursor[Any], conversation_id: str) -> None:
        cursor.execute(f"SELECT 1 FROM {self._db.prefix}conversations WHERE id = %s", (conversation_id,))
        if cursor.fetchone() is None:
            raise missing_conversation(conversation_id, self.url)

    def read_tail(self, conversation_id: str, limit: int, *, before: int | None = None) -> MessagePage:
        if limit < 1:
            raise ValueError("limit must be at least 1")

        def read(cursor: psycopg.Cursor[Any]) -> list[Any]:
            self._check_conversation(cursor, conversation_id)
            cursor.execute(
                f"SELECT seq, data FROM {self._db.prefix}messages WHERE conversation_id = %s AND seq < %s "
                "ORDER BY seq DESC LIMIT %s",
                (conversation_id, 2**62 if before is None else before, limit + 1),
                binary=True,
            )
            return cursor.fetchall()

        return tail_page(self._db.run(read, idempotent=True), limit)

    def read_after(self, conversation_id: str, after: int, limit: int | None = None) -> MessagePage:
        check_slice(0, limit)
        p = self._db.prefix

        def read(cursor: psycopg.Cursor[Any]) -> MessagePage:
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
            return message_page(rows, has_older)

        return self._db.run(read, idempotent=True)

    def message_seq(self, conversation_id: str, message_id: str) -> int:
        row = self._db.one(
            f"SELECT seq FROM {self._db.prefix}messages WHERE conversation_id = %s AND id = %s",
            (conversation_id, message_id),
        )
        if row is None:
            raise missing_message(conversation_id, message_id)
        return int(row[0])

    def list_summaries(self, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        rows = self._db.all(
            f"SELECT {_SUMMARY_COLUMNS} FROM {self._db.prefix}conversations AS c "
            "ORDER BY c.updated_at DESC, c.id DESC LIMIT %s OFFSET %s",
            (limit, offset),
        )
        return [summary_from_row(row, utc) for row in rows]

    def search_conversations(self, query: str, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        words = query_words(query)
        if not words:
            return []
        p = self._db.prefix
        with self._db.tx() as cursor:
            cursor.execute(
                f"WITH hits AS (SELECT conversation_id, max(seq) AS seq, count(*) AS n FROM {p}messages "
                "WHERE search @@ to_tsquery('simple', %s) GROUP BY conversation_id) "
                f"SELECT {_SUMMARY_COLUMNS}, coalesce(hits.n, 0), hits.seq FROM {p}conversations AS c "
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
        return search_summaries(rows, matched, lambda row: row[0], words, utc)

    def search_messages(self, conversation_id: str, query: str, limit: int = 10_000) -> list[tuple[int, str]]:
        check_slice(0, limit)
        words = query_words(query)
        with self._db.tx() as cursor:
            self._check_conversation(cursor, conversation_id)
            if not words:
                return []
            cursor.execute(
                f"SELECT seq, id FROM {self._db.prefix}messages WHERE conversation_id = %s "
                "AND search @@ to_tsquery('simple', %s) ORDER BY seq LIMIT %s",
                (conversation_id, postgres_query(words), limit),
            )
            return [(int(seq), str(message_id)) for seq, message_id in cursor.fetchall()]

    def message_position(self, conversation_id: str, message_id: str) -> int:
        p = self._db.prefix
        row = self._db.one(
            f"SELECT count(*) FROM {p}messages WHERE conversation_id = %s AND seq <= "
            f"(SELECT seq FROM {p}messages WHERE conversation_id = %s AND id = %s)",
            (conversation_id, conversation_id, message_id),
        )
        if row is None or not row[0]:
            raise missing_message(conversation_id, message_id)
        return int(row[0])

    def fork_conversation(
        self, conversation_id: str, at: str, *, title: str | None = None, id: str | None = None
    ) -> ConversationInfo:
        fork_id = id or new_id()
        p = self._db.prefix
        with self._db.tx() as cursor:
            # The row lock keeps appends out while the fork reads the log up to its cut.
            cursor.execute(
                f"SELECT title, active_mode, metadata::text FROM {p}conversations WHERE id = %s FOR SHARE",
                (conversation_id,),
            )
            source = cursor.fetchone()
            if source is None:
                raise missing_conversation(conversation_id, self.url)
            source_title, mode, metadata = source
            if title is None:
                cursor.execute(f"SELECT title FROM {p}conversations WHERE forked_from = %s", (conversation_id,))
                title = fork_title(source_title, (row[0] for row in cursor.fetchall()))
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
            merged = fork_metadata(metadata, conversation_id, at)
            cursor.execute(
                f"INSERT INTO {p}conversations (id, title, created_at, updated_at, active_mode, metadata, "
                "forked_from, next_seq) VALUES (%s, %s, now(), now(), %s, %s::jsonb, %s, %s) "
                "ON CONFLICT (id) DO NOTHING RETURNING 1",
                (
                    fork_id,
                    postgres_text(title),
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
            kept = decode_messages([bytes(r[0]) for r in cursor.fetchall()])
            model, failures = conversation_figures(kept)
            cursor.execute(
                f"UPDATE {p}conversations SET message_count = %s, last_model = %s, failures = %s WHERE id = %s",
                (copied, model, failures, fork_id),
            )
            self._share_pages(cursor, fork_id, page_ids(kept))
        return self.get_conversation(fork_id)

    def list_forks(self, conversation_id: str) -> list[ConversationInfo]:
        rows = self._db.all(
            f"SELECT {_CONVERSATION_COLUMNS} FROM {self._db.prefix}conversations WHERE forked_from = %s "
            "ORDER BY created_at, id",
            (conversation_id,),
        )
        return [conversation_from_row(row, utc) for row in rows]

    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        p = self._db.prefix
        infos: list[ConversationInfo] = []
        with self._db.tx() as cursor:
            for item in items:
                info = item.info
                messages = distinct_messages(item.messages, info.id)
                cursor.execute(
                    f"INSERT INTO {p}conversations (id, title, created_at, updated_at, active_mode, metadata, "
                    "message_count, next_seq) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s) "
                    f"ON CONFLICT (id) DO NOTHING RETURNING {_CONVERSATION_COLUMNS}",
                    (
                        info.id,
                        postgres_text(info.title),
                        info.created_at,
                        info.updated_at,
                        postgres_text(info.active_mode),
                        encode_metadata(info.metadata).decode(),
                        len(messages),
                        len(messages),
                    ),
                )
                row = cursor.fetchone()
                if row is None:
                    raise conversation_exists(info.id, self.url, importing=True)
                infos.append(conversation_from_row(row, utc))
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

    def __repr__(self) -> str:
        return f"<PostgresStore {self.url}>"


def _append_one_sql(prefix: str) -> str:
    """`_append_sql` for one message, without ``skip_stored``, in plain parameters (``id``, ``datum``, ``text``)
    instead of arrays. It answers the message's ``seq``, or no row when the update matched no row."""
    p = prefix
    return (
        f"WITH c AS (UPDATE {p}conversations SET next_seq = next_seq + 1, message_count = message_count + 1, "
        "updated_at = now(), last_model = coalesce(%(model)s, last_model), failures = failures + %(failures)s "
        "WHERE id = %(cid)s AND (%(expected)s::bigint IS NULL OR message_count = %(expected)s::bigint) "
        "RETURNING next_seq - 1 AS base) "
        f"INSERT INTO {p}messages (conversation_id, seq, id, data, search) "
        "SELECT %(cid)s, c.base, %(id)s, %(datum)s, to_tsvector('simple', %(text)s::text) FROM c RETURNING seq"
    )


def _append_sql(prefix: str, *, skip_stored: bool) -> str:
    """The statement of an append (see the module's docstring): it takes the next ``seq`` values and inserts the
    messages, and answers the first ``seq`` (NULL when the update matched no row) and how many were inserted. With
    ``skip_stored``, messages whose id is stored already are skipped; without, one of them fails the statement."""
    p = prefix
    on_conflict = "ON CONFLICT (conversation_id, id) DO NOTHING " if skip_stored else ""
    return (
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
        f"{on_conflict}RETURNING 1) "
        "SELECT (SELECT base FROM c), (SELECT count(*) FROM ins)"
    )
