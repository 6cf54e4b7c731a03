"""Versioned migrations: a fresh database gets every step in order; an older one is upgraded; a newer or foreign
one is refused with a clear error and left untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from tests.conftest import POSTGRES_DSN
from tests.store._backends import postgres_url
from threadline import StoreError, UserMessage
from threadline.store import open_store
from threadline.store.migrations import MIGRATIONS_TABLE, POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS
from threadline.store.postgres import PostgresStore
from threadline.store.sqlite import SQLiteStore


def _schema(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


def _pg(sql: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        cursor = conn.execute(sql, args or None)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def test_sqlite_fresh_database_gets_every_migration_in_order(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    with SQLiteStore(path) as store:
        assert store.schema_version() == len(SQLITE_MIGRATIONS)
    rows = sqlite3.connect(path).execute(f"SELECT version, name FROM {MIGRATIONS_TABLE} ORDER BY version").fetchall()
    assert rows == [(i + 1, m.name) for i, m in enumerate(SQLITE_MIGRATIONS)]
    tables = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"conversations", "messages", "artifacts", "cache", "pages", MIGRATIONS_TABLE} <= tables


def test_postgres_fresh_schema_gets_every_migration_in_order() -> None:
    with postgres_url() as url:
        with open_store(url) as store:
            assert isinstance(store, PostgresStore)
            assert store.schema_version() == len(POSTGRES_MIGRATIONS)
        schema = _schema(url)
        rows = _pg(f'SELECT version, name FROM "{schema}".{MIGRATIONS_TABLE} ORDER BY version')
        assert rows == [(i + 1, m.name) for i, m in enumerate(POSTGRES_MIGRATIONS)]
        # Opening again applies nothing twice.
        with open_store(url) as store:
            assert store.schema_version() == len(POSTGRES_MIGRATIONS)
        assert len(_pg(f'SELECT 1 FROM "{schema}".{MIGRATIONS_TABLE}')) == len(POSTGRES_MIGRATIONS)


def test_sqlite_older_database_is_upgraded_keeping_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT)")
    for statement in SQLITE_MIGRATIONS[0].sql():
        conn.execute(statement)
    conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (1, 'initial', '2024-01-01T00:00:00.000000Z')")
    conn.execute(
        "INSERT INTO conversations (id, title, created_at, updated_at) "
        "VALUES ('old', 'Old one', '2024-01-01T00:00:00.000000Z', '2024-01-01T00:00:00.000000Z')"
    )
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        assert store.schema_version() == len(SQLITE_MIGRATIONS)
        assert store.get_conversation("old").title == "Old one"
        store.append("old", [UserMessage(content="still works")])
    indexes = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "conversations_by_update" in indexes


def test_postgres_older_schema_is_upgraded_keeping_its_data() -> None:
    with postgres_url() as url:
        schema = _schema(url)
        prefix = f'"{schema}".'
        _pg(f'CREATE SCHEMA "{schema}"')
        _pg(f"CREATE TABLE {prefix}{MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT, applied_at TIMESTAMPTZ)")
        for statement in POSTGRES_MIGRATIONS[0].sql(prefix):
            _pg(statement)
        _pg(f"INSERT INTO {prefix}{MIGRATIONS_TABLE} VALUES (1, 'initial', now())")
        _pg(
            f"INSERT INTO {prefix}conversations (id, title, created_at, updated_at) VALUES ('old', 'Old', now(), now())"
        )
        with open_store(url) as store:
            assert isinstance(store, PostgresStore)
            assert store.schema_version() == len(POSTGRES_MIGRATIONS)
            assert store.get_conversation("old").title == "Old"


def test_sqlite_newer_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (99, 'from_the_future', '2030-01-01T00:00:00.000000Z')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"schema version 99 .*newer than this threadline understands.*upgrade"):
        open_store(f"sqlite:///{path}")
    rows = sqlite3.connect(path).execute(f"SELECT max(version) FROM {MIGRATIONS_TABLE}").fetchall()
    assert rows == [(99,)]


def test_postgres_newer_schema_is_refused() -> None:
    with postgres_url() as url:
        open_store(url).close()
        _pg(f"INSERT INTO \"{_schema(url)}\".{MIGRATIONS_TABLE} (version, name) VALUES (99, 'from_the_future')")
        with pytest.raises(StoreError, match=r"schema version 99 .*newer than this threadline understands"):
            open_store(url)


def test_a_foreign_migration_history_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT)")
    conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (1, 'someone_elses_schema', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not made by threadline"):
        open_store(f"sqlite:///{path}")
