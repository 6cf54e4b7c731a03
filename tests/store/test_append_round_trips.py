"""A PostgreSQL append of new messages is one round trip to the server (issue 34): its statement is a transaction by
itself, with no ``BEGIN`` and ``COMMIT`` of their own. Before: three (``BEGIN``, the statement, ``COMMIT``). Appends
that repeat a stored message, or whose count is not the expected one, take the transaction with the checks, as
before, and end as they did."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg._connection_base import BaseConnection

from tests.store._backends import postgres_url
from threadline import AssistantMessage, ConversationBusy, StoreError, UserMessage
from threadline.store import open_store
from threadline.store.postgres import PostgresStore


@pytest.fixture
def pg_store() -> Iterator[PostgresStore]:
    with postgres_url() as url:
        store = open_store(url)
        assert isinstance(store, PostgresStore)
        try:
            yield store
        finally:
            store.close()


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many statements the clients sent (one round trip each), counted client-side: a cursor's ``execute``, and
    a connection's own commands (``BEGIN``, ``COMMIT``, ``ROLLBACK``)."""
    count = [0]
    execute = psycopg.Cursor.execute
    command = BaseConnection._exec_command

    def counted_execute(self: psycopg.Cursor[Any], *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return execute(self, *args, **kwargs)

    def counted_command(self: BaseConnection[Any], *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return command(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted_execute)
    monkeypatch.setattr(BaseConnection, "_exec_command", counted_command)
    return count


def test_an_append_of_new_messages_is_one_round_trip(pg_store: PostgresStore, round_trips: list[int]) -> None:
    pg_store.create_conversation(id="c")
    question, answer = UserMessage(content="one"), AssistantMessage(content="two", model="m")
    round_trips[0] = 0
    pg_store.append("c", [question], expected_count=0)
    assert round_trips[0] == 1
    round_trips[0] = 0
    pg_store.append("c", [answer, UserMessage(content="three")])
    assert round_trips[0] == 1
    [summary] = pg_store.list_summaries()
    assert (summary.info.message_count, summary.model) == (3, "m")
    assert [m.content for m in pg_store.load("c")] == ["one", "two", "three"]


def test_the_appends_that_are_not_new_end_as_before(pg_store: PostgresStore) -> None:
    pg_store.create_conversation(id="c")
    question = UserMessage(content="one")
    pg_store.append("c", [question])
    pg_store.append("c", [question])  # a repeat: skipped
    pg_store.append("c", [question], expected_count=0)  # a repeat with its old count: nothing added
    with pytest.raises(ConversationBusy):
        pg_store.append("c", [UserMessage(content="two")], expected_count=0)
    with pytest.raises(StoreError, match="different message"):
        pg_store.append("c", [AssistantMessage(id=question.id, content="other")])
    with pytest.raises(StoreError, match="no conversation"):
        pg_store.append("missing", [UserMessage(content="x")])
    assert [m.content for m in pg_store.load("c")] == ["one"]
    assert pg_store.get_conversation("c").message_count == 1
