"""PostgreSQL going away under a store, for the store and CLI tests and the fault campaign.

What a server restart looks like to a client is its connections ended by the server. On the shared test server that
is ``pg_terminate_backend`` of the connections of one store (or one process), found by the ``application_name`` its
URL sets: nothing else on the server is touched. `PrivateServer` is a PostgreSQL instance of its own (initdb into a
temporary directory, on a free port), for the cases where the server must stay down: it is stopped and started
again, never the shared one.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import psycopg

POSTGRES_DSN = os.environ.get("THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def with_query(url: str, query: str) -> str:
    """``url`` with one more query parameter."""
    return f"{url}{'&' if '?' in url else '?'}{query}"


def application_name() -> str:
    """A name no other connection to the shared server has."""
    return f"tl_drop_{os.getpid()}_{uuid.uuid4().hex[:10]}"


def terminate(name: str, dsn: str = POSTGRES_DSN, *, waiting: bool = False) -> int:
    """End every connection whose ``application_name`` is ``name`` (with ``waiting``: those waiting for a lock), as
    a server restart ends them, and wait until they are gone; returns how many there were."""
    lock = " AND wait_event_type = 'Lock'" if waiting else ""
    with psycopg.connect(dsn, autocommit=True) as conn:
        pids = [
            row[0]
            for row in conn.execute(
                f"SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid(){lock}",
                (name,),
            ).fetchall()
        ]
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 10
        while pids and time.monotonic() < deadline:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)).fetchone()
            if not row or not row[0]:
                break
            time.sleep(0.01)
    return len(pids)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateServer:
    """A PostgreSQL instance of this test alone, run as the ``postgres`` user from a directory it owns, that can be
    stopped (the server is down: connections fail) and started again."""

    def __init__(self) -> None:
        [bin_dir] = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1:]
        self.bin = bin_dir
        self.root = tempfile.mkdtemp(prefix="tl-private-pg-")
        shutil.chown(self.root, "postgres")
        self.data = os.path.join(self.root, "data")
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres(
            "initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"
        )

    def _as_postgres(self, tool: str, *args: str) -> None:
        command = ["runuser", "-u", "postgres", "--", os.path.join(self.bin, tool), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = os.path.join(self.root, "log")
        self._as_postgres("pg_ctl", "start", "-w", "-t", "60", "-D", self.data, "-l", log, "-o", options)

    def stop(self) -> None:
        self._as_postgres("pg_ctl", "stop", "-w", "-t", "60", "-m", "fast", "-D", self.data)

    def close(self) -> None:
        try:
            self.stop()
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PrivateServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
