"""Store fixtures shared by the store and CLI tests: every test runs against SQLite and a real PostgreSQL.

Each PostgreSQL test gets its own schema (``?schema=tl_test_<pid>_<random>``), dropped afterwards, so parallel runs
on one server never see each other's tables.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_DSN
from threadline.store import Store, open_store

BACKENDS = ["sqlite", "postgres"]


def _with_query(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


@contextmanager
def postgres_url() -> Iterator[str]:
    """A URL naming a fresh schema on the test server; the schema is dropped on exit."""
    import psycopg

    schema = f"tl_test_{os.getpid()}_{uuid.uuid4().hex[:12]}"
    try:
        yield _with_query(POSTGRES_DSN, f"schema={schema}")
    finally:
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def backend_url(backend: str, directory: Path) -> Iterator[str]:
    """A store URL of the given backend that no other test uses."""
    if backend == "sqlite":
        yield f"sqlite:///{directory / f'store-{uuid.uuid4().hex[:8]}.db'}"
    elif backend == "postgres":
        with postgres_url() as url:
            yield url
    elif backend == "memory":
        yield "memory://"
    else:  # pragma: no cover - a typo in a test
        raise ValueError(backend)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store URL, once per persistent backend."""
    with backend_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An open store on a fresh database, closed afterwards."""
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(params=[*BACKENDS, "memory"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The interface tests also run against `MemoryStore`."""
    with backend_url(request.param, tmp_path) as url:
        opened = open_store(url)
        try:
            yield opened
        finally:
            opened.close()


def write_cache_row(url: str, key: str, value: str) -> None:
    """Put ``value`` under ``key`` in the request cache of the store at ``url`` as it is, with the database's own
    driver, not through the store: how a row gets damaged (by another program, a disk, a hand edit)."""
    if url.startswith("sqlite://"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn, conn:
            conn.execute(
                "INSERT OR REPLACE INTO cache (key, value, created_at) VALUES (?, ?, '2024-05-01T12:00:00.000000Z')",
                (key, value),
            )
        return
    import psycopg

    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".cache (key, value, created_at) VALUES (%s, %s, now()) '
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def run_cli(
    *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m threadline ARGS`` as a user would, with a wide terminal so tables are not cut."""
    environment = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        text=True,
        env=environment,
        input=stdin,
        timeout=120,
    )
