"""Fixtures of the durable tests: the fake OpenAI server the workers' apps call, and workers on a SQLite store
(``workers``) or on a PostgreSQL schema of their own (``pg_workers``; dropped after the test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.durable._workers import PostgresWorkers, Workers
from tests.providers.servers.openai import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def workers(tmp_path: Path, server: FakeOpenAI) -> Iterator[Workers]:
    made = Workers(tmp_path, server)
    try:
        yield made
    finally:
        (tmp_path / "go").write_text("")  # let a tool blocked in a worker end, so the worker stops at once
        made.stop_all()


@pytest.fixture
def pg_workers(tmp_path: Path, server: FakeOpenAI) -> Iterator[PostgresWorkers]:
    made = PostgresWorkers(tmp_path, server)
    try:
        yield made
    finally:
        made.stop_all()
        made.drop()
