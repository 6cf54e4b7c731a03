"""generate_text: continuation through ``result.messages``, steps and usage, the sync form, failures that can be
continued, named documents, logging to a store, and bad input refused before anything is sent."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.core._support import call, calls, shapes
from threadline import (
    AssistantMessage,
    Cost,
    GenerateTextResult,
    MessageList,
    ModelError,
    ProtocolError,
    ToolMessage,
    Toolset,
    Usage,
    UserError,
    UserMessage,
    find_tool_result,
    generate_text,
    generate_text_sync,
    tool,
    user,
)
from threadline.pricing.prices import prices_version
from threadline.store import Store
from threadline.testing import ScriptedModel


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"22 C in {city}"


def weather_script() -> ScriptedModel:
    return ScriptedModel(
        [calls(call("get_weather", {"city": "Paris"}, id="w1")), "Sunny in Paris.", "Rome is sunny too."],
        usage=Usage(input_tokens=10, output_tokens=3),
    )


async def test_continuation_sends_the_whole_first_exchange() -> None:
    model = weather_script()
    first = await generate_text(model=model, system="Be terse.", prompt="Weather in Paris?", tools=[get_weather])

    assert first.text == "Sunny in Paris."
    assert first.stop_reason == "end"
    assert [type(m).__name__ for m in first.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert first.new_messages == list(first.messages)[1:]

    again = await generate_text(
        model=model, system="Be terse.", messages=[*first.messages, user("And in Rome?")], tools=[get_weather]
    )
    sent = model.requests[2].messages
    assert sent[0].content == "Be terse."  # the system prefix, not part of result.messages
    assert shapes(sent[1:]) == shapes([*first.messages, again.messages[-2]])
    tool_call = sent[2]
    assert isinstance(tool_call, AssistantMessage) and tool_call.tool_calls[0].name == "get_weather"
    assert isinstance(sent[3], ToolMessage) and sent[3].content == "22 C in Paris"
    assert again.text == "Rome is sunny too."
    assert len(again.messages) == len(first.messages) + 2


async def test_steps_and_usage_follow_each_model_call() -> None:
    model = weather_script()
    result = await generate_text(model=model, prompt="Weather in Paris?", tools=[get_weather])

    assert len(result.steps) == 2
    first, second = result.steps
    assert [c.name for c in first.tool_calls] == ["get_weather"]
    assert [m.content for m in first.tool_results] == ["22 C in Paris"]
    assert first.messages == model.requests[0].messages
    assert second.messages == model.requests[1].messages
    assert second.tool_calls == [] and second.response.content == "Sunny in Paris."
    unpriced = Cost(unknown=("model scripted",), prices=prices_version())  # a scripted model has no price
    assert first.usage == Usage(input_tokens=10, output_tokens=3, cost=unpriced)
    assert result.usage == Usage(input_tokens=20, output_tokens=6, cost=unpriced)
    assert result.cost == unpriced
    assert all(step.duration_ms >= 0 for step in result.steps)
    assert len(result.request_hash) == 64


def test_sync_form_gives_the_same_log_as_the_async_form() -> None:
    import asyncio

    async_result = asyncio.run(generate_text(model=weather_script(), prompt="Weather in Paris?", tools=[get_weather]))
    sync_result = generate_text_sync(model=weather_script(), prompt="Weather in Paris?", tools=[get_weather])

    assert isinstance(sync_result, GenerateTextResult)
    assert shapes(sync_result.messages) == shapes(async_result.messages)
    assert sync_result.text == async_result.text
    assert sync_result.request_hash == async_result.request_hash


async def test_a_failure_carries_the_log_to_continue_from() -> None:
    model = ScriptedModel([ModelError("overloaded", type="server", partial="Half an ans", retryable=True), "Whole."])
    with pytest.raises(ModelError) as caught:
        await generate_text(model=model, prompt="Explain.")

    log = caught.value.messages
    assert log is not None
    assert [type(m).__name__ for m in log] == ["UserMessage", "AssistantMessage"]
    failure = log[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.content == "Half an ans" and failure.error.type == "server"
    log.validate()

    result = await generate_text(model=model, messages=[*log, user("Please continue.")])
    resent = model.requests[1].messages
    # The model is shown the failed turn with its partial output, so it can resume from there.
    assert resent[1].content == "Half an ans\n[LLM_ERROR type=server message=overloaded]"
    assert result.text == "Whole."


class Unreadable(Exception):
    """A custom model's exception whose message cannot be read: its __str__ raises SystemExit (issue 31)."""

    def __str__(self) -> str:
        raise SystemExit("from __str__")


async def test_a_failure_whose_message_cannot_be_read_carries_the_log_to_continue_from() -> None:
    model = ScriptedModel([Unreadable(), "Whole."])
    with pytest.raises(ModelError) as caught:
        await generate_text(model=model, prompt="Explain.")
    assert str(caught.value) == "model 'scripted' failed: Unreadable (its message could not be read)"
    log = caught.value.messages
    assert log is not None
    failure = log[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.message == "Unreadable (its message could not be read)"
    log.validate()
    result = await generate_text(model=model, messages=[*log, user("Please continue.")])
    assert result.text == "Whole."


async def test_documents_join_the_system_prefix_in_order() -> None:
    model = ScriptedModel(["ok"])
    await generate_text(
        model=model, system="Use the documents.", prompt="Hi", documents={"profile": "Likes tea.", "prefs": {"a": 1}}
    )
    prefix = model.requests[0].messages[0].content
    assert prefix.startswith("Use the documents.")
    assert prefix.index("## profile\nLikes tea.") < prefix.index('## prefs\n{"a":1}')


async def test_without_system_text_no_empty_system_message_is_sent() -> None:
    model = ScriptedModel(["ok"])
    await generate_text(model=model, prompt="Hi")
    assert [type(m).__name__ for m in model.requests[0].messages] == ["UserMessage"]


async def test_chat_message_dicts_are_accepted_as_input() -> None:
    model = ScriptedModel(["Hello!"])
    result = await generate_text(model=model, messages=[{"role": "user", "content": "Go"}])
    assert isinstance(result.messages[0], UserMessage) and result.messages[0].content == "Go"
    assert result.text == "Hello!"


class Notes:
    """A notebook."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def add_note(self, text: str) -> str:
        """Add a note."""
        self.notes.append(text)
        return "saved"


async def test_objects_toolsets_and_named_functions_are_tools() -> None:
    notes = Notes()

    @tool(name="present_result")
    def present(value: str) -> dict[str, Any]:
        """Present the final result."""
        return {"cell": value}

    script = calls(
        call("Notes.add_note", {"text": "hi"}),
        call("get_weather", {"city": "Oslo"}),
        call("present_result", {"value": "x"}),
    )
    model = ScriptedModel([script, "done"])
    result = await generate_text(model=model, prompt="go", tools=[notes, Toolset([present]), get_weather])

    assert notes.notes == ["hi"]
    assert sorted(model.requests[0].tool_names) == ["Notes.add_note", "get_weather", "present_result"]
    assert [m.content for m in result.messages if isinstance(m, ToolMessage)][:2] == ["saved", "22 C in Oslo"]
    presented = find_tool_result(result.messages, "present_result")
    assert presented is not None and json.loads(presented.content) == {"cell": "x"}
    assert find_tool_result(result.messages, "nothing") is None


async def test_a_mapping_names_its_tools() -> None:
    model = ScriptedModel([calls(call("lookup", {"city": "Oslo"})), "done"])
    result = await generate_text(model=model, prompt="go", tools={"lookup": get_weather})
    assert model.requests[0].tool_names == ["lookup"]
    found = find_tool_result(result.messages, "lookup")
    assert found is not None and found.content == "22 C in Oslo" and not found.is_error


async def test_the_run_is_logged_as_a_conversation(store: Store) -> None:
    model = weather_script()
    result = await generate_text(
        model=model, system="Be terse.", prompt="Weather in Paris?", tools=[get_weather], store=store
    )

    assert result.conversation_id is not None
    stored = store.load(result.conversation_id)
    assert shapes(stored) == shapes(result.messages)
    info = store.get_conversation(result.conversation_id)
    assert info.metadata["request_hash"] == result.request_hash
    assert info.metadata["system"] == "Be terse."
    assert info.title == "Weather in Paris?"


async def test_a_failed_run_is_logged_with_its_partial_output(store: Store) -> None:
    model = ScriptedModel([ModelError("cut", type="stream", partial="Par")])
    with pytest.raises(ModelError):
        await generate_text(model=model, prompt="Weather?", store=store, conversation_id="gen-fail-1")
    stored = store.load("gen-fail-1")
    stored.validate()
    assert isinstance(stored[-1], AssistantMessage) and stored[-1].content == "Par"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({}, "prompt= or messages="),
        ({"prompt": "x", "colour": "red"}, "unknown setting 'colour'"),
        ({"prompt": "x", "max_tool_rounds": -1}, "max_tool_rounds"),
        ({"prompt": "x", "documents": {"": "doc"}}, "document names"),
        ({"messages": "hello"}, "use prompt="),
        ({"prompt": "x", "model": ""}, "model must be"),
    ],
)
async def test_bad_input_is_refused_before_anything_is_sent(kwargs: dict[str, Any], needle: str) -> None:
    model = ScriptedModel(["never"])
    kwargs.setdefault("model", model)
    with pytest.raises(UserError, match=needle):
        await generate_text(**kwargs)
    assert model.requests == []


async def test_input_that_breaks_the_protocol_is_refused() -> None:
    model = ScriptedModel(["never"])
    orphan = ToolMessage(tool_call_id="nope", tool_name="x", content="?")
    with pytest.raises(ProtocolError):
        await generate_text(model=model, messages=[user("hi"), orphan])
    assert model.requests == []


async def test_the_callers_list_is_never_changed() -> None:
    log = MessageList([user("Hi")])
    result = await generate_text(model=ScriptedModel(["Hello"]), messages=log)
    assert len(log) == 1 and len(result.messages) == 2


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (None, "tool 0 is NoneType None, not a tool"),
        (42, "tool 0 is int 42, not a tool"),
        ("get_time", "pass the function itself, not its name"),
        (object(), "has no public methods to offer as tools"),
    ],
)
def test_a_value_that_is_no_tool_is_a_clear_error(bad: object, says: str) -> None:
    """Before, None, a number or a bare object became a toolset of nothing (the call ran offering no tools), and a
    tool's name made str's own methods tools ("cannot read the signature of <built-in method maketrans …>")."""
    model = ScriptedModel(["unused"])
    with pytest.raises(UserError, match=re.escape(says)):
        generate_text_sync(model=model, prompt="What time is it?", tools=[bad])
    assert model.requests == []
