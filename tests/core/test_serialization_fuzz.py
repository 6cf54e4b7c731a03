"""Property-based tests of the readers: any input gives a whole log or `MessageListDeserializationError` (DESIGN §11).

Inputs: random JSON values, random text and bytes, truncations of real documents of every format, and real
documents with one field replaced by a random value.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import MessageList, MessageListDeserializationError

from .test_serialization import FLUENT_V1, full_log

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)
# Keys and values a reader looks for, so random data often reaches the deeper branches.
known_keys = st.sampled_from(
    [
        "version", "messages", "role", "content", "type", "text", "tool_calls", "tool_call_id", "tool_name",
        "arguments", "result", "error", "id", "name", "function", "attachments", "kind", "data", "meta", "usage",
        "created_at", "image_url", "url", "raw_arguments", "is_error", "message", "ref", "model",
    ]
)  # fmt: skip
known_values = st.sampled_from(
    [
        "2.0", "1.0", "user", "assistant", "system", "tool", "developer", "TextMessage", "AgentMessage",
        "ToolCallMessage", "text", "image_url", "image", "mention", "data:image/png;base64,iVBORw0KGgo=",
        "2024-01-01T00:00:00Z", "{}", '{"a": 1}', "{", "c1",
    ]
)  # fmt: skip
shaped_values = st.recursive(
    json_scalars | known_values,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(known_keys | st.text(max_size=6), children, max_size=6)
    ),
    max_leaves=40,
)


IMAGE = "data:image/png;base64,iVBORw0KGgo="


def documents() -> list[Any]:
    parts = [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": IMAGE}}]
    openai = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": parts},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    return [full_log().to_dict(), copy.deepcopy(FLUENT_V1), openai]


DOCUMENTS = documents()
TEXTS = [json.dumps(doc) for doc in DOCUMENTS]


def read_dict(data: Any) -> None:
    try:
        log = MessageList.from_dict(data)
    except MessageListDeserializationError as exc:
        assert str(exc)
        return
    assert isinstance(log, MessageList)
    MessageList.from_json(log.to_json())  # whatever was read can be saved and read again


def read_json(text: str | bytes) -> None:
    try:
        log = MessageList.from_json(text)
    except MessageListDeserializationError as exc:
        assert str(exc)
        return
    assert isinstance(log, MessageList)
    MessageList.from_json(log.to_json())


@FUZZ
@given(json_values)
def test_random_json_values_from_dict(data: Any) -> None:
    read_dict(data)


@FUZZ
@given(shaped_values)
def test_random_log_shaped_values_from_dict(data: Any) -> None:
    read_dict(data)
    read_dict({"version": "2.0", "messages": [data]})
    read_dict({"version": "1.0", "messages": [data]})
    read_dict([data])


@FUZZ
@given(shaped_values)
def test_random_log_shaped_values_from_json(data: Any) -> None:
    for wrapped in (data, {"version": "2.0", "messages": [data]}, {"version": "1.0", "messages": [data]}, [data]):
        read_json(json.dumps(wrapped))


@FUZZ
@given(st.text(max_size=200))
def test_random_text_from_json(text: str) -> None:
    read_json(text)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_from_json(data: bytes) -> None:
    read_json(data)


@FUZZ
@given(st.sampled_from(TEXTS), st.data())
def test_truncated_documents_from_json(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    read_json(text[:cut])
    read_json(text[:cut].encode("utf-8"))


@FUZZ
@given(st.sampled_from(range(len(DOCUMENTS))), st.data(), shaped_values)
def test_documents_with_one_field_replaced(which: int, data: st.DataObject, value: Any) -> None:
    document = copy.deepcopy(DOCUMENTS[which])
    messages = document["messages"] if isinstance(document, dict) else document
    message = messages[data.draw(st.integers(min_value=0, max_value=len(messages) - 1))]
    key = data.draw(st.sampled_from(sorted(message)) | known_keys)
    message[key] = value
    read_dict(document)
    read_json(json.dumps(document))


@FUZZ
@given(st.sampled_from(TEXTS), st.data())
def test_documents_with_one_character_changed(text: str, data: st.DataObject) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    replacement = data.draw(st.sampled_from(['"', "{", "}", "[", "]", ",", ":", "0", "n", "\\", "é", " "]))
    read_json(text[:index] + replacement + text[index + 1 :])
