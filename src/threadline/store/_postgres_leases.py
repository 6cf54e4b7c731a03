"""Writer leases of a PostgreSQL store: session advisory locks on one connection kept for them.

Each lease is ``pg_try_advisory_lock`` on a key hashed from the schema and the conversation id, taken on a connection
kept beside the pool (so a long turn never takes a pooled connection away). The server drops the locks when that
connection ends: at once when the holding process dies on a live host, and within about half a minute (TCP
keepalives) when its host vanishes.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from ._common import store_closed
from ._postgres_db import PostgresDatabase, first_line
from .leases import Lease, LocalLeases

if TYPE_CHECKING:
    import psycopg

__all__ = ["AdvisoryLeases"]


class AdvisoryLeases:
    """The writer leases of one `PostgresDatabase` (see `Store.try_lease`).

    Args:
        db: The database whose conversations are leased.
    """

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        # An advisory lock is re-entrant within its session, and every lease of this store shares one session:
        # this in-process table keeps two writers of this process apart.
        self._local = LocalLeases()

    def try_lease(self, conversation_id: str) -> Lease | None:
        """The conversation's lease, or None if another writer (of any process or host) holds it.

        Raises:
            StoreError: if the database was closed or cannot be reached.
        """
        if self._db.closed:
            raise store_closed(self._db.url)
        digest = hashlib.blake2b(
            f"threadline-lease\0{self._db.schema or ''}\0{conversation_id}".encode(), digest_size=8
        )
        key = int.from_bytes(digest.digest(), "big", signed=True)
        local = self._local.try_lease(conversation_id, on_release=lambda: self._unlock(key))
        if local is None:
            return None
        try:
            taken = self._query("SELECT pg_try_advisory_lock(%s)", key, reconnect=True)
        except BaseException:
            local.release()
            raise
        if not taken:
            local.release()
            return None
        return local

    def close(self) -> None:
        """Close the lease connection: leases still held are released with it."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _query(self, sql: str, key: int, *, reconnect: bool) -> bool:
        """Run one advisory-lock statement on the lease connection and return its boolean answer.

        With ``reconnect``, a lost connection is opened again (once); without it (an unlock), a lost connection
        means there is nothing left to unlock: its locks died with it.
        """
        psycopg = self._db.driver
        with self._lock:
            for attempt in (1, 2):
                conn = self._conn
                if conn is None or conn.closed:
                    if not reconnect:
                        return False
                    conn = self._conn = self._connect()
                try:
                    row = conn.execute(sql, (key,)).fetchone()
                    return bool(row and row[0])
                except psycopg.OperationalError as exc:
                    conn.close()
                    self._conn = None
                    if not reconnect:
                        return False
                    if attempt == 2:
                        raise StoreError(f"{self._db.url}: {first_line(exc)}") from None
                except psycopg.Error as exc:
                    raise StoreError(f"{self._db.url}: {first_line(exc)}") from None
        return False  # pragma: no cover - the loop always returns or raises

    def _connect(self) -> psycopg.Connection[Any]:
        driver = self._db.driver
        try:
            conn: psycopg.Connection[Any] = driver.connect(
                self._db.conninfo,
                autocommit=True,
                connect_timeout=max(1, round(self._db.connect_timeout)),
                # A host that vanishes is noticed within about 25 s, and its leases freed.
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=3,
            )
        except driver.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self._db.url}: {first_line(exc)}") from None
        return conn

    def _unlock(self, key: int) -> None:
        if self._db.closed:
            return  # the lease connection is closed: its locks went with it
        self._query("SELECT pg_advisory_unlock(%s)", key, reconnect=False)
