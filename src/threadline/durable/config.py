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
    "APP_RECORD_PREFIX",
    "APP_WORKFLOW_NAME",
    "DBOS_SCHEMA",
    "QUEUE_PREFIX",
    "RESUME_WORKFLOW_NAME",
    "TURN_WORKFLOWS",
    "WORKFLOWS_VERSION",
    "WORKFLOW_NAME",
    "RateLimit",
    "SystemDatabase",
    "dbos_config",
    "parse_limit",
    "queue_name",
    "system_database",
]

APP_NAME = "threadline"
"""The DBOS application name of workers and clients (DBOS tags workflows and queues with it)."""
QUEUE_PREFIX = "threadline_turns."
"""Turns are queued per provider, on ``threadline_turns.<provider>`` (`queue_name`), each queue partitioned by
conversation id: one turn at a time per conversation, and a provider's rate limit shared by all its apps."""
WORKFLOW_NAME = "threadline_turn"
"""The registered name of the turn workflow."""
RESUME_WORKFLOW_NAME = "threadline_resume"
"""The registered name of the workflow that goes on with a conversation after its waiting calls were decided."""
TURN_WORKFLOWS = (WORKFLOW_NAME, RESUME_WORKFLOW_NAME)
"""The workflows that are turns (what ``--status`` and the viewer list)."""
WORKFLOWS_VERSION = "threadline-turns-1"
"""DBOS's application version of the workers: DBOS recovers a turn only on a worker of the version that began it,
and would otherwise derive the version from the workflows' source, so that a threadline upgrade would strand the
turns running during it. Changed only when a turn's workflows change their inputs or steps."""
APP_WORKFLOW_NAME = "threadline_app"
"""The registered name of the tiny workflow by which a worker records, at start, which queue each of its apps is
served on; a `Client` reads the newest record of an app to know where to queue its turns."""
APP_RECORD_PREFIX = "threadline-app:"
"""The workflow ids of those records: ``threadline-app:<app>:<worker id>:<a new id>``, one per worker start."""
DBOS_SCHEMA = "threadline_dbos"
"""The schema of DBOS's tables inside a PostgreSQL store's database, for a store in the default schema."""
_OURS = ("schema", "pool_min", "pool_max")  # a PostgreSQL store URL's own query parameters


def queue_name(provider: str) -> str:
    """The queue of the turns of apps whose model is on ``provider`` (``openai``, ``anthropic``, ``local``…)."""
    return f"{QUEUE_PREFIX}{provider}"


@dataclass(frozen=True)
class RateLimit:
    """At most ``limit`` turns of one provider start in any ``period`` seconds, across all workers (DBOS's queue
    rate limiter)."""

    provider: str
    limit: int
    period: float


def parse_limit(text: str) -> RateLimit:
    """Read ``provider=N/seconds`` (``openai=500/60``: at most 500 turns start per minute).

    Raises:
        UserError: naming what is wrong, for anything else.
    """
    provider, sep, rate = text.partition("=")
    count, slash, seconds = rate.partition("/")
    provider = provider.strip()
    try:
        limit, period = int(count), float(seconds)
    except ValueError:
        limit, period = 0, 0.0
    if not sep or not slash or not provider or limit < 1 or not period > 0 or period == float("inf"):
        raise UserError(
            f"a limit is provider=N/seconds with N a whole number >= 1 and seconds > 0 (e.g. openai=500/60), "
            f"got {text!r}"
        )
    return RateLimit(provider, limit, period)


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
        "application_version": WORKFLOWS_VERSION,
        "log_level": "WARNING",
    }
    return config
