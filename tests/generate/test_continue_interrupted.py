"""generate_text continues a log whose tool calls a cancelled run left unanswered, as a Conversation does: each
such call is answered ``interrupted`` before the next message, instead of the input being refused."""

from __future__ import annotations

import asyncio

import pytest

from tests.core._support import call, calls
from threadline import ProtocolError, ToolMessage, generate_text, request_hash, user
from threadline.messages import INTERRUPTED_TOOL, AssistantMessage
from threadline.store import Store
from threadline.testing import ScriptedModel


async def slow_tool(x: int) -> str:
    """Takes a while."""
    await asyncio.sleep(5)
    return "done"


async def test_a_stored_run_cancelled_in_its_tool_loop_continues_with_a_new_user_message(store: Store) -> None:
    model = ScriptedModel([calls(call("slow_tool", {"x": 1}, id="k1"), call("slow_tool", {"x": 2}, id="k2"))])
    run = asyncio.create_task(
        generate_text(model=model, prompt="Go", tools=[slow_tool], store=store, conversation_id="cv1")
    )
    await asyncio.sleep(0.05)  # the tools are running
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    log = store.load("cv1")
    assert [type(m).__name__ for m in log] == ["UserMessage", "AssistantMessage"]  # the calls have no results

    follow = ScriptedModel(["Resumed."])
    messages = [*log, user("Again")]
    result = await generate_text(model=follow, messages=messages, cache=store)

    assert result.text == "Resumed."
    sent = follow.requests[0].messages
    answers = [m for m in sent if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content, m.is_error) for m in answers] == [
        ("k1", INTERRUPTED_TOOL, True),
        ("k2", INTERRUPTED_TOOL, True),
    ]
    assert [type(m).__name__ for m in result.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "ToolMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    # The hash is of the input as given, and the repaired request is served from the cache like any other.
    assert result.request_hash == request_hash(model=follow, messages=messages)
    hit = await generate_text(model=follow, messages=messages, cache=store)
    assert hit.cached and hit.text == "Resumed."
    assert [m.content for m in hit.steps[0].messages] == [m.content for m in sent]


async def test_other_protocol_breaks_are_still_refused() -> None:
    orphan = ToolMessage(tool_call_id="nope", tool_name="slow_tool", content="x")

    with pytest.raises(ProtocolError):
        await generate_text(model=ScriptedModel(["no"]), messages=[user("a"), orphan, user("b")])


async def test_a_log_that_answers_its_calls_is_sent_as_it_is() -> None:
    asked = AssistantMessage(content=None, tool_calls=[call("slow_tool", {"x": 1}, id="k1")])
    answered = ToolMessage(tool_call_id="k1", tool_name="slow_tool", content="done")
    model = ScriptedModel(["ok"])

    result = await generate_text(model=model, messages=[user("a"), asked, answered, user("b")])

    assert [m.content for m in result.messages if isinstance(m, ToolMessage)] == ["done"]
