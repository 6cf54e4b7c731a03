"""A PostgreSQL store whose connections the server ended (a restart, ``pg_terminate_backend``) goes on working
(issue 31, item 2.3).

Before: the first operation after a restart failed on the dead pooled connection ("terminating connection due to
administrator command"), an append among them, so a turn lost the answer it had shown. Now a transaction never
starts on a connection the server ended, and one whose connection is lost inside it runs once more on a fresh
connection. A repeated append (a retry whose first commit went unseen) is a no-op on every backend.

The connections ended are the store's own, found by the ``application_name`` its URL sets; the shared server and
its other clients are left alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from tests.store._backends import postgres_url
from tests.store._pg_drops import POSTGRES_DSN, application_name, terminate, with_query
from threadline import AssistantMessage, ConversationBusy, UserMessage
from threadline.store import Store, open_store
from threadline.store.postgres import PostgresStore


@pytest.fixture
def named() -> Iterator[tuple[PostgresStore, str]]:
    """A PostgreSQL store on a fresh schema whose connections carry a name of their own."""
    name = application_name()
    with postgres_url() as url:
        store = open_store(with_query(url, f"application_name={name}"))
        assert isinstance(store, PostgresStore)
        try:
            yield store, name
        finally:
            store.close()


def test_every_operation_a_turn_uses_works_after_the_server_ended_the_connections(
    named: tuple[PostgresStore, str],
) -> None:
    store, name = named
    store.create_conversation("weather", id="c")
    question = UserMessage(content="What is the weather in Oslo?")
    store.append("c", [question], expected_count=0)
    lease = store.try_lease("c")
    assert lease is not None
    assert terminate(name) >= 2  # the pool's connection and the lease's

    answer = AssistantMessage(content="Sunny.")
    store.append("c", [answer], expected_count=1)  # before: StoreError, "terminating connection …"
    lease.release()  # its connection is gone, and the lock with it: nothing to do, and no error
    assert [m.id for m in store.load("c")] == [question.id, answer.id]
    assert store.get_conversation("c").message_count == 2
    assert store.has_conversation("c")
    assert [m.id for m in store.read_tail("c", 10).messages] == [question.id, answer.id]
    assert [m.id for m in store.read_after("c", -1).messages] == [question.id, answer.id]
    assert store.update_metadata("c", title="Oslo").title == "Oslo"
    assert [info.id for info in store.list_conversations()] == ["c"]
    again = store.try_lease("c")
    assert again is not None
    again.release()


def test_every_connection_of_the_pool_ended_at_once(named: tuple[PostgresStore, str]) -> None:
    """A pool of several connections, all ended (a restart): each later operation finds a live one."""
    store, name = named
    store.create_conversation(id="c")
    workers = [threading.Thread(target=store.load, args=("c",)) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    terminate(name)
    for number in range(10):
        store.append("c", [UserMessage(content=f"question {number}")], expected_count=number)
    assert len(store.load("c")) == 10


def test_a_connection_lost_inside_an_append_is_tried_again_on_a_fresh_one(named: tuple[PostgresStore, str]) -> None:
    """The append waits for the conversation's row lock (held by another client) and its connection is ended while
    it waits: it runs again on a fresh connection, and lands once the lock is free."""
    store, name = named
    store.create_conversation(id="c")
    store.append("c", [UserMessage(content="one")])
    schema = store.schema
    failures: list[BaseException] = []
    answer = AssistantMessage(content="two")

    def append() -> None:
        try:
            store.append("c", [answer], expected_count=1)
        except BaseException as exc:  # reported below
            failures.append(exc)

    with psycopg.connect(POSTGRES_DSN) as holder:
        holder.execute(f'SELECT 1 FROM "{schema}".conversations WHERE id = %s FOR UPDATE', ("c",))
        writer = threading.Thread(target=append)
        writer.start()
        deadline = time.monotonic() + 30
        ended = 0
        while not ended and time.monotonic() < deadline:
            ended = terminate(name, waiting=True)  # once the append waits for the lock, inside its transaction
            time.sleep(0.02)
        assert ended == 1
        time.sleep(0.3)  # the second attempt waits for the lock too
        assert writer.is_alive()
        holder.rollback()
    writer.join(30)
    assert not writer.is_alive()
    assert failures == []  # before: StoreError, "terminating connection due to administrator command"
    assert [m.content for m in store.load("c")] == ["one", "two"]
    assert store.get_conversation("c").message_count == 2


def test_an_append_repeated_with_its_old_count_does_nothing(any_store: Store) -> None:
    """What a writer does when it cannot tell whether its append committed (its connection was lost while
    committing): it tries the same append again. That is no other writer's change, and nothing is added."""
    any_store.create_conversation(id="c")
    question, answer = UserMessage(content="one"), AssistantMessage(content="two")
    any_store.append("c", [question], expected_count=0)
    any_store.append("c", [answer], expected_count=1)
    any_store.append("c", [answer], expected_count=1)  # before: ConversationBusy
    assert [m.id for m in any_store.load("c")] == [question.id, answer.id]
    assert any_store.get_conversation("c").message_count == 2
    # Another message with the old count is still refused, and so is a repeat with a message that is not stored.
    with pytest.raises(ConversationBusy, match="changed by another writer"):
        any_store.append("c", [UserMessage(content="three")], expected_count=1)
    with pytest.raises(ConversationBusy, match="changed by another writer"):
        any_store.append("c", [answer, UserMessage(content="three")], expected_count=1)
    assert len(any_store.load("c")) == 2
