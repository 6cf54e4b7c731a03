"""Deciding waiting tool calls through the durable `Client` (``approve``, ``deny``, ``submit_result``, ``resume``):
the decision is recorded in the store, then the turn's resumption is queued and run by a real ``threadline
worker``, with the fake OpenAI server as the model."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from tests.durable._workers import Workers
from tests.providers.servers._base import Answer, ToolUse
from tests.providers.servers.openai import FakeOpenAI
from threadline.conversation.conversation import Conversation
from threadline.durable import Client, TurnHandle
from threadline.errors import AwaitingDecision, UserError

APP = """
from pathlib import Path

import threadline

HERE = Path(__file__).parent


@threadline.tool(approval=True)
def refund(amount: int) -> str:
    \"\"\"Refund an amount (a person approves it first).\"\"\"
    with open(HERE / "refunds", "a") as refunds:
        refunds.write(f"{amount}\\n")
    return f"refunded {amount}"


@threadline.tool(external=True)
def ship(parcel: str) -> str:
    \"\"\"Ship a parcel (done outside, by the warehouse).\"\"\"
    raise AssertionError("an external tool does not run here")


chat = threadline.llm.model("openai:gpt-4o-mini").tools(refund, ship)
"""


@pytest.fixture(autouse=True)
def decide_app(tmp_path: Path) -> None:
    """The app of these tests, beside the workers' own (``decideapp:chat``)."""
    (tmp_path / "decideapp.py").write_text(textwrap.dedent(APP), encoding="utf-8")


def refund_call(amount: int) -> Answer:
    return Answer(tool_calls=(ToolUse("refund", f'{{"amount": {amount}}}'),))


def waiting_turn(client: Client, text: str = "Refund 5") -> tuple[str, list[str]]:
    """Submit a turn that ends waiting; its conversation id and the ids of the calls that wait."""
    handle = client.submit(text, app="chat")
    assert handle.result(timeout=60).stop_reason == "awaiting"
    waiting = Conversation.load(handle.conversation_id, client.store).awaiting
    return handle.conversation_id, [w.call.id for w in waiting]


def refunds(workers: Workers) -> list[str]:
    path = workers.dir / "refunds"
    return path.read_text().splitlines() if path.exists() else []


def test_approve_queues_the_resumption_which_runs_the_call_once(workers: Workers, server: FakeOpenAI) -> None:
    server.add(refund_call(5), Answer(text="Refunded 5."))
    workers.start("decideapp:chat")
    with Client(workers.url) as client:
        cid, [call_id] = waiting_turn(client)
        assert refunds(workers) == [] and server.count == 1
        handle = client.approve(cid, call_id, app="chat", by="alice", key="approve-1")
        assert isinstance(handle, TurnHandle) and (handle.id, handle.conversation_id) == ("approve-1", cid)
        outcome = handle.result(timeout=60)
        assert (outcome.stop_reason, outcome.text) == ("end", "Refunded 5.")
        # The same key again decides nothing and returns the same resumption.
        again = client.approve(cid, call_id, app="chat", by="alice", key="approve-1")
        assert again is not None and again.id == "approve-1"
        log = client.store.load(cid)
    log.validate()
    assert refunds(workers) == ["5"]
    assert server.count == 2
    assert [(m.role, getattr(m, "state", None)) for m in log] == [
        ("user", None), ("assistant", None),
        ("approval", "requested"), ("approval", "approved"), ("approval", "started"),
        ("tool", None), ("assistant", None),
    ]  # fmt: skip


def test_deny_queues_the_resumption_and_the_model_reads_the_denial(workers: Workers, server: FakeOpenAI) -> None:
    server.add(refund_call(500), Answer(text="I cannot refund that."))
    workers.start("decideapp:chat")
    with Client(workers.url) as client:
        cid, [call_id] = waiting_turn(client, "Refund 500")
        handle = client.deny(cid, call_id, app="chat", by="bob", reason="too much")
        assert handle is not None
        assert handle.result(timeout=60).text == "I cannot refund that."
        client.store.load(cid).validate()
    assert refunds(workers) == []
    assert "denied by bob: too much" in str(server.bodies[-1])


def test_the_last_decision_queues_the_resumption(workers: Workers, server: FakeOpenAI) -> None:
    server.add(
        Answer(tool_calls=(ToolUse("refund", '{"amount": 1}'), ToolUse("ship", '{"parcel": "p1"}'))),
        Answer(text="Refunded and shipped."),
    )
    workers.start("decideapp:chat")
    with Client(workers.url) as client:
        cid, [refund_id, ship_id] = waiting_turn(client, "Refund 1 and ship p1")
        assert client.approve(cid, refund_id, app="chat") is None  # the shipment still waits: nothing queued
        handle = client.submit_result(cid, ship_id, "shipped p1", app="chat")
        assert handle is not None
        assert handle.result(timeout=60).text == "Refunded and shipped."
        client.store.load(cid).validate()
    assert refunds(workers) == ["1"]
    assert server.count == 2
    assert "shipped p1" in str(server.bodies[-1])


def test_a_decision_on_a_call_that_does_not_wait_queues_nothing(workers: Workers, server: FakeOpenAI) -> None:
    server.add(refund_call(5), Answer(text="Refunded 5."))
    workers.start("decideapp:chat")
    with Client(workers.url) as client:
        cid, [call_id] = waiting_turn(client)
        before = len(client.dbos.list_workflows())
        with pytest.raises(AwaitingDecision, match="does not wait"):
            client.approve(cid, "call-nope", app="chat")
        with pytest.raises(AwaitingDecision, match="not a result"):
            client.submit_result(cid, call_id, "done", app="chat")
        with pytest.raises(UserError, match="edited arguments"):
            client.approve(cid, call_id, app="chat", arguments={"amount": 4})
        assert len(client.dbos.list_workflows()) == before
        assert [w.call.id for w in Conversation.load(cid, client.store).awaiting] == [call_id]
    assert server.count == 1
    assert refunds(workers) == []


def test_resume_after_a_decision_made_with_the_library(workers: Workers, server: FakeOpenAI) -> None:
    server.add(refund_call(7), Answer(text="Refunded 7."))
    workers.start("decideapp:chat")
    with Client(workers.url) as client:
        cid, [call_id] = waiting_turn(client)
        Conversation.load(cid, client.store).approve(call_id, by="carol")
        handle = client.resume(cid, app="chat")
        assert handle.conversation_id == cid
        outcome = handle.result(timeout=60)
        assert (outcome.stop_reason, outcome.text) == ("end", "Refunded 7.")
        # Resuming a conversation that ended asks the model nothing.
        assert client.resume(cid, app="chat").result(timeout=60) == outcome
        client.store.load(cid).validate()
    assert refunds(workers) == ["7"]
    assert server.count == 2


def test_a_decision_retried_after_the_client_died_before_queuing_queues_the_resumption(
    workers: Workers, server: FakeOpenAI
) -> None:
    # A client that recorded its decision and died before queuing the resumption: recorded here with the library,
    # as Client.approve/deny/submit_result do first. The retry decides nothing twice and queues the resumption.
    server.add(
        refund_call(2),
        Answer(text="Refunded 2."),
        refund_call(900),
        Answer(text="Not 900."),
        Answer(tool_calls=(ToolUse("ship", '{"parcel": "p9"}'),)),
        Answer(text="Shipped."),
    )
    workers.start("decideapp:chat")
    with Client(workers.url) as client:
        cid, [small] = waiting_turn(client, "Refund 2")
        Conversation.load(cid, client.store).approve(small, by="alice")
        handle = client.approve(cid, small, app="chat", by="alice", key="retry-approve")
        assert handle is not None and handle.id == "retry-approve"
        assert handle.result(timeout=60).text == "Refunded 2."

        assert client.submit("Refund 900", app="chat", conversation_id=cid).result(timeout=60).stop_reason == (
            "awaiting"
        )
        [large] = [w.call.id for w in Conversation.load(cid, client.store).awaiting]
        Conversation.load(cid, client.store).deny(large, by="alice", reason="too much")
        handle = client.deny(cid, large, app="chat", by="alice", reason="too much")
        assert handle is not None and handle.result(timeout=60).text == "Not 900."

        assert client.submit("Ship p9", app="chat", conversation_id=cid).result(timeout=60).stop_reason == "awaiting"
        [ship_id] = [w.call.id for w in Conversation.load(cid, client.store).awaiting]
        Conversation.load(cid, client.store).submit_result(ship_id, "shipped p9")
        handle = client.submit_result(cid, ship_id, "shipped p9", app="chat")
        assert handle is not None and handle.result(timeout=60).text == "Shipped."
        log = client.store.load(cid)
    log.validate()
    decisions = [(m.tool_call_id, m.state) for m in log if getattr(m, "state", None) in ("approved", "denied")]
    assert decisions == [(small, "approved"), (large, "denied")]  # each recorded once
    assert [m.content for m in log if m.role == "tool" and m.tool_call_id == ship_id] == ["shipped p9"]
    assert refunds(workers) == ["2"]
    assert server.count == 6
