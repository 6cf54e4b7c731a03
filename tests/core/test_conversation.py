"""`Conversation`: owning the log, continuing it, saving and restoring it, surviving a crash mid-turn
(docs/architecture.md#conversations-and-the-builder)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    MessageList,
    ModelError,
    ToolMessage,
    UserError,
    assistant,
    llm,
    user,
)
from threadline.store import open_store
from threadline.testing import ScriptedModel

from ._support import call, calls, roles, shapes


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def get_time(zone: str) -> str:
    """Time in a zone."""
    return "12:00"


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


# -- repair wherever a log is continued (issue 8, item 4; r5_add_after_crash.py) ----------------------------------
def crashed_log() -> list[Any]:
    """A log that ends with a call a crash left unanswered."""
    return [user("Weather in Oslo?"), calls(call("get_weather", {"city": "Oslo"}, id="c1"))]


async def test_adding_a_message_after_a_crash_answers_the_dangling_call_first() -> None:
    model = ScriptedModel(["Hi!"])
    conversation = Conversation(crashed_log(), ConversationConfig(model=model))
    conversation.add(user("never mind, hi"))
    conversation.messages.validate()  # valid at once, not only in the next request
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage", "ToolMessage", "UserMessage"]
    repaired = conversation.messages[2]
    assert isinstance(repaired, ToolMessage) and repaired.tool_call_id == "c1" and repaired.is_error
    assert repaired.content.startswith("interrupted")
    new = [m async for m in conversation]
    assert roles(new) == ["AssistantMessage"]
    assert model.requests[0].messages[-2].content == repaired.content  # the model saw the recorded repair
    conversation.messages.validate()


def test_a_run_started_after_a_crash_repairs_the_log_before_its_first_node() -> None:
    from threadline.runs import Node, Run

    store = open_store("memory://")
    conversation = Conversation(crashed_log(), ConversationConfig(model=ScriptedModel(["Done."])), store=store)
    result = Run(conversation, "Tidy up", [Node("only", "Say done.")]).run()
    assert result.finished
    for log in (conversation.messages, store.load(conversation.id)):
        log.validate()
        assert roles(log) == [
            "UserMessage",
            "AssistantMessage",
            "SystemMessage",  # the run's marker (UI-only; a system message may follow an unanswered call)
            "ToolMessage",  # the repair, before the run's first user message
            "UserMessage",
            "AssistantMessage",
        ]


# -- a conversation owns its config (issue 8, item 8; r3_config_alias.py) -----------------------------------------
def test_deltas_on_one_conversation_never_reach_another_given_the_same_config() -> None:
    shared = ConversationConfig(model=ScriptedModel(["a", "b", "c"]), tools=[get_weather], extras={"openai_seed": 1})
    a = Conversation(config=shared)
    b = Conversation(config=shared)
    a.continuation.mode("agent").persona("pirate").max_tool_rounds(1).tools(get_time).request("hi").prompt()
    a.config.extras["openai_user"] = "x"
    assert (b.config.mode, b.config.persona, b.config.max_tool_rounds) == (None, None, 10)
    assert b.config.tools == [get_weather] and b.config.extras == {"openai_seed": 1}
    assert (shared.mode, shared.tools, shared.extras) == (None, [get_weather], {"openai_seed": 1})


def test_lists_and_dicts_given_as_config_deltas_are_the_conversations_own() -> None:
    tools: list[Any] = [get_weather]
    extras = {"openai_seed": 1}
    conversation = Conversation()
    conversation.apply_config_deltas({"tools": tools, "extras": extras})
    tools.append(get_time)
    extras["openai_seed"] = 2
    assert conversation.config.tools == [get_weather] and conversation.config.extras == {"openai_seed": 1}


def test_loading_two_conversations_with_one_config_keeps_their_modes_apart() -> None:
    store = open_store("memory://")
    first = llm.model(ScriptedModel(["x"])).store(store).mode("agent").request("one").prompt_conversation()
    second = llm.model(ScriptedModel(["y"])).store(store).mode("chat").request("two").prompt_conversation()
    first.release()
    second.release()
    shared = ConversationConfig()
    loaded = [Conversation.load(c.id, store, shared) for c in (first, second)]
    assert [c.config.mode for c in loaded] == ["agent", "chat"]
    assert shared.mode is None


# -- each message once --------------------------------------------------------------------------------------------
def test_a_message_whose_id_is_already_in_the_log_is_refused() -> None:
    store = open_store("memory://")
    conversation = Conversation(store=store)
    message = user("hello")
    conversation.add(message)
    with pytest.raises(UserError, match="already in the log"):
        conversation.add(message)
    with pytest.raises(UserError, match="already in the log"):
        conversation.record(msgspec.structs.replace(assistant("a"), id=message.id))
    assert conversation.messages == [message]
    assert store.load(conversation.id) == [message]
