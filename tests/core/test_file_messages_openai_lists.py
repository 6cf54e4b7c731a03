"""A bare list of OpenAI chat messages reads the same through the JSON-file layout's reader (what ``threadline
import`` uses) as through `MessageList.from_json`: the thinking of OpenAI-compatible servers (``reasoning_content``,
or ``reasoning`` as text) is kept, not dropped or refused; bad values are errors naming the position and field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from threadline import MessageList, MessageListDeserializationError
from threadline.messages import AssistantMessage, Message, ToolMessage
from threadline.serialization.file_messages import message_to_file, messages_from_file_data


def shape(messages: list[Message]) -> list[dict[str, Any]]:
    """What a message says, without the id and time a reader makes up for a message that has none."""
    out = []
    for message in messages:
        item = message_to_file(message)
        item.pop("id")
        item.pop("createdAt")
        out.append(item)
    return out


QUESTION = {"role": "user", "content": "9.11 or 9.8?"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "compare", "arguments": '{"a": 9.11, "b": 9.8}'}}

LISTS = {
    "reasoning_content (DeepSeek, vLLM, llama.cpp)": [
        QUESTION,
        {"role": "assistant", "content": "9.8", "reasoning_content": "Tenths decide."},
    ],
    "reasoning as text (Ollama, vLLM, OpenRouter)": [
        QUESTION,
        {"role": "assistant", "content": "9.8", "reasoning": "Tenths decide."},
    ],
    "both names: reasoning_content wins": [
        QUESTION,
        {"role": "assistant", "content": "9.8", "reasoning_content": "first", "reasoning": "second"},
    ],
    "empty thinking is none": [QUESTION, {"role": "assistant", "content": "9.8", "reasoning_content": ""}],
    "thinking before a tool call": [
        QUESTION,
        {"role": "assistant", "content": None, "tool_calls": [CALL], "reasoning": "Use the tool."},
        {"role": "tool", "tool_call_id": "call_1", "name": "other_name", "content": "9.8"},
        {"role": "assistant", "content": "9.8 is greater.", "reasoning_content": "The tool said so."},
    ],
}


@pytest.mark.parametrize("items", LISTS.values(), ids=LISTS.keys())
def test_a_bare_openai_list_reads_as_message_list_from_json_reads_it(items: list[dict[str, Any]]) -> None:
    expected = MessageList.from_json(json.dumps(items))
    read = messages_from_file_data(json.loads(json.dumps(items)))
    assert shape(read) == shape(list(expected))


def test_the_thinking_is_kept_as_openai_reasoning() -> None:
    read = messages_from_file_data(LISTS["thinking before a tool call"])
    first, second = (message for message in read if isinstance(message, AssistantMessage))
    assert [(piece.text, piece.provider) for piece in first.reasoning] == [("Use the tool.", "openai")]
    assert [(piece.text, piece.provider) for piece in second.reasoning] == [("The tool said so.", "openai")]
    (result,) = (message for message in read if isinstance(message, ToolMessage))
    assert result.tool_name == "compare"  # the call's name, as from_json reads it


def test_threadline_s_own_reasoning_list_still_reads_whole() -> None:
    item = {
        "role": "assistant",
        "content": "ok",
        "reasoning": [{"text": "t", "signature": "sig", "provider": "anthropic"}],
        "reasoning_content": "ignored beside the full form",
    }
    (message,) = messages_from_file_data([item])
    assert isinstance(message, AssistantMessage)
    assert [(p.text, p.signature, p.provider) for p in message.reasoning] == [("t", "sig", "anthropic")]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("reasoning_content", 5, "messages[1]: reasoning_content: expected a string, got int"),
        ("reasoning", {"text": "x"}, "messages[1]: reasoning: expected a list or a string, got dict"),
        ("reasoning", True, "messages[1]: reasoning: expected a list or a string, got bool"),
    ],
)
def test_a_bad_thinking_value_is_an_error_naming_position_and_field(field: str, value: Any, says: str) -> None:
    items = [QUESTION, {"role": "assistant", "content": "a", field: value}]
    with pytest.raises(MessageListDeserializationError) as caught:
        messages_from_file_data(items)
    assert str(caught.value) == says
    assert caught.value.position == 1
    with pytest.raises(MessageListDeserializationError):  # from_json refuses it too
        MessageList.from_json(json.dumps(items))
