"""Durable turns on a PostgreSQL store: DBOS keeps its state in a schema of the store's own database, two stores in
one database never share queued turns, and a worker killed with SIGKILL inside a tool and restarted finishes the
turn without repeating a finished model call."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.durable._workers import PostgresWorkers, wait_for
from tests.providers.servers._base import Answer, ToolUse
from tests.providers.servers.openai import FakeOpenAI
from threadline.durable import Client
from threadline.message_types import ToolMessage, UserMessage


def test_a_turn_runs_on_a_postgres_worker_with_dbos_beside_the_store(
    pg_workers: PostgresWorkers, server: FakeOpenAI
) -> None:
    server.add(Answer(tool_calls=(ToolUse("add", '{"a": 2, "b": 2}'),)), Answer(text="It is 4."))
    pg_workers.start()
    with Client(pg_workers.url) as client:
        handle = client.submit("What is 2 + 2?", app="chat")
        outcome = handle.result(timeout=60)
        assert (outcome.stop_reason, outcome.text) == ("end", "It is 4.")
        log = client.store.load(handle.conversation_id)
    log.validate()
    assert [m.role for m in log] == ["user", "assistant", "tool", "assistant"]
    assert "workflow_status" in pg_workers.dbos_tables()  # DBOS's tables, in the store's own "<schema>_dbos"


def test_a_postgres_worker_killed_inside_a_tool_finishes_the_turn_after_its_restart(
    pg_workers: PostgresWorkers, server: FakeOpenAI
) -> None:
    server.add(Answer(tool_calls=(ToolUse("slow", '{"x": 5}'),)), Answer(text="Done."))
    first = pg_workers.start(worker_id="pg1")
    with Client(pg_workers.url) as client:
        handle = client.submit("Run slow", app="chat")
        wait_for(lambda: (pg_workers.dir / "started").exists(), "the tool to start")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        (pg_workers.dir / "go").write_text("")
        pg_workers.start(worker_id="pg1")
        outcome = handle.result(timeout=90)
        assert (outcome.stop_reason, outcome.text) == ("end", "Done.")
        log = client.store.load(handle.conversation_id)
    log.validate()
    assert server.count == 2  # the model call that asked for the tool was not repeated
    assert [m.id for m in log if isinstance(m, UserMessage)] == [f"req-{handle.id}"]
    [result] = [m for m in log if isinstance(m, ToolMessage)]
    assert (result.content, result.is_error) == ("5", False)  # slow is idempotent: it ran again


def test_two_stores_in_one_database_never_run_each_others_turns(tmp_path: Path, server: FakeOpenAI) -> None:
    server.add(Answer(text="From store A."))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = PostgresWorkers(tmp_path / "a", server), PostgresWorkers(tmp_path / "b", server)
    try:
        first.start(worker_id="a1")
        second.start(worker_id="b1")
        with Client(first.url) as client:
            outcome = client.submit("Hello A", app="chat").result(timeout=60)
            assert outcome.text == "From store A."
            assert len(client.store.list_conversations()) == 1
        with Client(second.url) as other:
            assert other.store.list_conversations() == []  # store B's worker took nothing of store A's
    finally:
        for made in (first, second):
            made.stop_all()
            made.drop()
