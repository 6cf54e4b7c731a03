"""Durable turns in the viewer: each conversation's turns queued with `threadline.durable.Client` and run by
``threadline worker`` processes, with their state (queued, running on which worker, waiting, done, failed), read
from DBOS's system database beside the store (`threadline.durable.config.system_database`).

Only a store that ran durable turns shows any: before DBOS is imported, a cheap check says whether its system
database is there (a file beside a SQLite store; DBOS's table in its schema of a PostgreSQL store's database), so a
store that never ran one costs nothing, and a viewer without the ``durable`` extra starts and shows none. Once there,
one `dbos.DBOSClient` serves every page. A page learns of changes through its live updates (``durable`` events, see
`threadline.web.live`).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from .._exception_text import describe_exception
from .._masking import environment_secrets, mask_secrets
from ..errors import UserError
from ..store import Store

if TYPE_CHECKING:
    from dbos import DBOSClient

    from ..durable.config import SystemDatabase
    from ..durable.status import ConversationTurn

__all__ = ["DurableTurns", "TurnRow", "render_strip", "turn_rows"]

log = logging.getLogger("threadline.web")
T = TypeVar("T")

RECHECK_SECONDS = 10.0
"""How long a PostgreSQL store found without DBOS state is taken to have none before it is looked at again (a
SQLite store's file is looked for each time: that costs nothing)."""
STRIP_ENDED = 3
"""How many of a conversation's ended turns its strip shows, after the turns queued and running."""
_REQUEST_PREFIX = "req-"


@dataclass(frozen=True)
class TurnRow:
    """A durable turn as a page shows it.

    Attributes:
        id: The turn's id.
        kind: ``"turn"`` or ``"resumption"``.
        state: ``queued``, ``running``, ``waiting``, ``done``, ``failed`` or ``cancelled`` (the badge's class).
        label: The badge's words (``"running on w1"``, ``"waiting for a person"``…).
        detail: More about it: a failure's error (secrets masked), what a queued turn waits for.
        request_id: The id of its request message (None for a resumption).
        app: The app it was queued for.
        at: When it was queued.
        ended_at: When it ended.
        in_strip: Whether the strip under the messages shows it (every turn queued or running, the newest ended).
    """

    id: str
    kind: str
    state: str
    label: str
    detail: str | None
    request_id: str | None
    app: str | None
    at: datetime | None
    ended_at: datetime | None
    in_strip: bool


def turn_rows(turns: Sequence[ConversationTurn]) -> list[TurnRow]:
    """The rows of a conversation's turns (oldest first), as pages show them."""
    rows: list[TurnRow] = []
    running = any(turn.state == "running" for turn in turns)
    ended = [turn.id for turn in turns if turn.state not in ("queued", "running")]
    shown_ended = set(ended[-STRIP_ENDED:])
    for index, turn in enumerate(turns):
        later = turns[index + 1 :]
        detail = turn.error
        if turn.state == "queued":
            label = "queued"
            detail = "after the turn running now" if running else "waiting for a worker"
        elif turn.state == "running":
            label = f"running on {turn.worker}" if turn.worker else "running"
        elif turn.state == "waiting":
            # Once a later turn went on with the conversation (its calls were decided), it waits no more; one that
            # failed before it ran (an app no worker has) decided nothing.
            went_on = any(other.state in ("running", "waiting", "done") for other in later)
            label = "waited for a person" if went_on else "waiting for a person"
            detail = None if went_on else "a tool call waits for a decision or a result: see its group above"
        else:
            label = turn.state
        rows.append(
            TurnRow(
                id=turn.id,
                kind=turn.kind,
                state=turn.state,
                label=label,
                detail=detail,
                request_id=turn.request_id,
                app=turn.app,
                at=turn.queued_at,
                ended_at=turn.ended_at,
                in_strip=turn.state in ("queued", "running") or turn.id in shown_ended,
            )
        )
    return rows


class DurableTurns:
    """The durable turns of the viewer's store, read from DBOS's system database when the store has one.

    Args:
        store: The viewer's store.
        store_url: The URL it was opened from (with its password: ``store.url`` hides it), if known.
        dbos_url: DBOS's own database, when the workers were started with ``--dbos URL``.

    Every method reads a database: call them in a worker thread.
    """

    def __init__(self, store: Store, store_url: str | None = None, dbos_url: str | None = None) -> None:
        self._store = store
        self._store_url = store_url or store.url
        self._dbos_url = dbos_url
        self._lock = threading.Lock()
        self._client: DBOSClient | None = None
        self._database: SystemDatabase | None = None
        self._never = importlib.util.find_spec("dbos") is None
        self._checked_at: float | None = None
        self._warned = False

    def possible(self) -> bool:
        """Whether the store could ever have durable turns (``dbos`` is installed; a store workers can share)."""
        return not self._never

    def available(self) -> bool:
        """Whether the store has DBOS state (a store without any is looked at again after `RECHECK_SECONDS`)."""
        return self._dbos() is not None

    def of_conversation(self, conversation_id: str, request_ids: Iterable[str] = ()) -> list[TurnRow] | None:
        """The conversation's durable turns (None when the store has no DBOS state, or it cannot be read now).

        ``request_ids``: ids of messages shown, so the turns whose requests they are are found however old.
        """
        from ..durable.status import conversation_turns

        client = self._dbos()
        if client is None or self._database is None:
            return None
        ids = [mid[len(_REQUEST_PREFIX) :] for mid in request_ids if mid.startswith(_REQUEST_PREFIX)]
        sqlite = self._database.url.startswith("sqlite")
        return self._read(
            lambda: turn_rows(conversation_turns(client, conversation_id, turn_ids=ids, by_attributes=not sqlite))
        )

    def in_flight(self, conversation_ids: Iterable[str]) -> dict[str, str]:
        """For each of ``conversation_ids`` with a turn running or queued: ``"running"`` or ``"queued"``."""
        from ..durable.status import conversations_in_flight

        client = self._dbos()
        if client is None:
            return {}
        found = self._read(lambda: conversations_in_flight(client)) or {}
        states: dict[str, str] = {}
        for cid in conversation_ids:
            turns = found.get(cid)
            if turns:
                states[cid] = "running" if any(turn.state == "running" for turn in turns) else "queued"
        return states

    def close(self) -> None:
        """Close the connections to DBOS's database."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.destroy()

    # -- the system database -------------------------------------------------------------------------------------
    def _dbos(self) -> DBOSClient | None:
        """The client of the store's DBOS database, once it exists; None before (and always without ``dbos``)."""
        if self._client is not None or self._never:
            return self._client
        with self._lock:
            if self._client is not None:
                return self._client
            database = self._database or self._system_database()
            if database is None:
                return None
            if not database.url.startswith("sqlite:///"):  # a file is looked at each time; a server not as often
                if self._checked_at is not None and time.monotonic() - self._checked_at < RECHECK_SECONDS:
                    return None
                self._checked_at = time.monotonic()
            if not self._has_state(database):
                return None
            from dbos import DBOSClient

            from ..durable.config import APP_NAME

            try:
                self._client = DBOSClient(
                    system_database_url=database.url,
                    dbos_system_schema=database.schema,
                    application_name=APP_NAME,
                    system_database_pool_size=2,
                    retry_connection_errors=False,
                )
            except Exception as exc:  # unreachable now: looked at again later
                self._warn(exc)
            return self._client

    def _system_database(self) -> SystemDatabase | None:
        from ..durable.config import system_database

        try:
            self._database = system_database(self._store, self._store_url, self._dbos_url)
        except UserError:  # a store workers cannot share (memory, JSON files): it never has durable turns
            self._never = True
        return self._database

    def _has_state(self, database: SystemDatabase) -> bool:
        """Whether DBOS's tables are there (a worker made them), read without DBOS."""
        if database.url.startswith("sqlite:///"):
            return os.path.isfile(database.url[len("sqlite:///") :])
        try:
            import psycopg

            with psycopg.connect(database.url, connect_timeout=5) as conn:
                row = conn.execute("SELECT to_regclass(%s)", (f'"{database.schema}".workflow_status',)).fetchone()
        except Exception as exc:  # no such database, no psycopg, unreachable: nothing to show now
            self._warn(exc)
            return False
        return row is not None and row[0] is not None

    def _read(self, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except Exception as exc:  # DBOS's database failed: the page shows its messages without turn states
            self._warn(exc)
            return None

    def _warn(self, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            text = mask_secrets(describe_exception(exc), environment_secrets())
            log.warning("cannot read the durable turns of %s: %s", self._store.url, text)


def render_strip(env: Any, cid: str, rows: Sequence[TurnRow] | None) -> str:
    """The HTML of a conversation's strip of durable turns (an empty, hidden section without any), with the badges
    the page's script puts on their request messages."""
    turns = list(rows or ())
    badges = {row.request_id: [row.state, row.label] for row in turns if row.request_id and row.state != "queued"}
    return str(env.get_template("_durable_turns.html").render(cid=cid, turns=turns, badges=badges))
