"""Versioned schema migrations: an ordered list of named steps per backend, recorded in a table.

Each database keeps ``threadline_migrations(version, name, applied_at)``. Opening a store applies the steps it has
not applied yet, in order, inside one transaction (so a crash mid-migration leaves the old schema intact), and
refuses a database that has applied steps this code does not know — a newer threadline wrote it, and guessing would
risk the user's data.

Steps are only ever appended. A released step is never edited: a change to the schema is a new step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import StoreError

__all__ = ["POSTGRES_MIGRATIONS", "SQLITE_MIGRATIONS", "Migration", "MigrationState", "pending_migrations"]

MIGRATIONS_TABLE = "threadline_migrations"


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: a name (recorded) and the statements that make it.

    ``{prefix}`` in a statement is replaced by the backend's table qualifier (a PostgreSQL schema, or nothing).
    """

    name: str
    statements: tuple[str, ...]

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
)
