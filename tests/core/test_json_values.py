"""What the log's values may be (issue 31, 2.7 and 2.10): JSON values, nested at most 128 levels deep.

Before: tool-call arguments a model nested 3,000 levels deep failed the model call with `RecursionError`; a ToolCall
made with arguments nested past the limit said only "a value is nested more than 128 levels deep", and one whose
arguments were set deeper after it was made broke `validate` with `RecursionError` (3,000 levels) or was stored and
then made its conversation fail to load (200 levels). `MessageList.from_dict` took a Python ``object()`` inside
tool-call arguments (native 2.1 and fluent 1.0), and ``to_json`` then raised `TypeError`; ``duration_ms`` of nan or
an infinity was taken and written as ``null``. Now each reader refuses any value that is not one the log keeps
exactly, naming the position and field, and so does every write of a message made in Python.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import msgspec
import pytest

from tests.store._backends import backend_url
from threadline import (
    AssistantMessage,
    MessageList,
    MessageListDeserializationError,
    ProtocolError,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    llm,
    open_store,
    request_hash,
)
from threadline._text import MAX_NESTING
from threadline.messages import MessageMeta
from threadline.serialization.file_messages import message_from_file, messages_from_file_data
from threadline.testing import ScriptedModel


def nested(depth: int) -> dict[str, Any]:
    """A dict ``depth`` levels deep, built without recursion."""
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    inner["a"] = 1
    return top


def nested_text(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


# -- depth --------------------------------------------------------------------------------------------------------


def test_a_tool_call_made_past_the_limit_is_refused_naming_the_call_and_its_arguments() -> None:
    ToolCall(id="c1", name="f", arguments=nested(MAX_NESTING))  # at the limit: kept
    for depth in (MAX_NESTING + 1, 3_000):
        with pytest.raises(ValueError, match=r"tool call 'c1': arguments are nested more than 128 levels deep"):
            ToolCall(id="c1", name="f", arguments=nested(depth))


def test_meta_ui_made_past_the_limit_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"meta\.ui is nested more than 128 levels deep"):
        UserMessage(content="q", meta=MessageMeta(ui=nested(MAX_NESTING + 1)))


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 200, 3_000, 100_000])
def test_arguments_set_past_the_limit_after_the_call_was_made_fail_validate_with_the_field(depth: int) -> None:
    call = ToolCall(id="c1", name="f", arguments={"a": 1})
    call.arguments = nested(depth)
    log = MessageList([UserMessage(content="q"), AssistantMessage(tool_calls=[call])])
    with pytest.raises(ProtocolError) as refused:
        log.validate()
    assert refused.value.rule == "invalid_field" and refused.value.index == 1
    assert "tool_calls[0].arguments cannot be written as JSON (it is nested more than 128 levels deep)" in str(
        refused.value
    )


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 3_000])
def test_every_reader_refuses_arguments_nested_past_the_limit_naming_the_message(depth: int) -> None:
    deep = nested(depth)
    documents = {
        "2.1": {"version": "2.1", "messages": [{"role": "user", "content": "q"}, _call({"x": deep})]},
        "1.0": {
            "version": "1.0",
            "messages": [
                {"type": "TextMessage", "role": "user", "text": "q"},
                {"type": "ToolCallMessage", "tool_name": "f", "tool_call_id": "c1", "arguments": deep, "result": 1},
            ],
        },
        "openai": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": deep}}]},
        ],
    }
    for form, document in documents.items():
        with pytest.raises(MessageListDeserializationError, match="nested") as refused:
            MessageList.from_dict(document)
        assert refused.value.position == 1, form
        assert "messages[1]" in str(refused.value), form


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 3_000, 100_000])
def test_argument_text_nested_past_the_limit_is_kept_as_text_by_the_readers_of_wire_forms(depth: int) -> None:
    text = nested_text(depth)
    openai = [{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": text}}]}]
    for log in (
        MessageList.from_dict(openai),
        MessageList.from_json(json.dumps(openai)),
        MessageList(messages_from_file_data(openai)),
    ):
        (call,) = log[0].tool_calls  # type: ignore[union-attr]
        assert call.arguments == {} and call.raw_arguments == text
        assert MessageList.from_json(log.to_json()) == log


def test_arguments_at_the_limit_round_trip_through_every_form() -> None:
    arguments = {"x": nested(MAX_NESTING - 1)}
    log = MessageList(
        [UserMessage(content="q"), AssistantMessage(tool_calls=[ToolCall(id="c1", name="f", arguments=arguments)])]
    )
    log.validate()
    assert MessageList.from_json(log.to_json()) == log
    assert MessageList.from_dict(log.to_dict()) == log
    assert MessageList.from_dict(json.loads(log.to_json())) == log


# -- JSON values --------------------------------------------------------------------------------------------------

NOT_JSON: dict[str, Any] = {
    "object": object(),
    "bytes": b"raw",
    "set": {1, 2},
    "tuple": (1, 2),
    "datetime": datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC),
    "decimal": decimal.Decimal("1.5"),
    "int key": {1: "one"},
    "struct": Usage(input_tokens=1),
}


def _call(arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    return {"role": "assistant", "tool_calls": [{"id": call_id, "name": "f", "arguments": arguments}]}


@pytest.mark.parametrize("kind", list(NOT_JSON))
@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_a_native_dict_with_a_value_json_cannot_hold_in_the_arguments_is_refused(version: str, kind: str) -> None:
    document = {"version": version, "messages": [{"role": "user", "content": "q"}, _call({"when": NOT_JSON[kind]})]}
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[1\]\.tool_calls\[0\]\.arguments ") as info:
        MessageList.from_dict(document)
    assert (info.value.position, info.value.field) == (1, "tool_calls")
    assert ".when" in str(info.value)


@pytest.mark.parametrize("kind", list(NOT_JSON))
def test_a_native_dict_with_a_value_json_cannot_hold_in_meta_ui_is_refused(kind: str) -> None:
    message = {"role": "user", "content": "q", "meta": {"ui": {"widget": [NOT_JSON[kind]]}}}
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[0\]\.meta\.ui .*\.widget\[0\]") as info:
        MessageList.from_dict({"version": "2.1", "messages": [message]})
    assert (info.value.position, info.value.field) == (0, "meta")


def test_a_key_that_is_not_text_at_the_top_of_arguments_or_ui_names_the_message_and_field() -> None:
    """Before: msgspec's "- at `key` in `$…`" was not read, and the error named no message."""
    documents = [
        ({"version": "2.1", "messages": [{"role": "user", "content": "q"}, _call({1: "one"})]}, 1, "tool_calls"),
        ({"version": "2.1", "messages": [{"role": "user", "content": "q", "meta": {"ui": {2: "x"}}}]}, 0, "meta.ui"),
    ]
    for document, position, field in documents:
        with pytest.raises(
            MessageListDeserializationError, match=rf"^messages\[{position}\]\.{field}.*: a key: "
        ) as info:
            MessageList.from_dict(document)
        assert info.value.position == position


@pytest.mark.parametrize("kind", list(NOT_JSON))
def test_a_fluent_dict_with_a_value_json_cannot_hold_is_refused(kind: str) -> None:
    call = {"type": "ToolCallMessage", "tool_name": "f", "tool_call_id": "c1", "arguments": {"x": NOT_JSON[kind]}}
    document = {"version": "1.0", "messages": [{"type": "TextMessage", "role": "user", "text": "q"}, call]}
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[1\]: arguments ") as info:
        MessageList.from_dict(document)
    assert (info.value.position, info.value.field) == (1, "arguments")
    # A result that is not JSON is refused too, rather than kept as whatever str() makes of it.
    result = {"type": "ToolCallMessage", "tool_name": "f", "tool_call_id": "c1", "result": {"x": NOT_JSON[kind]}}
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[0\]: result: not a JSON value") as info:
        MessageList.from_dict({"version": "1.0", "messages": [result]})
    assert info.value.field == "result"


@pytest.mark.parametrize("kind", list(NOT_JSON))
def test_an_openai_list_or_a_layout_file_with_a_value_json_cannot_hold_is_refused(kind: str) -> None:
    items = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"x": NOT_JSON[kind]}}}],
        },
    ]
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[1\]\.tool_calls\[0\]\.arguments ") as info:
        MessageList.from_dict(items)
    assert info.value.position == 1
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[1\]: tool_calls\[0\]\.arguments ") as info:
        messages_from_file_data(items)
    assert (info.value.position, info.value.field) == (1, "tool_calls")


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_duration_json_cannot_hold_is_refused_by_every_reader(number: float) -> None:
    result = {"role": "tool", "tool_call_id": "c1", "tool_name": "f", "content": "ok", "duration_ms": number}
    document = {"version": "2.1", "messages": [_call({}), result]}
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[1\]\.duration_ms is ") as info:
        MessageList.from_dict(document)
    assert (info.value.position, info.value.field) == (1, "duration_ms")
    layout = {"role": "tool", "tool_call_id": "c1", "toolName": "f", "content": "ok", "duration": number}
    with pytest.raises(MessageListDeserializationError, match=r"duration_ms is "):
        message_from_file(layout)
    with pytest.raises(MessageListDeserializationError, match=r"^messages\[0\]: duration"):
        messages_from_file_data([{"role": "tool", "tool_call_id": "c1", "content": "ok", "duration": 10**400}])


@pytest.mark.parametrize("count", [-1, 2**63, 10**30])
def test_a_token_count_below_zero_or_past_64_bits_is_refused_by_dict_and_text(count: int) -> None:
    document = {"version": "2.1", "messages": [{"role": "assistant", "content": "a", "usage": {"input_tokens": count}}]}
    for read in (lambda: MessageList.from_dict(document), lambda: MessageList.from_json(json.dumps(document))):
        with pytest.raises(MessageListDeserializationError, match=r"^messages\[0\]\.usage\.input_tokens is ") as info:
            read()
        assert (info.value.position, info.value.field) == (0, "usage")


def test_numbers_json_cannot_write_are_still_kept_as_their_text_in_free_form_fields() -> None:
    """nan and the infinities in arguments and UI extras become "NaN", "Infinity", "-Infinity" when a message is made
    (the log's rule for them): read from a dict, they are kept that way, not refused."""
    document = {"version": "2.1", "messages": [_call({"x": [float("nan")], "y": float("inf")})]}
    log = MessageList.from_dict(document)
    assert log[0].tool_calls[0].arguments == {"x": ["NaN"], "y": "Infinity"}  # type: ignore[union-attr]


def test_whatever_a_reader_returns_can_be_written_and_read_back() -> None:
    document = {
        "version": "2.1",
        "messages": [
            {"role": "user", "content": "q", "meta": {"ui": {"ok": [1, 2.5, True, None, {"k": "v"}]}}},
            _call({"n": 2**70, "list": [[]], "text": "é"}),
            {"role": "tool", "tool_call_id": "c1", "tool_name": "f", "content": "ok", "duration_ms": 12.5},
        ],
    }
    log = MessageList.from_dict(document)
    assert MessageList.from_json(log.to_json()) == log
    assert msgspec.json.decode(log.to_json())["messages"][1]["tool_calls"][0]["arguments"]["n"] == 2**70


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_turn_with_arguments_at_the_limit_is_stored_hashed_and_sent_again(backend: str, tmp_path: Any) -> None:
    """Everything that walks a logged call's arguments takes them as deep as the log keeps them: the tool's
    validation, the store, the context window's estimate and the request hash (the viewer and tracing: their tests)."""

    def probe(city: Any) -> str:
        """Take anything."""
        return "probed"

    arguments = {"city": nested(MAX_NESTING - 1)}
    model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="c1", name="probe", arguments=arguments)]), "done"])
    with backend_url(backend, tmp_path) as url, open_store(url) as store:
        conversation = llm.model(model).tools(probe).store(store).request("go").prompt_conversation()
        assert conversation.continuation.prompt() == "done"
        assert [m.content for m in conversation.messages if isinstance(m, ToolMessage)] == ["probed"]
        assert store.load(conversation.id) == conversation.messages
        assert model.requests[1].messages[-2].tool_calls[0].arguments == arguments  # sent back whole
        assert request_hash(model="x", messages=conversation.messages) != request_hash(model="x", prompt="go")
