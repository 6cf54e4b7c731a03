"""The log's file format (version 2.0), the fluent_llm 1.0 and OpenAI-list readers, and their errors
(docs/file-format.md)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Attachment,
    LLMError,
    MessageList,
    MessageListDeserializationError,
    MessageMeta,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)

from ._support import shapes

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-fake-image-bytes"


class Notes:
    """A live object that must never reach a file."""

    def add(self, text: str) -> str:
        return text


def full_log() -> MessageList:
    """One message of every kind, with every optional field set."""
    meta = MessageMeta(mode="run", run_id="r1", node_id="n1", agent_id="a1", include_in_context=False, ui={"w": [1]})
    return MessageList(
        [
            SystemMessage(content="You are terse.", meta=MessageMeta(mode="agent")),
            UserMessage(
                content="Look at this and @notes",
                attachments=[
                    Attachment.image(PNG),
                    Attachment.mention("notes", Notes()),
                    Attachment("image", url="https://example.org/a.jpg", media_type="image/jpeg", name="a.jpg"),
                    Attachment("file", data=b"\x00\x01bin", name="x.bin", media_type="application/octet-stream"),
                ],
            ),
            AssistantMessage(
                content="Checking.",
                tool_calls=[
                    ToolCall(id="c1", name="Notes.add", arguments={"text": "é ✓", "n": [1, 2.5, None, True]}),
                    ToolCall(id="c2", name="get_weather", arguments={}, raw_arguments='{"city": "Par'),
                ],
                model="scripted",
                usage=Usage(input_tokens=12, output_tokens=7),
            ),
            ToolMessage(tool_call_id="c1", tool_name="Notes.add", content="é ✓", duration_ms=1.25),
            ToolMessage(tool_call_id="c2", tool_name="get_weather", content="bad JSON", is_error=True, meta=meta),
            AssistantMessage(
                content="Half an ans",
                error=LLMError(type="rate_limit", message="429 Too Many Requests", retryable=True),
                model="openai:gpt-4o-mini",
            ),
            AssistantMessage(content=None, error=LLMError(type="timeout", message="read timed out", retryable=False)),
        ]
    )


# -- version 2.0 ------------------------------------------------------------------------------------------------
def test_to_dict_is_version_2_with_json_ready_values() -> None:
    data = full_log().to_dict()
    assert data["version"] == "2.1"
    assert [m["role"] for m in data["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "assistant",
    ]
    assert json.loads(json.dumps(data)) == data  # only JSON types inside


def test_round_trip_through_dict_and_json_keeps_every_field() -> None:
    log = full_log()
    for restored in (MessageList.from_dict(log.to_dict()), MessageList.from_json(log.to_json())):
        assert restored == log
        assert [m.id for m in restored] == [m.id for m in log]
        assert [m.created_at for m in restored] == [m.created_at for m in log]
        assert all(m.created_at.tzinfo is not None for m in restored)
        restored.validate()


def test_round_trip_of_json_bytes_and_of_the_dict_via_stdlib_json() -> None:
    log = full_log()
    assert MessageList.from_json(log.to_json().encode()) == log
    assert MessageList.from_dict(json.loads(json.dumps(log.to_dict()))) == log


def test_attachments_round_trip_bytes_and_keep_only_the_mention_ref() -> None:
    log = full_log()
    data = log.to_dict()
    attachments = data["messages"][1]["attachments"]
    assert attachments[0] == {"kind": "image", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    assert attachments[1] == {"kind": "mention", "ref": "notes"}  # the live object is not serialized
    assert "object at 0x" not in log.to_json() and "Notes object" not in log.to_json()
    restored = MessageList.from_json(log.to_json())
    user_message = restored[1]
    assert isinstance(user_message, UserMessage)
    image, mention, remote, blob = user_message.attachments
    assert image.read_bytes() == PNG and image.media_type == "image/png"
    assert (mention.kind, mention.ref, mention.object) == ("mention", "notes", None)
    assert (remote.url, remote.media_type, remote.name) == ("https://example.org/a.jpg", "image/jpeg", "a.jpg")
    assert blob.read_bytes() == b"\x00\x01bin"


def test_tool_calls_keep_raw_arguments_and_failures_keep_their_error() -> None:
    restored = MessageList.from_json(full_log().to_json())
    calling = restored[2]
    assert isinstance(calling, AssistantMessage)
    assert calling.tool_calls[1].raw_arguments == '{"city": "Par'
    assert calling.tool_calls[1].arguments == {}
    assert calling.tool_calls[0].arguments == {"text": "é ✓", "n": [1, 2.5, None, True]}
    assert calling.usage == Usage(input_tokens=12, output_tokens=7)
    failed = restored[5]
    assert isinstance(failed, AssistantMessage)
    assert failed.error == LLMError(type="rate_limit", message="429 Too Many Requests", retryable=True)
    assert failed.content == "Half an ans"


def test_meta_round_trips_and_default_meta_is_omitted() -> None:
    log = full_log()
    data = log.to_dict()
    assert "meta" not in data["messages"][3]
    assert data["messages"][4]["meta"] == {
        "mode": "run",
        "run_id": "r1",
        "node_id": "n1",
        "agent_id": "a1",
        "include_in_context": False,
        "ui": {"w": [1]},
    }
    restored = MessageList.from_dict(data)
    assert restored[4].meta == log[4].meta
    assert restored[3].meta.ui == {}


def test_hand_written_v2_document_with_minimal_fields_reads() -> None:
    data = {
        "version": "2.0",
        "messages": [
            {"role": "user", "content": "hi", "id": "u1", "created_at": "2024-05-01T10:00:00Z"},
            {"role": "assistant", "content": "hello", "id": "a1", "created_at": "2024-05-01T10:00:01+00:00"},
        ],
    }
    log = MessageList.from_dict(data)
    assert [m.id for m in log] == ["u1", "a1"]
    assert log[0].created_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def test_empty_log_round_trips() -> None:
    assert MessageList.from_json(MessageList().to_json()) == MessageList()
    assert MessageList().to_dict() == {"version": "2.1", "messages": []}


# -- fluent_llm 1.0 ---------------------------------------------------------------------------------------------
FLUENT_V1: dict[str, Any] = {
    "messages": [
        {"type": "AgentMessage", "text": "You are a helpful assistant", "role": "system"},
        {"type": "TextMessage", "text": "Hello! How can I help you today?", "role": "assistant"},
        {"type": "TextMessage", "text": "What's the weather in Paris?", "role": "user"},
        {
            "type": "ToolCallMessage",
            "message": "I'll check the weather for you",
            "tool_name": "get_weather",
            "tool_call_id": "call_123",
            "arguments": {"location": "Paris"},
            "result": "Sunny, 22°C",
            "error": None,
            "role": "assistant",
        },
        {
            "type": "ToolCallMessage",
            "message": "",
            "tool_name": "get_forecast",
            "tool_call_id": "call_124",
            "arguments": {"location": "Paris", "days": 3},
            "result": {"days": [20, 21, 19]},
            "error": None,
            "role": "assistant",
        },
        {
            "type": "ToolCallMessage",
            "message": "Let me try booking.",
            "tool_name": "book",
            "tool_call_id": "call_125",
            "arguments": {},
            "result": None,
            "error": "ValueError: no seats left",
            "role": "assistant",
        },
        {"type": "TextMessage", "text": "It is sunny, 22°C.", "role": "assistant"},
    ],
    "version": "1.0",
}


def test_fluent_v1_reads_into_the_right_messages() -> None:
    log = MessageList.from_dict(FLUENT_V1)
    kinds = [type(m).__name__ for m in log]
    assert kinds == [
        "SystemMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    system, hello, question, calling, result = log[0], log[1], log[2], log[3], log[4]
    assert system.content == "You are a helpful assistant"
    assert hello.content == "Hello! How can I help you today?"
    assert question.content == "What's the weather in Paris?"
    assert isinstance(calling, AssistantMessage)
    assert calling.content == "I'll check the weather for you"
    assert calling.tool_calls == [ToolCall(id="call_123", name="get_weather", arguments={"location": "Paris"})]
    assert isinstance(result, ToolMessage)
    assert (result.tool_call_id, result.tool_name, result.content, result.is_error) == (
        "call_123",
        "get_weather",
        "Sunny, 22°C",
        False,
    )
    log.validate()


def test_fluent_v1_structured_results_become_json_and_errors_become_error_results() -> None:
    log = MessageList.from_dict(FLUENT_V1)
    forecast = log[6]
    assert isinstance(forecast, ToolMessage)
    assert json.loads(forecast.content) == {"days": [20, 21, 19]}
    assert forecast.is_error is False
    assert log[5].tool_calls[0].arguments == {"location": "Paris", "days": 3}  # type: ignore[union-attr]
    failed = log[8]
    assert isinstance(failed, ToolMessage)
    assert failed.is_error is True
    assert failed.tool_call_id == "call_125" and failed.tool_name == "book"
    assert "no seats left" in failed.content
    assert log[7].content == "Let me try booking."


def test_fluent_v1_read_then_saved_as_v2_round_trips() -> None:
    log = MessageList.from_dict(FLUENT_V1)
    again = MessageList.from_json(log.to_json())
    assert again == log


def test_fluent_v1_from_json_text() -> None:
    assert len(MessageList.from_json(json.dumps(FLUENT_V1))) == 10


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"type": "Bogus", "text": "x"}, "type"),
        ({"text": "x", "role": "user"}, "type"),
        ({"type": "TextMessage", "role": "user"}, "text"),
        ({"type": "TextMessage", "text": 5, "role": "user"}, "text"),
        ({"type": "TextMessage", "text": "x", "role": "robot"}, "role"),
        ({"type": "ToolCallMessage", "tool_call_id": "c", "arguments": {}}, "tool_name"),
        ({"type": "ToolCallMessage", "tool_name": "f", "arguments": {}}, "tool_call_id"),
        ({"type": "ToolCallMessage", "tool_name": "f", "tool_call_id": "c", "arguments": "{}"}, "arguments"),
        ({"type": "AgentMessage", "text": ["x"]}, "text"),
    ],
)
def test_fluent_v1_malformed_message_names_position_and_field(message: dict[str, Any], field: str) -> None:
    data = {"version": "1.0", "messages": [{"type": "TextMessage", "text": "ok", "role": "user"}, message]}
    with pytest.raises(MessageListDeserializationError) as info:
        MessageList.from_dict(data)
    assert info.value.position == 1
    assert info.value.field == field
    assert "messages[1]" in str(info.value)
    assert field in str(info.value)


def test_fluent_v1_messages_that_are_not_objects_or_not_a_list() -> None:
    with pytest.raises(MessageListDeserializationError) as info:
        MessageList.from_dict({"version": "1.0", "messages": ["x"]})
    assert info.value.position == 0
    with pytest.raises(MessageListDeserializationError) as info:
        MessageList.from_dict({"version": "1.0", "messages": {"a": 1}})
    assert info.value.field == "messages"


# -- OpenAI list ------------------------------------------------------------------------------------------------
def test_openai_list_reads_text_tool_calls_and_tool_results() -> None:
    data = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "22 C"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "25 C"}]},
        {"role": "assistant", "content": "Paris 22 C, Rome 25 C."},
    ]
    log = MessageList.from_dict(data)
    assert [type(m).__name__ for m in log] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    calling = log[2]
    assert isinstance(calling, AssistantMessage)
    assert calling.content is None
    assert calling.tool_calls == [
        ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_b", name="get_weather", arguments={"city": "Rome"}),
    ]
    first, second = log[3], log[4]
    assert isinstance(first, ToolMessage) and isinstance(second, ToolMessage)
    assert (first.tool_call_id, first.tool_name, first.content) == ("call_a", "get_weather", "22 C")
    assert (second.tool_call_id, second.tool_name, second.content) == ("call_b", "get_weather", "25 C")
    assert log[5].content == "Paris 22 C, Rome 25 C."
    log.validate()
    assert shapes(MessageList.from_json(json.dumps(data))) == shapes(log)


def test_openai_list_content_parts_with_image_data_urls_become_attachments() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    data = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is "},
                {"type": "image_url", "image_url": {"url": url}},
                {"type": "text", "text": "this?"},
                {"type": "image_url", "image_url": {"url": "https://example.org/cat.jpg"}},
            ],
        }
    ]
    log = MessageList.from_dict(data)
    message = log[0]
    assert isinstance(message, UserMessage)
    assert message.content == "What is this?"
    inline, remote = message.attachments
    assert (inline.kind, inline.media_type, inline.read_bytes()) == ("image", "image/png", PNG)
    assert (remote.kind, remote.url) == ("image", "https://example.org/cat.jpg")


def test_openai_list_invalid_json_arguments_are_kept_as_raw_arguments() -> None:
    data = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1'}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "[1, 2]"}},
                {"id": "c3", "type": "function", "function": {"name": "h", "arguments": ""}},
            ],
        },
    ]
    calling = MessageList.from_dict(data)[1]
    assert isinstance(calling, AssistantMessage)
    broken, not_object, empty = calling.tool_calls
    assert (broken.arguments, broken.raw_arguments) == ({}, '{"a": 1')
    assert (not_object.arguments, not_object.raw_arguments) == ({}, "[1, 2]")
    assert (empty.arguments, empty.raw_arguments) == ({}, None)


def test_openai_list_tool_message_without_a_known_call_uses_its_name_field() -> None:
    log = MessageList.from_dict([{"role": "tool", "tool_call_id": "x", "name": "lookup", "content": "r"}])
    result = log[0]
    assert isinstance(result, ToolMessage) and result.tool_name == "lookup"


def test_openai_list_empty_is_an_empty_log() -> None:
    assert MessageList.from_dict([]) == MessageList()


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"content": "x"}, "role"),
        ({"role": "wizard", "content": "x"}, "role"),
        ({"role": 3, "content": "x"}, "role"),
        ({"role": "user", "content": 5}, "content"),
        ({"role": "user", "content": [{"type": "audio", "audio": {}}]}, "content"),
        ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": 7}}]}, "content"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}]},
            "content",
        ),
        ({"role": "user", "content": ["just a string"]}, "content"),
        ({"role": "assistant", "content": None, "tool_calls": "nope"}, "tool_calls"),
        ({"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}, "tool_calls"),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": 5}}],
            },
            "tool_calls",
        ),
        ({"role": "tool", "content": "x"}, "tool_call_id"),
    ],
)
def test_openai_list_malformed_message_names_position_and_field(item: dict[str, Any], field: str) -> None:
    with pytest.raises(MessageListDeserializationError) as info:
        MessageList.from_dict([{"role": "user", "content": "fine"}, item])
    assert info.value.position == 1
    assert info.value.field == field
    assert "messages[1]" in str(info.value)


def test_openai_list_item_that_is_not_an_object() -> None:
    with pytest.raises(MessageListDeserializationError) as info:
        MessageList.from_dict([{"role": "user", "content": "fine"}, "hello"])
    assert info.value.position == 1


# -- errors -----------------------------------------------------------------------------------------------------
def _v2(*messages: Any) -> dict[str, Any]:
    return {"version": "2.0", "messages": list(messages)}


GOOD = {"role": "user", "content": "fine"}


@pytest.mark.parametrize(
    ("data", "position", "field"),
    [
        (_v2(GOOD, {"role": "user", "content": 5}), 1, "content"),
        (_v2(GOOD, {"role": "bogus", "content": "x"}), 1, "role"),
        (_v2(GOOD, {"content": "x"}), 1, "role"),
        (_v2(GOOD, {"role": "tool", "tool_name": "f", "content": "x"}), 1, "tool_call_id"),
        (
            _v2(GOOD, {"role": "tool", "tool_call_id": "c", "tool_name": "f", "content": "x", "is_error": "yes"}),
            1,
            "is_error",
        ),
        (_v2(GOOD, {"role": "user", "content": "x", "created_at": "yesterday"}), 1, "created_at"),
        (_v2(GOOD, {"role": "user", "content": "x", "created_at": "2024-01-01T00:00:00"}), 1, "created_at"),
        (_v2(GOOD, {"role": "user", "content": "x", "id": 12}), 1, "id"),
        (_v2(GOOD, GOOD, {"role": "assistant", "tool_calls": [{"id": "c", "name": 3}]}), 2, "tool_calls[0].name"),
        (_v2(GOOD, {"role": "assistant", "error": {"type": "x"}}), 1, "error.message"),
        (_v2(GOOD, {"role": "assistant", "usage": {"input_tokens": "many"}}), 1, "usage.input_tokens"),
        (_v2(GOOD, {"role": "user", "content": "x", "meta": {"mode": "dance"}}), 1, "meta.mode"),
        (_v2(GOOD, {"role": "user", "content": "x", "meta": {"include_in_context": 1}}), 1, "meta.include_in_context"),
    ],
)
def test_v2_wrong_fields_name_the_message_and_field(data: dict[str, Any], position: int, field: str) -> None:
    with pytest.raises(MessageListDeserializationError) as info:
        MessageList.from_dict(data)
    assert info.value.position == position
    assert info.value.field == field
    assert f"messages[{position}]" in str(info.value)
    # The same answer through from_json.
    with pytest.raises(MessageListDeserializationError) as again:
        MessageList.from_json(json.dumps(data))
    assert (again.value.position, again.value.field) == (position, field)


@pytest.mark.parametrize(
    "attachment",
    [
        {"kind": "video"},
        {"kind": "mention"},
        {"kind": "image", "data": "not base64 !!"},
        {"kind": "image", "data": 5},
        {"kind": "image", "color": "red"},
        "image.png",
    ],
)
def test_v2_bad_attachments_name_the_message(attachment: Any) -> None:
    data = _v2(GOOD, {"role": "user", "content": "x", "attachments": [attachment]})
    for reader in (lambda: MessageList.from_dict(data), lambda: MessageList.from_json(json.dumps(data))):
        with pytest.raises(MessageListDeserializationError) as info:
            reader()
        assert info.value.position == 1
        assert info.value.field is not None and info.value.field.startswith("attachments")


@pytest.mark.parametrize(
    ("data", "field", "text"),
    [
        ({"version": "3.0", "messages": []}, "version", "3.0"),
        ({"version": 2, "messages": []}, "version", "2"),
        ({"messages": []}, "version", "version"),
        ({"version": "2.0"}, "messages", "messages"),
        ({"version": "2.0", "messages": "all of them"}, "messages", "messages"),
        ({"version": "2.0", "messages": None}, "messages", "messages"),
    ],
)
def test_document_level_errors_name_the_field(data: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(MessageListDeserializationError, match=text) as info:
        MessageList.from_dict(data)
    assert info.value.field == field
    assert info.value.position is None


@pytest.mark.parametrize("data", [None, 3, "text", 2.5, True])
def test_from_dict_refuses_what_is_neither_a_document_nor_a_list(data: Any) -> None:
    with pytest.raises(MessageListDeserializationError, match="expected an object"):
        MessageList.from_dict(data)


@pytest.mark.parametrize(
    "text",
    ["", "{", '{"version": "2.0", "messages": [', "not json at all", "[1, 2,]", b"\xff\xfe\x00", "nul\x00l"],
)
def test_broken_json_is_a_deserialization_error(text: str | bytes) -> None:
    with pytest.raises(MessageListDeserializationError, match="JSON"):
        MessageList.from_json(text)


def test_from_json_refuses_non_text() -> None:
    with pytest.raises(MessageListDeserializationError, match="expected JSON text"):
        MessageList.from_json({"version": "2.0", "messages": []})  # type: ignore[arg-type]


def test_json_with_lone_surrogates_is_a_deserialization_error() -> None:
    with pytest.raises(MessageListDeserializationError):
        MessageList.from_json('{"version": "2.0", "messages": [{"role": "user", "content": "\ud800"}]}')


@pytest.mark.parametrize("opener", ["[", '{"a":', '{"version": "2.0", "messages": [{"role": "user", "content": ['])
def test_deeply_nested_json_is_a_deserialization_error(opener: str) -> None:
    with pytest.raises(MessageListDeserializationError):
        MessageList.from_json(opener * 100_000)


def test_deeply_nested_openai_arguments_are_kept_raw_not_a_crash() -> None:
    raw = "[" * 100_000
    data = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": raw}}]}
    ]
    for log in (MessageList.from_dict(data), MessageList.from_json(json.dumps(data))):
        calling = log[0]
        assert isinstance(calling, AssistantMessage)
        assert calling.tool_calls[0].raw_arguments == raw


def test_an_error_in_a_late_message_returns_nothing_partial() -> None:
    good = [GOOD] * 50
    data = _v2(*good, {"role": "user", "content": None})
    with pytest.raises(MessageListDeserializationError) as info:
        MessageList.from_dict(data)
    assert info.value.position == 50


def test_deserialization_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        MessageList.from_json("{")


def test_a_document_repeating_a_message_id_is_refused_by_every_reader() -> None:
    call = {"role": "assistant", "id": "m2", "tool_calls": [{"id": "c1", "name": "f", "arguments": {}}]}
    result = {"role": "tool", "id": "m2", "tool_call_id": "c1", "tool_name": "f", "content": "ok"}
    document = {"version": "2.0", "messages": [{"role": "user", "id": "m1", "content": "q"}, call, result]}
    for read in (lambda: MessageList.from_dict(document), lambda: MessageList.from_json(json.dumps(document))):
        with pytest.raises(MessageListDeserializationError, match=r"messages\[2\]\.id: 'm2' is already") as info:
            read()
        assert (info.value.position, info.value.field) == (2, "id")


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_number_json_cannot_write_reads_back_as_written(number: float) -> None:
    """A dict may hold nan or an infinity where JSON cannot (msgspec would write null): tool arguments and UI extras
    keep them as the strings JSON writers use, so the log reads back exactly as it was written."""
    data = {
        "version": "2.0",
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "c1", "name": "f", "arguments": {"x": [number], "y": None}}]},
            {"role": "tool", "tool_call_id": "c1", "tool_name": "f", "content": "ok", "meta": {"ui": {"v": number}}},
        ],
    }
    log = MessageList.from_dict(data)
    text = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(number)]
    assert log[0].tool_calls[0].arguments == {"x": [text], "y": None}
    assert log[1].meta.ui == {"v": text}
    assert MessageList.from_json(log.to_json()) == log
