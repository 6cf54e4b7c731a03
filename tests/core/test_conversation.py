"""`Conversation`: owning the log, continuing it, saving and restoring it, surviving a crash mid-turn (DESIGN §4)."""

from __future__ import annotations

import asyncio
import json

import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    MessageList,
    ModelError,
    ToolMessage,
    assistant,
    llm,
    user,
)
from threadline.testing import ScriptedModel

from ._support import call, calls, roles, shapes


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def test_conversation_owns_the_messagelist_it_is_given() -> None:
    log = MessageList([user("hi"), assistant("hello")])
    conversation = Conversation(messages=log)
    assert conversation.messages is log
    assert isinstance(conversation.config, ConversationConfig)
    assert conversation.id and isinstance(conversation.id, str)
    assert Conversation().id != Conversation().id
    assert conversation.text == "hello"


def test_conversation_accepts_a_plain_list_and_refuses_non_messages() -> None:
    conversation = Conversation(messages=[user("hi")], id="c-1")
    assert isinstance(conversation.messages, MessageList)
    assert conversation.id == "c-1"
    with pytest.raises(TypeError):
        Conversation(messages=[{"role": "user", "content": "hi"}])  # type: ignore[list-item]


def test_add_appends_to_the_log() -> None:
    conversation = Conversation()
    conversation.add(user("a"), assistant("b"))
    assert [m.content for m in conversation.messages] == ["a", "b"]
    assert Conversation().text is None


def test_save_restore_and_continue_on_another_model() -> None:
    first = ScriptedModel([calls(call("get_weather", {"city": "Paris"}, id="c1")), "Sunny, 22 C."])
    conversation = (
        llm.model(first).agent("Be brief.").tools(get_weather).request("Weather in Paris?").prompt_conversation()
    )
    conversation.continuation.prompt()
    data = json.loads(json.dumps(conversation.messages.to_dict()))  # as written to and read from a file

    restored = Conversation(messages=MessageList.from_dict(data))
    assert shapes(restored.messages) == shapes(conversation.messages)
    assert [m.id for m in restored.messages] == [m.id for m in conversation.messages]

    second = ScriptedModel(["Rome: 25 C."])
    text = restored.continuation.model(second).tools(get_weather).request("And Rome?").prompt()
    assert text == "Rome: 25 C."
    sent = second.requests[0].messages
    # Everything from the first model reached the second, tool call and result included.
    assert [type(m).__name__ for m in sent] == [
        "SystemMessage",
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "UserMessage",
    ]
    assert sent[3].tool_calls[0].name == "get_weather"  # type: ignore[union-attr]
    assert sent[4].content == "22 C in Paris"
    restored.messages.validate()


def test_a_turn_cut_off_after_the_tool_call_message_is_repaired_after_a_reload() -> None:
    model = ScriptedModel(
        [calls(call("get_weather", {"city": "Paris"}, id="c1"), call("get_weather", {"city": "Oslo"}, id="c2"))]
    )
    conversation = llm.model(model).tools(get_weather).request("Weather?").prompt_conversation()

    async def crash_after_first_message() -> None:
        turn = conversation.run()
        async for message in turn:  # type: ignore[attr-defined]
            assert isinstance(message, AssistantMessage)
            break
        await turn.aclose()  # type: ignore[attr-defined]

    asyncio.run(crash_after_first_message())
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage"]
    conversation.messages.validate()  # a log may end with unanswered calls

    saved = conversation.messages.to_json()
    model2 = ScriptedModel(["Sorry, I lost the results; ask again."])
    restored = Conversation(messages=MessageList.from_json(saved), config=ConversationConfig(model=model2))
    restored.continuation.prompt()
    repaired = [m for m in restored.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.is_error, m.content.startswith("interrupted")) for m in repaired] == [
        ("c1", True, True),
        ("c2", True, True),
    ]
    assert roles(model2.requests[0].messages[1:]) == ["UserMessage", "AssistantMessage", "ToolMessage", "ToolMessage"]
    restored.messages.validate()


def test_a_failed_turn_can_be_continued() -> None:
    model = ScriptedModel([ModelError("overloaded", type="server", partial="Let me"), "Let me answer: 4."])
    conversation = Conversation(config=ConversationConfig(model=model))
    with pytest.raises(ModelError):
        conversation.continuation.request("2+2?").prompt()
    assert conversation.continuation.prompt() == "Let me answer: 4."
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage", "AssistantMessage"]
    conversation.messages.validate()


async def test_async_iteration_of_a_conversation_runs_one_turn() -> None:
    model = ScriptedModel(["first", "second"])
    conversation = llm.model(model).request("a").prompt_conversation()
    first = [m async for m in conversation]
    assert [m.content for m in first] == ["first"]
    follow = conversation.continuation.request("b").prompt_conversation()
    second = [m async for m in follow]
    assert [m.content for m in second] == ["second"]
    assert [m.content for m in conversation.messages] == ["a", "first", "b", "second"]


def test_config_fields_drive_the_turn() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "X"}))] * 5 + ["done"])
    config = ConversationConfig(model=model, tools=[get_weather], max_tool_rounds=1, tool_choice="required")
    conversation = Conversation(config=config)
    conversation.continuation.request("go").prompt()
    assert [r.tool_choice for r in model.requests] == ["required", None]
    assert model.requests[1].tools == []
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "max_tool_rounds"


def test_continuation_does_not_duplicate_tools_already_offered() -> None:
    model = ScriptedModel(["a", "b"])
    conversation = llm.model(model).tools(get_weather).request("1").prompt_conversation()
    conversation.continuation.prompt()
    conversation.continuation.tools(get_weather).request("2").prompt()
    assert model.requests[1].tool_names == ["get_weather"]
