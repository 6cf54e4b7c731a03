"""The context a model is sent around calls that waited: approval entries are never sent, every call still has its
result, the newest tool group (with calls that wait or were just approved) is never trimmed away by a tiny budget,
and a summary of what the window drops never swallows a waiting call's group."""

from __future__ import annotations

from typing import Any

from threadline import (
    ApprovalMessage,
    AssistantMessage,
    ContextSettings,
    Conversation,
    ConversationConfig,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    tool,
)
from threadline.testing import ScriptedModel

ran: list[str] = []


@tool(approval=True)
def pay(to: str) -> str:
    """Pay someone."""
    ran.append(to)
    return f"paid {to}"


@tool
def lookup(name: str) -> str:
    """Look a name up."""
    return f"{name} is a known payee"


def calls(*pairs: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in pairs])


def check_request(messages: list[Message]) -> None:
    """No approval entry, and every call of the request answered right after it, in the request."""
    assert not any(isinstance(message, ApprovalMessage) for message in messages)
    answered = {message.tool_call_id for message in messages if isinstance(message, ToolMessage)}
    for message in messages:
        if isinstance(message, AssistantMessage):
            assert {call.id for call in message.tool_calls} <= answered
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):  # never an orphan: its call is in the request before it
            assert any(
                isinstance(earlier, AssistantMessage) and message.tool_call_id in {c.id for c in earlier.tool_calls}
                for earlier in messages[:index]
            )


def run(conversation: Conversation) -> None:
    import asyncio

    async def go() -> None:
        async for _ in conversation:
            pass

    asyncio.run(go())


def test_approval_entries_are_never_sent_and_every_call_keeps_its_result() -> None:
    ran.clear()
    model = ScriptedModel(
        [
            calls(("c1", "pay", {"to": "bob"}), ("c2", "pay", {"to": "eve"}), ("c3", "lookup", {"name": "bob"})),
            "Paid Bob, not Eve.",
            "Anything else?",
        ]
    )
    chat = Conversation(config=ConversationConfig(model=model, tools=[pay, lookup]))
    chat.continuation.request("pay bob and eve").prompt()
    assert [item.call.id for item in chat.awaiting] == ["c1", "c2"]

    # While calls wait: what would be sent has no approval entry (and the waiting calls are not sent as
    # unanswered: the whole group waits with them).
    check_request(chat.build_context().messages)

    chat.approve("c1", by="alice")
    chat.deny("c2", by="alice", reason="unknown payee")
    assert chat.resume().text == "Paid Bob, not Eve."
    assert ran == ["bob"]
    chat.continuation.request("thanks").prompt()

    assert any(isinstance(m, ApprovalMessage) for m in chat.messages)  # the log keeps them
    for request in model.requests:
        check_request(request.messages)
    check_request(chat.build_context().messages)
    resumed = model.requests[1].messages
    results = {m.tool_call_id: m.content for m in resumed if isinstance(m, ToolMessage)}
    assert results == {"c1": "paid bob", "c2": "denied by alice: unknown payee", "c3": "bob is a known payee"}


def test_a_tiny_budget_never_trims_away_the_newest_tool_group() -> None:
    ran.clear()
    model = ScriptedModel(
        [
            "Hello.",
            calls(("c1", "pay", {"to": "bob " * 200}), ("c2", "lookup", {"name": "bob"})),
            "Paid.",
        ]
    )
    tiny = ContextSettings(max_messages=1, max_chars=10)
    chat = Conversation(config=ConversationConfig(model=model, tools=[pay, lookup], context=tiny))
    chat.continuation.request("hi " * 100).prompt()
    chat.continuation.request("pay bob").prompt()
    assert chat.last_turn is not None and chat.last_turn.stop_reason == "awaiting"

    chat.approve("c1", by="alice")
    chat.resume()
    sent = model.requests[-1].messages
    check_request(sent)
    # The just-approved group is the newest: sent whole after the request it answers, over the budget, its
    # approved call answered; the earlier exchange is trimmed.
    shown = [(m.role, m.content if not isinstance(m, ToolMessage) else m.tool_call_id) for m in sent[1:]]
    assert shown == [("user", "pay bob"), ("assistant", None), ("tool", "c1"), ("tool", "c2")]
    assert [c.id for c in sent[2].tool_calls] == ["c1", "c2"]  # type: ignore[union-attr]
    assert ran == ["bob " * 200]


async def test_a_summary_never_swallows_a_waiting_calls_group() -> None:
    summarizer = ScriptedModel([f"Summary {n}." for n in range(10)])
    model = ScriptedModel(["a1", "a2", calls(("c1", "pay", {"to": "bob"})), "Paid."])
    settings = ContextSettings(max_messages=2, summarizer=summarizer)
    chat = Conversation(config=ConversationConfig(model=model, tools=[pay], context=settings))
    for text in ("hello", "hello again", "pay bob"):
        chat.add(UserMessage(content=text))
        async for _ in chat:
            pass
    assert [item.call.id for item in chat.awaiting] == ["c1"]

    built = await chat.host.build_request_context(chat.host.resolve_tools())
    kept = [m for m in built.messages if not isinstance(m, SystemMessage)]
    # The group of the waiting call is the newest unit: kept, not summarised.
    assert any(isinstance(m, AssistantMessage) and m.tool_calls and m.tool_calls[0].id == "c1" for m in kept)
    assert all("pay" not in request.messages[-1].content for request in summarizer.requests)

    chat.approve("c1", by="alice")
    async for _ in chat.run():
        pass
    assert chat.text == "Paid."
    sent = model.requests[-1].messages
    check_request(sent)
    summaries = [m.content for m in sent if isinstance(m, SystemMessage) and "SUMMARY" in m.content]
    assert summaries, "the window dropped messages, so the request carries their summary"
    assert all("c1" not in request.messages[-1].content for request in summarizer.requests)


async def test_a_summary_of_a_window_that_dropped_approval_entries_is_made() -> None:
    summarizer = ScriptedModel([f"Summary {n}." for n in range(10)])
    model = ScriptedModel([calls(("s1", "pay", {"to": "bob"})), "Paid.", "You're welcome."])
    settings = ContextSettings(max_messages=2, summarizer=summarizer)
    chat = Conversation(config=ConversationConfig(model=model, tools=[pay], context=settings))
    chat.add(UserMessage(content="pay bob"))
    async for _ in chat:
        pass
    chat.approve("s1", by="alice")
    async for _ in chat.run():
        pass
    chat.add(UserMessage(content="thanks"))
    async for _ in chat:
        pass
    notes = [m.content for m in model.requests[-1].messages if isinstance(m, SystemMessage)]
    assert any(note.startswith("SUMMARY OF EARLIER MESSAGES") for note in notes)
    check_request(model.requests[-1].messages)
