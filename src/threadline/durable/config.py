"""Where DBOS keeps its own state (queued turns, workflow status, recorded step outputs) for a threadline store.

- beside a SQLite store ``<file>``: a SQLite file next to it, ``<file>.dbos.sqlite`` (DBOS 3.4 accepts any
  ``sqlite:///path`` as its system database; SQLite serves workers on one machine only);
- for a PostgreSQL store: the same database, in a schema of its own: ``<store schema>_dbos`` for a store in
  ``?schema=NAME``, else ``threadline_dbos`` (so two stores in one database never share their queued turns);
- anywhere else with an explicit ``dbos_url`` (``--dbos URL``), in DBOS's default schema ``dbos`` for PostgreSQL.

Every worker and client of one store must agree on this, which is why it is derived from the store URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import UserError

if TYPE_CHECKING:
    from dbos import DBOSConfig

    from ..store import Store

__all__ = [
    "APP_NAME",
    "DBOS_SCHEMA",
    "QUEUE_NAME",
    "RESUME_WORKFLOW_NAME",
    "WORKFLOW_NAME",
    "SystemDatabase",
    "dbos_config",
    "system_database",
]

APP_NAME = "threadline"
"""The DBOS application name of workers and clients (DBOS tags workflows and queues with it)."""
QUEUE_NAME = "threadline_turns"
"""The DBOS queue turns are enqueued on (partitioned by conversation id: one turn at a time per conversation)."""
WORKFLOW_NAME = "threadline_turn"
"""The registered name of the turn workflow."""
RESUME_WORKFLOW_NAME = "threadline_resume"
"""The registered name of the workflow that goes on with a conversation after its waiting calls were decided."""
DBOS_SCHEMA = "threadline_dbos"
"""The schema of DBOS's tables inside a PostgreSQL store's database, for a store in the default schema."""
_OURS = ("schema", "pool_min", "pool_max")  # a PostgreSQL store URL's own query parameters


@dataclass(frozen=True)
class SystemDatabase:
    """DBOS's system database: its SQLAlchemy-style URL and, for PostgreSQL, the schema of its tables."""

    url: str
    schema: str


def system_database(store: Store, store_url: str, dbos_url: str | None = None) -> SystemDatabase:
    """Where DBOS keeps its state for the opened ``store`` (opened from ``store_url``), unless ``dbos_url`` says.

    Raises:
        UserError: for a store other processes cannot share (memory, JSON files) and no ``dbos_url``.
    """
    from ..store.sqlite import SQLiteStore

    if dbos_url:
        return SystemDatabase(dbos_url, "dbos")
    if isinstance(store, SQLiteStore):
        return SystemDatabase(f"sqlite:///{store.path}.dbos.sqlite", "dbos")
    parts = urlsplit(store_url)
    if parts.scheme.lower() in ("postgresql", "postgres"):
        # libpq's parameters stay; the store's own (schema, pool sizes) are not DBOS's.
        theirs = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key not in _OURS]
        url = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(theirs), ""))
        schema = getattr(store, "schema", None)
        return SystemDatabase(url, f"{schema[:58]}_dbos" if schema else DBOS_SCHEMA)
    raise UserError(
        f"durable turns need a store that worker processes share (SQLite or PostgreSQL), not {store.url}; "
        "or give DBOS's own database with --dbos URL"
    )


def dbos_config(database: SystemDatabase, executor_id: str) -> DBOSConfig:
    """The configuration a worker launches DBOS with (quiet: DBOS logs warnings only)."""

    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": database.url,
        "dbos_system_schema": database.schema,
        "executor_id": executor_id,
        "log_level": "WARNING",
    }
    return config
