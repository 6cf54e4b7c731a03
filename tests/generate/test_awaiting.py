"""generate_text with tools that wait: the result says ``stop_reason="awaiting"`` and lists the calls; the caller
decides with approve_call / deny_call / submit_call_result and passes the messages back to go on; a result that waits
is never cached, and a continued request is never answered from the cache of another decision."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core._support import call, calls
from threadline import (
    ApprovalRequired,
    AwaitingDecision,
    Conversation,
    ConversationConfig,
    ToolMessage,
    agent_tool,
    generate_text,
    llm,
    open_store,
    request_hash,
    tool,
)
from threadline.engine.waits import decision_entry
from threadline.generate import approve_call, deny_call, submit_call_result
from threadline.generate.result import cache_key
from threadline.runs import Node, Run
from threadline.store import Store
from threadline.testing import ScriptedModel
from threadline.tools import call_approved

paid: list[float] = []


@tool(approval=True)
def pay(amount: float) -> str:
    """Pay someone."""
    paid.append(amount)
    return f"paid {amount}"


@tool(external=True)
def sign(document: str) -> str:
    """A person signs a document."""
    raise AssertionError("an external tool never runs here")


@tool
def transfer(amount: float) -> str:
    """Move money; over 100 needs approval."""
    if amount > 100 and not call_approved():
        raise ApprovalRequired(f"{amount} is over the limit of 100")
    paid.append(amount)
    return f"moved {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    paid.clear()


def sent_roles(model: ScriptedModel, index: int) -> list[str]:
    return [message.role for message in model.requests[index].messages]


async def test_an_approval_tool_makes_the_result_wait_and_approving_goes_on() -> None:
    model = ScriptedModel([calls(call("pay", {"amount": 5}, id="c1")), "Paid Bob."])
    result = await generate_text(model=model, prompt="Pay Bob 5", tools=[pay])

    assert result.stop_reason == "awaiting"
    assert result.text == ""
    assert [(item.call.id, item.tool, item.kind) for item in result.awaiting] == [("c1", "pay", "approval")]
    assert paid == []

    messages = approve_call(result.messages, "c1", by="alice")
    assert len(result.messages) == 3  # the result's messages are left as they were
    again = await generate_text(model=model, messages=messages, tools=[pay])

    assert again.stop_reason == "end" and again.text == "Paid Bob."
    assert again.awaiting == []
    assert paid == [5]
    # the "started" entry written just before the approved call ran, its result, the answer
    assert [message.role for message in again.new_messages] == ["approval", "tool", "assistant"]
    # The model never reads an approval entry, and it reads the call's result.
    assert "approval" not in sent_roles(model, 1)
    assert sent_roles(model, 1) == ["user", "assistant", "tool"]
    again.messages.validate()


async def test_a_denied_call_never_runs_and_the_model_reads_why() -> None:
    model = ScriptedModel([calls(call("pay", {"amount": 500}, id="c1")), "I will not pay."])
    result = await generate_text(model=model, prompt="Pay Bob 500", tools=[pay])
    messages = deny_call(result.messages, "c1", by="bob", reason="too much")
    again = await generate_text(model=model, messages=messages, tools=[pay])

    assert again.text == "I will not pay."
    assert paid == []
    [answer] = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert answer.is_error and answer.content == "denied by bob: too much"


async def test_an_external_call_goes_on_with_the_submitted_result() -> None:
    model = ScriptedModel([calls(call("sign", {"document": "lease"}, id="c1")), "Signed."])
    result = await generate_text(model=model, prompt="Get the lease signed", tools=[sign])
    assert [(item.call.id, item.kind) for item in result.awaiting] == [("c1", "external")]

    with pytest.raises(AwaitingDecision, match="submit_call_result"):
        approve_call(result.messages, "c1", by="alice")
    messages = submit_call_result(result.messages, "c1", {"signed_by": "Carol"})
    again = await generate_text(model=model, messages=messages, tools=[sign])

    assert again.text == "Signed."
    [answer] = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert answer.content == '{"signed_by":"Carol"}'


async def test_a_tool_that_asks_for_approval_runs_once_approved() -> None:
    model = ScriptedModel([calls(call("transfer", {"amount": 500}, id="c1")), "Moved."])
    result = await generate_text(model=model, prompt="Move 500", tools=[transfer])
    assert result.stop_reason == "awaiting"
    assert result.awaiting[0].reason == "500.0 is over the limit of 100"
    assert paid == []

    again = await generate_text(model=model, messages=approve_call(result.messages, "c1"), tools=[transfer])
    assert again.text == "Moved." and paid == [500]


async def test_a_new_message_after_a_waiting_call_is_refused_and_nothing_is_sent() -> None:
    model = ScriptedModel([calls(call("pay", {"amount": 5}, id="c1")), "never"])
    result = await generate_text(model=model, prompt="Pay Bob 5", tools=[pay])

    with pytest.raises(AwaitingDecision, match=r"c1 \(requested\).*approve_call") as refused:
        await generate_text(model=model, messages=result.messages, prompt="Never mind", tools=[pay])
    assert refused.value.calls == ["c1"]
    assert len(model.requests) == 1

    # Passed back undecided, the run waits again at once, without asking the model.
    same = await generate_text(model=model, messages=result.messages, tools=[pay])
    assert same.stop_reason == "awaiting" and len(model.requests) == 1


async def test_deciding_a_call_that_does_not_wait_is_refused() -> None:
    model = ScriptedModel([calls(call("pay", {"amount": 5}, id="c1")), "Paid."])
    result = await generate_text(model=model, prompt="Pay Bob 5", tools=[pay])
    decided = approve_call(result.messages, "c1", by="alice")
    with pytest.raises(AwaitingDecision, match="does not wait"):
        deny_call(decided, "c1", by="bob")
    with pytest.raises(AwaitingDecision, match=r"does not wait.*c1 \(pay, approval\)"):
        approve_call(result.messages, "nope")
    assert [m.role for m in decided] == ["user", "assistant", "approval", "approval"]


async def test_a_waiting_result_is_never_cached(store: Store) -> None:
    model = ScriptedModel([calls(call("pay", {"amount": 5}, id="c1")), calls(call("pay", {"amount": 5}, id="c1"))])
    first = await generate_text(model=model, prompt="Pay Bob 5", tools=[pay], cache=store)
    second = await generate_text(model=model, prompt="Pay Bob 5", tools=[pay], cache=store)
    assert first.stop_reason == second.stop_reason == "awaiting"
    assert not second.cached
    assert len(model.requests) == 2


async def test_a_continued_request_is_never_answered_from_another_decision_s_cache(store: Store) -> None:
    model = ScriptedModel([calls(call("pay", {"amount": 5}, id="c1")), "Paid.", "Paid."])
    result = await generate_text(model=model, prompt="Pay Bob 5", tools=[pay], cache=store)
    assistant = result.messages[1]
    [waiting] = assistant.tool_calls  # type: ignore[union-attr]

    as_asked = [*result.messages, decision_entry(waiting, "approved", by="alice")]
    edited = [*result.messages, decision_entry(waiting, "approved", by="alice", arguments={"amount": 6})]
    assert request_hash(model=model, messages=as_asked, tools=[pay]) != request_hash(
        model=model, messages=edited, tools=[pay]
    )
    one = await generate_text(model=model, messages=as_asked, tools=[pay], cache=store)
    other = await generate_text(model=model, messages=edited, tools=[pay], cache=store)
    assert not one.cached and not other.cached
    assert paid == [5, 6]
    assert [m.content for m in other.new_messages if isinstance(m, ToolMessage)] == ["paid 6.0"]
    # The very same decision again is a finished request: served from the cache, the tool not run again.
    hit = await generate_text(model=model, messages=as_asked, tools=[pay], cache=store)
    assert hit.cached and paid == [5, 6]
    assert [m.role for m in hit.new_messages] == [m.role for m in one.new_messages]


# -- runs and sub-agents ------------------------------------------------------------------------------------------

NODES = [Node("gather", "Collect the figures."), Node("pay", "Pay the invoice."), Node("report", "Report.")]


def test_a_run_stops_at_a_node_whose_calls_wait_and_resume_goes_on(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    model = ScriptedModel(["Figures: 5.", calls(call("pay", {"amount": 5}, id="c1"))])
    conv = Conversation(config=ConversationConfig(model=model, tools=[pay]), store=store)
    run = Run(conv, "Pay and report", NODES)

    result = run.run()
    assert result.stop_reason == "awaiting" and not result.finished
    assert [(item.call.id, item.tool) for item in result.awaiting] == [("c1", "pay")]
    assert result.completed == ["gather"] and result.pending == ["pay", "report"]
    assert run.states() == {"gather": "done", "pay": "started", "report": "pending"}
    assert len(model.requests) == 2  # the report node never started
    assert paid == []

    # Another process decides, and resumes the run from the log alone.
    later = ScriptedModel(["Paid.", "Report: paid 5."])
    other = Conversation.load(conv.id, store, ConversationConfig(model=later, tools=[pay]))
    other.approve("c1", by="alice")
    resumed = Run.resume(conv.id, store, config=ConversationConfig(model=later, tools=[pay]))
    finished = resumed.run()
    assert finished.stop_reason == "end" and finished.finished and finished.awaiting == []
    assert paid == [5]
    assert finished.completed == ["gather", "pay", "report"]
    # The approved call ran in its node, before the node's answer.
    ran = [m for m in finished.new_messages if isinstance(m, ToolMessage)]
    assert [(m.content, m.meta.node_id) for m in ran] == [("paid 5.0", "pay")]
    store.load(conv.id).validate()
    store.close()


def test_a_run_resumed_before_the_decision_waits_again_without_a_model_call(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    model = ScriptedModel([calls(call("pay", {"amount": 5}, id="c1"))])
    conv = Conversation(config=ConversationConfig(model=model, tools=[pay]), store=store)
    assert Run(conv, "Pay", NODES[1:2]).run().stop_reason == "awaiting"
    again = Run.resume(conv.id, store, config=ConversationConfig(model=model, tools=[pay])).run()
    assert again.stop_reason == "awaiting" and [item.call.id for item in again.awaiting] == ["c1"]
    assert len(model.requests) == 1
    store.close()


async def test_a_sub_agent_whose_calls_wait_tells_the_parent_which_and_where(store: Store) -> None:
    child_model = ScriptedModel([calls(call("pay", {"amount": 5}, id="child-c1"))])
    child = llm.model(child_model).agent("You pay invoices.").tools(pay).store(store)
    parent_model = ScriptedModel([calls(call("payer", {"task": "Pay Bob 5"}, id="p1")), "The payment waits."])

    result = await generate_text(
        model=parent_model, prompt="Pay Bob", tools=[agent_tool(child, "payer", "Pays.")], cache=store
    )

    assert result.text == "The payment waits." and result.stop_reason == "end"
    [answer] = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert answer.is_error
    assert "has not answered" in answer.content and "child-c1 (pay: waits for a person's decision" in answer.content
    child_id = answer.content.split("conversation ")[-1].split(" ")[0]
    assert paid == []
    # Not cached (the wait passes): the same request runs again.
    assert store.cache_get_raw(cache_key(result.request_hash)) is None

    # A person decides on the child's conversation, named in the error, and it goes on.
    decided_model = ScriptedModel(["Paid Bob."])
    child_conversation = Conversation.load(child_id, store, ConversationConfig(model=decided_model, tools=[pay]))
    assert [item.call.id for item in child_conversation.awaiting] == ["child-c1"]
    child_conversation.approve("child-c1", by="alice")
    async for _ in child_conversation.run():  # resume, from async code
        pass
    assert child_conversation.text == "Paid Bob."
    assert paid == [5]


async def test_an_unstored_sub_agent_whose_calls_wait_says_they_cannot_be_decided() -> None:
    child = llm.model(ScriptedModel([calls(call("pay", {"amount": 5}, id="child-c1"))])).tools(pay)
    parent_model = ScriptedModel([calls(call("payer", {"task": "Pay Bob 5"})), "Cannot pay now."])
    result = await generate_text(model=parent_model, prompt="Pay Bob", tools=[agent_tool(child, "payer", "Pays.")])
    [answer] = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert answer.is_error and "child-c1" in answer.content and "not stored" in answer.content
