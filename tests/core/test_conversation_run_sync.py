"""`Conversation.run_sync`: a turn driven from synchronous code, shown as it happens (what the CLI does)."""

from __future__ import annotations

import pytest

from threadline import AssistantMessage, Message, ToolMessage, llm
from threadline.testing import ScriptedModel

from ._support import call, calls


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"22 C and sunny in {city}"


def test_run_sync_shows_each_message_and_the_streamed_text_and_returns_how_the_turn_ended() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Paris"})), "It is sunny in Paris."])
    conversation = llm.model(model).tools(get_weather).request("Weather in Paris?").prompt_conversation()
    seen: list[Message] = []
    pieces: list[str] = []

    result = conversation.run_sync(seen.append, on_text=pieces.append)

    assert [type(message) for message in seen] == [AssistantMessage, ToolMessage, AssistantMessage]
    assert seen[1].content == "22 C and sunny in Paris"  # type: ignore[union-attr]
    assert "".join(pieces) == "It is sunny in Paris."
    assert result.text == "It is sunny in Paris."
    assert conversation.last_turn is result
    assert list(conversation.messages)[-3:] == seen  # everything shown is in the log


async def test_run_sync_inside_an_event_loop_says_what_to_do_and_leaves_the_turn_to_run() -> None:
    model = ScriptedModel(["Paris."])
    conversation = llm.model(model).request("Capital of France?").prompt_conversation()

    with pytest.raises(RuntimeError, match="running event loop"):
        conversation.run_sync()

    assert model.requests == []  # nothing was sent
    async for _ in conversation:  # the armed turn still runs
        pass
    assert conversation.text == "Paris."
