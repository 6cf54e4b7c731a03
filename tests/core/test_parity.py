"""The sync and async entry points drive the same engine and produce the same log
(docs/architecture.md#sync-and-async)."""

from __future__ import annotations

from typing import Any

from threadline import Conversation, ModelError, llm
from threadline.testing import ScriptedModel

from ._support import call, calls, shapes


def get_weather(city: str) -> str:
    """Weather for a city."""
    if city == "Atlantis":
        raise LookupError("no such city")
    return f"22 C in {city}"


async def lookup(city: str) -> dict[str, Any]:
    """Facts about a city."""
    return {"city": city, "population": len(city) * 1000}


def script() -> list[Any]:
    """A first turn with two tool rounds (one bad call among them) and a second turn that fails then recovers."""
    return [
        calls(
            call("get_weather", {"city": "Paris"}, id="c1"),
            call("lookup", {"city": "Paris"}, id="c2"),
            call("get_weather", {"city": "Atlantis"}, id="c3"),
        ),
        calls(call("get_weather", {"town": "Rome"}, id="c4"), call("nope", {}, id="c5"), content="Checking Rome."),
        "Paris: 22 C, 5,000 people.",
        ModelError("overloaded", type="server", partial="Rome is"),
        "Rome is warm.",
    ]


def builder(model: ScriptedModel) -> Any:
    return llm.model(model).agent("Be brief.").tools(get_weather, lookup).request("Tell me about Paris.")


def run_sync() -> tuple[Conversation, ScriptedModel]:
    model = ScriptedModel(script())
    conversation = builder(model).prompt_conversation()
    conversation.continuation.prompt()
    try:
        conversation.continuation.request("And Rome?").prompt()
    except ModelError:
        pass
    conversation.continuation.prompt()
    return conversation, model


async def run_async() -> tuple[Conversation, ScriptedModel]:
    model = ScriptedModel(script())
    conversation = builder(model).prompt_conversation()
    async for _ in conversation:
        pass
    try:
        await conversation.continuation.request("And Rome?").prompt_async()
    except ModelError:
        pass
    async for _ in conversation.continuation.prompt_conversation():
        pass
    return conversation, model


async def run_stream() -> tuple[Conversation, ScriptedModel]:
    model = ScriptedModel(script())
    first = builder(model).stream()
    async for _ in first:
        pass
    conversation = first.conversation
    assert conversation is not None
    try:
        async for _ in conversation.continuation.request("And Rome?").stream():
            pass
    except ModelError:
        pass
    async for _ in conversation.continuation.stream():
        pass
    return conversation, model


def test_sync_prompt_and_async_paths_produce_the_same_log() -> None:
    import asyncio

    sync_conversation, sync_model = run_sync()
    async_conversation, async_model = asyncio.run(run_async())
    stream_conversation, stream_model = asyncio.run(run_stream())
    expected = shapes(sync_conversation.messages)
    assert shapes(async_conversation.messages) == expected
    assert shapes(stream_conversation.messages) == expected
    # The model was sent the same thing on every path.
    for other in (async_model, stream_model):
        assert [shapes(r.messages) for r in other.requests] == [shapes(r.messages) for r in sync_model.requests]
        assert [r.tool_names for r in other.requests] == [r.tool_names for r in sync_model.requests]
    sync_conversation.messages.validate()
    # The scenario really covered what it claims: errors, a failure with partial output, a recovery.
    kinds = {shape[0] for shape in expected}
    assert kinds == {"SystemMessage", "user", "assistant", "tool"}
    assert sum(1 for shape in expected if shape[0] == "tool" and shape[-1]) == 3  # three error results
    assert any(shape[0] == "assistant" and shape[3] is not None and shape[1] == "Rome is" for shape in expected)
    assert expected[-1] == ("assistant", "Rome is warm.", (), None)
