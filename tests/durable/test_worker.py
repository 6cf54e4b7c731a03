"""Durable turns run by real ``threadline worker`` processes on a SQLite store, with the fake OpenAI server as the
model: a queued turn's result, a key that runs once, a worker without the turn's app, and a worker killed with
SIGKILL inside a tool of the turn and restarted with the same ``--id``."""

from __future__ import annotations

import signal

import pytest

pytest.importorskip("dbos")

from tests.durable._workers import Workers, wait_for
from tests.providers.servers._base import Answer, ToolUse
from tests.providers.servers.openai import FakeOpenAI
from threadline.durable import Client, UnknownApp
from threadline.errors import UserError
from threadline.message_list import call_waits
from threadline.message_types import ToolMessage, UserMessage


def test_a_submitted_turn_is_run_by_a_worker(workers: Workers, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(ToolUse("add", '{"a": 1, "b": 2}'),)), Answer(text="It is 3."))
    worker = workers.start()
    with Client(workers.url) as client:
        handle = client.submit("What is 1 + 2?", app="chat")
        assert handle.conversation_id and handle.id
        outcome = handle.result(timeout=60)
        assert (outcome.stop_reason, outcome.text) == ("end", "It is 3.")
        log = client.store.load(handle.conversation_id)
    log.validate()
    assert [m.role for m in log] == ["user", "assistant", "tool", "assistant"]
    assert log[0].id == f"req-{handle.id}"
    assert server.count == 2
    rows = workers.dbos_rows()
    assert len(rows) >= 4  # inputs, output, two steps
    assert all(len(row) < 1024 for row in rows), [len(row) for row in rows]
    # SIGTERM: the worker stops and exits.
    worker.terminate()
    assert worker.wait(30) == 0


def test_the_same_key_runs_once_in_one_conversation(workers: Workers, server: FakeOpenAI) -> None:
    server.add(Answer(text="Hello."))
    workers.start()
    with Client(workers.url) as client:
        first = client.submit("Hi", app="chat", key="order-17")
        again = client.submit("Hi", app="chat", key="order-17")
        assert (
            (again.id, again.conversation_id)
            == (first.id, first.conversation_id)
            == ("order-17", first.conversation_id)
        )
        assert first.result(timeout=60).text == "Hello."
        third = client.submit("Hi", app="chat", key="order-17")
        assert third.conversation_id == first.conversation_id
        assert third.result(timeout=60).text == "Hello."
        log = client.store.load(first.conversation_id)
    assert [m.role for m in log] == ["user", "assistant"]
    assert server.count == 1


def test_a_second_turn_continues_the_conversation(workers: Workers, server: FakeOpenAI) -> None:
    server.add(Answer(text="One."), Answer(text="Two."))
    workers.start()
    with Client(workers.url) as client:
        first = client.submit("Count", app="chat")
        second = client.submit("Go on", app="chat", conversation_id=first.conversation_id)
        assert first.result(timeout=60).text == "One."
        assert second.result(timeout=60).text == "Two."
        log = client.store.load(first.conversation_id)
    assert [(m.role, getattr(m, "content", None)) for m in log] == [
        ("user", "Count"), ("assistant", "One."), ("user", "Go on"), ("assistant", "Two.")
    ]  # fmt: skip


def test_an_app_no_worker_offers_cannot_be_submitted(workers: Workers, server: FakeOpenAI) -> None:
    workers.start()
    with Client(workers.url) as client:
        with pytest.raises(UserError, match=r"no worker has offered app 'billing'.*--app module:billing"):
            client.submit("Hi", app="billing")
        assert client.store.list_conversations() == []
    assert server.count == 0


def test_a_worker_without_the_app_fails_the_turn_clearly(workers: Workers, server: FakeOpenAI) -> None:
    # A worker offered "billing" and stopped; the one running now serves another app on the same provider's queue.
    first = workers.start("myapp:billing", worker_id="w1")
    first.terminate()
    assert first.wait(30) == 0
    workers.start("myapp:chat", worker_id="w2")
    with Client(workers.url) as client:
        handle = client.submit("Hi", app="billing")
        with pytest.raises(UnknownApp, match=r"no app 'billing' \(its apps: chat\)"):
            handle.result(timeout=60)
        assert not client.store.has_conversation(handle.conversation_id)
    assert server.count == 0


def test_a_worker_killed_inside_an_idempotent_tool_reruns_it_after_its_restart(
    workers: Workers, server: FakeOpenAI
) -> None:
    server.add(Answer(tool_calls=(ToolUse("slow", '{"x": 7}'),)), Answer(text="Done."))
    first = workers.start(worker_id="w1")
    with Client(workers.url) as client:
        handle = client.submit("Run slow", app="chat")
        wait_for(lambda: (workers.dir / "started").exists(), "the tool to start")
        assert server.count == 1
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        (workers.dir / "go").write_text("")
        workers.start(worker_id="w1")
        outcome = handle.result(timeout=90)
        assert (outcome.stop_reason, outcome.text) == ("end", "Done.")
        log = client.store.load(handle.conversation_id)
    log.validate()
    assert [m.id for m in log if isinstance(m, UserMessage)] == [f"req-{handle.id}"]
    # The model call that asked for the tool was not repeated: one more request, answered "Done.", which read the
    # result of the tool, run again because it is idempotent.
    assert server.count == 2
    assert (workers.dir / "runs").read_text().splitlines() == ["slow", "slow"]
    assert [m.role for m in log] == ["user", "assistant", "tool", "assistant"]
    [result] = [m for m in log if isinstance(m, ToolMessage)]
    assert (result.content, result.is_error) == ("7", False)


def test_a_worker_killed_inside_another_tool_leaves_it_waiting_for_a_person(
    workers: Workers, server: FakeOpenAI
) -> None:
    server.add(Answer(tool_calls=(ToolUse("charge", '{"amount": 30}'),)))
    first = workers.start(worker_id="w1")
    with Client(workers.url) as client:
        handle = client.submit("Charge 30", app="chat")
        wait_for(lambda: (workers.dir / "started").exists(), "the tool to start")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        (workers.dir / "go").write_text("")
        workers.start(worker_id="w1")
        outcome = handle.result(timeout=90)
        assert outcome.stop_reason == "awaiting"
        log = client.store.load(handle.conversation_id)
    log.validate()
    # It may have charged the card: it is not run again behind anyone's back, a person decides.
    assert (workers.dir / "runs").read_text().splitlines() == ["charge"]
    assert server.count == 1
    waits = call_waits(log).waiting
    assert [w.tool for w in waits] == ["charge"] and "may have run" in (waits[0].reason or "")
