"""Versioned schema migrations: an ordered list of named steps per backend, recorded in a table.

Each database keeps ``threadline_migrations(version, name, applied_at)``. Opening a store applies the steps it has
not applied yet, in order, inside one transaction (so a crash mid-migration leaves the old schema intact), and
refuses a database that has applied steps this code does not know — a newer threadline wrote it, and guessing would
risk the user's data.

Steps are only ever appended. A released step is never edited: a change to the schema is a new step.

A step may also carry a ``backfill``: Python that fills what its statements made from the data already there (the
search index of existing logs), run right after them in the same transaction, so a database is never left with a new
table half filled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import StoreError
from ._backfill import (
    postgres_page_shares_backfill,
    postgres_viewer_backfill,
    sqlite_page_shares_backfill,
    sqlite_viewer_backfill,
)

__all__ = ["POSTGRES_MIGRATIONS", "SQLITE_MIGRATIONS", "Migration", "MigrationState", "pending_migrations"]

MIGRATIONS_TABLE = "threadline_migrations"


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: a name (recorded), the statements that make it, and optionally a backfill.

    ``{prefix}`` in a statement is replaced by the backend's table qualifier (a PostgreSQL schema, or nothing).
    ``backfill(connection_or_cursor, prefix)`` runs after the statements, in the same transaction: a SQLite
    connection on SQLite, a psycopg cursor on PostgreSQL.
    """

    name: str
    statements: tuple[str, ...]
    backfill: Callable[[Any, str], None] | None = None

    def sql(self, prefix: str = "") -> list[str]:
        """The statements with the table qualifier filled in."""
        return [statement.replace("{prefix}", prefix) for statement in self.statements]


@dataclass(frozen=True, slots=True)
class MigrationState:
    """What a database has applied: ``(version, name)`` pairs in version order."""

    applied: tuple[tuple[int, str], ...]

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[Any]]) -> MigrationState:
        """The state read from the migrations table: rows of ``(version, name)`` in version order."""
        return cls(tuple((int(version), str(name)) for version, name in rows))

    @property
    def version(self) -> int:
        return self.applied[-1][0] if self.applied else 0


def pending_migrations(state: MigrationState, known: Sequence[Migration], where: str) -> list[tuple[int, Migration]]:
    """The steps still to apply, as ``(version, migration)``.

    Raises:
        StoreError: if the database has a step this code does not know (a newer schema), or a step whose name
            differs from ours at the same version (not a threadline database, or a damaged one).
    """
    for version, name in state.applied:
        if version > len(known):
            raise StoreError(
                f"the database at {where} has schema version {state.version} ({name!r}), newer than this "
                f"threadline understands (version {len(known)}); upgrade threadline to open it"
            )
        expected = known[version - 1].name
        if name != expected:
            raise StoreError(
                f"the database at {where} records migration {version} as {name!r}, but threadline's migration "
                f"{version} is {expected!r}; it was not made by threadline, or it is damaged"
            )
    return [(version, known[version - 1]) for version in range(state.version + 1, len(known) + 1)]


# -- SQLite ----------------------------------------------------------------------------------------------------------
# Timestamps are fixed-width UTC text (see _common.format_ts), so text order is time order. Messages are their
# msgspec JSON bytes; ``seq`` is the per-conversation order, assigned inside the write transaction.
SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "initial",
        (
            # ``key`` is the conversation's small integer handle: message rows and their index carry 8 bytes
            # instead of a 26-character id, which makes appends markedly cheaper.
            """CREATE TABLE conversations (
                key INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                title TEXT,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                active_mode TEXT,
                metadata BLOB NOT NULL DEFAULT '{}',
                message_count INTEGER NOT NULL DEFAULT 0,
                next_seq INTEGER NOT NULL DEFAULT 0
            )""",
            # One B-tree holds the rows, keyed for idempotency; ``seq`` (assigned under the write lock) is the order.
            """CREATE TABLE messages (
                conversation INTEGER NOT NULL,
                id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (conversation, id)
            ) WITHOUT ROWID""",
            """CREATE TABLE artifacts (
                conversation_id TEXT NOT NULL,
                name TEXT NOT NULL,
                content TEXT NOT NULL,
                created_at TEXT NOT NULL,
                PRIMARY KEY (conversation_id, name)
            )""",
            "CREATE TABLE cache (key TEXT PRIMARY KEY, value BLOB NOT NULL, created_at TEXT NOT NULL)",
            """CREATE TABLE pages (
                id TEXT PRIMARY KEY,
                conversation_id TEXT,
                title TEXT NOT NULL,
                html TEXT NOT NULL,
                css TEXT NOT NULL,
                js TEXT NOT NULL,
                created_at TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        "conversations_by_update",
        # `list_conversations` pages by most recent update; without this it sorts the whole table every time.
        ("CREATE INDEX conversations_by_update ON conversations (updated_at DESC, id DESC)",),
    ),
    Migration(
        "pages_by_conversation",
        # `list_pages` (``threadline logs show``) reads one conversation's pages; without this it scans every page.
        ("CREATE INDEX pages_by_conversation ON pages (conversation_id, created_at, id)",),
    ),
    Migration(
        "viewer_reads_search_forks",
        (
            # The viewer reads a log by sequence number from its newest end (a page, then older pages, then what
            # came after): without this index every page would sort the whole conversation.
            "CREATE UNIQUE INDEX messages_by_seq ON messages (conversation, seq)",
            # The list's figures, kept by every append so a list of 10,000 conversations reads no message.
            "ALTER TABLE conversations ADD COLUMN last_model TEXT",
            "ALTER TABLE conversations ADD COLUMN failures INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE conversations ADD COLUMN forked_from TEXT",
            "CREATE INDEX conversations_by_origin ON conversations (forked_from) WHERE forked_from IS NOT NULL",
            # The search index: one row per message, rowid = conversation key << 32 | seq, so a conversation's
            # rows are one rowid range (deleted and copied as such) and a hit names its message.
            "CREATE VIRTUAL TABLE message_search USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')",
            # Messages from seq ``indexed_to`` on are not in the index yet. FTS5 writes a new segment per
            # transaction, which would cost a one-message append two thirds of its speed; so appends leave the
            # index alone and a search first indexes, in bulk, whatever was appended since the last one.
            "ALTER TABLE conversations ADD COLUMN indexed_to INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX conversations_unindexed ON conversations (key) WHERE indexed_to < next_seq",
        ),
        backfill=sqlite_viewer_backfill,
    ),
    Migration(
        "page_shares",
        (
            # The pages a fork shows from the conversation it was copied from (the tool result that made each is in
            # its log): deleting that conversation leaves them to the fork instead of deleting them.
            """CREATE TABLE page_shares (
                conversation_id TEXT NOT NULL,
                page_id TEXT NOT NULL,
                PRIMARY KEY (conversation_id, page_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX page_shares_by_page ON page_shares (page_id)",
        ),
        backfill=sqlite_page_shares_backfill,
    ),
)

# -- PostgreSQL ------------------------------------------------------------------------------------------------------
POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "initial",
        (
            """CREATE TABLE {prefix}conversations (
                id TEXT PRIMARY KEY,
                title TEXT,
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                active_mode TEXT,
                metadata JSONB NOT NULL DEFAULT '{}',
                message_count BIGINT NOT NULL DEFAULT 0,
                next_seq BIGINT NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE {prefix}messages (
                conversation_id TEXT NOT NULL REFERENCES {prefix}conversations (id) ON DELETE CASCADE,
                seq BIGINT NOT NULL,
                id TEXT NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (conversation_id, seq),
                UNIQUE (conversation_id, id)
            )""",
            """CREATE TABLE {prefix}artifacts (
                conversation_id TEXT NOT NULL REFERENCES {prefix}conversations (id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                content TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (conversation_id, name)
            )""",
            # Cache values are kept as the exact JSON text: jsonb would reorder keys and refuse "\\u0000".
            "CREATE TABLE {prefix}cache (key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL)",
            """CREATE TABLE {prefix}pages (
                id TEXT PRIMARY KEY,
                conversation_id TEXT,
                title TEXT NOT NULL,
                html TEXT NOT NULL,
                css TEXT NOT NULL,
                js TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )""",
        ),
    ),
    Migration(
        "conversations_by_update",
        ("CREATE INDEX conversations_by_update ON {prefix}conversations (updated_at DESC, id DESC)",),
    ),
    Migration(
        "pages_by_conversation",
        ("CREATE INDEX pages_by_conversation ON {prefix}pages (conversation_id, created_at, id)",),
    ),
    Migration(
        "viewer_reads_search_forks",
        (
            "ALTER TABLE {prefix}conversations ADD COLUMN last_model TEXT",
            "ALTER TABLE {prefix}conversations ADD COLUMN failures BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE {prefix}conversations ADD COLUMN forked_from TEXT",
            "CREATE INDEX conversations_by_origin ON {prefix}conversations (forked_from) WHERE forked_from IS NOT NULL",
            # Each message's search vector ('simple': no stemming, so every language is found as written).
            "ALTER TABLE {prefix}messages ADD COLUMN search TSVECTOR",
            "CREATE INDEX messages_search ON {prefix}messages USING gin (search)",
        ),
        backfill=postgres_viewer_backfill,
    ),
    Migration(
        "page_shares",
        (
            """CREATE TABLE {prefix}page_shares (
                conversation_id TEXT NOT NULL REFERENCES {prefix}conversations (id) ON DELETE CASCADE,
                page_id TEXT NOT NULL REFERENCES {prefix}pages (id) ON DELETE CASCADE,
                PRIMARY KEY (conversation_id, page_id)
            )""",
            "CREATE INDEX page_shares_by_page ON {prefix}page_shares (page_id)",
        ),
        backfill=postgres_page_shares_backfill,
    ),
)
