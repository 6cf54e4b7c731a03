"""The Anthropic Messages translation, without a network: log -> request JSON, response JSON -> messages,
stream events -> deltas and assembled tool calls. Response bodies follow the API reference examples."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from threadline import Attachment
from threadline.errors import ModelError
from threadline.messages import (
    AssistantMessage,
    LLMError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from threadline.models import ModelRequest, ModelSettings, ResponseFormat, ToolSpec
from threadline.models.anthropic._request import FIRST_TURN, build_request
from threadline.models.anthropic._response import parse_message
from threadline.models.anthropic._stream import MessageStream
from threadline.models.profiles import anthropic_profile

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PROFILE = anthropic_profile("claude-haiku-4-5")
WEATHER = ToolSpec(
    name="Weather.get",
    description="Current weather.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)

# From the API reference: a Messages response with a tool_use block.
REFERENCE_TOOL_RESPONSE = """{
  "id": "msg_01Aq9w938a90dw8q",
  "type": "message",
  "role": "assistant",
  "model": "claude-haiku-4-5",
  "content": [
    {"type": "text", "text": "I'll check the weather in San Francisco."},
    {
      "type": "tool_use",
      "id": "toolu_01A09q90qw90lq917835lq9",
      "name": "get_weather",
      "input": {"location": "San Francisco, CA", "unit": "celsius"}
    }
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 5}
}"""

# From the streaming reference: text, then a tool_use block whose input arrives as input_json_delta fragments.
REFERENCE_STREAM = [
    (
        "message_start",
        '{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant",'
        '"model":"claude-haiku-4-5","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},'
        '"content":[],"stop_reason":null}}',
    ),
    ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
    ("ping", '{"type": "ping"}'),
    ("content_block_delta", '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}'),
    (
        "content_block_delta",
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", let\'s check."}}',
    ),
    ("content_block_stop", '{"type":"content_block_stop","index":0}'),
    (
        "content_block_start",
        '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use",'
        '"id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}',
    ),
    (
        "content_block_delta",
        '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}',
    ),
    (
        "content_block_delta",
        '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\":"}}',
    ),
    (
        "content_block_delta",
        '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta",'
        '"partial_json":" \\"San Francisco, CA\\"}"}}',
    ),
    ("content_block_stop", '{"type":"content_block_stop","index":1}'),
    (
        "message_delta",
        '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}',
    ),
    ("message_stop", '{"type":"message_stop"}'),
]

SAFE = re.compile(r"^[a-zA-Z0-9_-]+$")


def request(*messages: object, **kwargs: object) -> ModelRequest:
    return ModelRequest(messages=list(messages), **kwargs)  # type: ignore[arg-type]


def test_log_becomes_alternating_turns_with_tool_results_first() -> None:
    log = [
        SystemMessage(content="You are terse."),
        SystemMessage(content="MODE\n- active: chat"),
        UserMessage(content="Weather in Paris and Rome?"),
        AssistantMessage(
            content="Checking.",
            tool_calls=[
                ToolCall(id="call_1", name="Weather.get", arguments={"location": "Paris"}),
                ToolCall(id="call_2", name="Weather.get", arguments={}, raw_arguments='{"location": "Ro'),
            ],
        ),
        ToolMessage(tool_call_id="call_1", tool_name="Weather.get", content="22 C"),
        SystemMessage(content="Answer in one line."),
        ToolMessage(tool_call_id="call_2", tool_name="Weather.get", content="bad arguments", is_error=True),
        AssistantMessage(content="Paris: 22 C", error=LLMError(type="timeout", message="read timed out")),
        UserMessage(content="continue"),
        UserMessage(content="please"),
    ]
    body, _ = build_request(request(*log, tools=[WEATHER]), "claude-haiku-4-5", PROFILE, stream=False)
    assert body["system"] == "You are terse.\n\nMODE\n- active: chat"
    assert body["max_tokens"] == PROFILE.max_output_tokens
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_1", "name": "Weather_get", "input": {"location": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "Weather_get", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "22 C"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "bad arguments", "is_error": True},
                {"type": "text", "text": "<system>\nAnswer in one line.\n</system>"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Paris: 22 C\n[LLM_ERROR type=timeout message=read timed out]"}],
        },
        {"role": "user", "content": [{"type": "text", "text": "continue"}, {"type": "text", "text": "please"}]},
    ]
    roles = [turn["role"] for turn in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert body["tools"] == [
        {"name": "Weather_get", "input_schema": dict(WEATHER.parameters), "description": "Current weather."}
    ]


def test_a_system_message_between_assistant_turns_keeps_the_alternation() -> None:
    log = [
        UserMessage(content="hi"),
        AssistantMessage(content="hello"),
        SystemMessage(content="SUMMARY OF EARLIER MESSAGES\nthey said hi"),
        AssistantMessage(content="anything else?"),
    ]
    body, _ = build_request(request(*log), "claude-haiku-4-5", PROFILE, stream=False)
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert body["messages"][2]["content"][0]["text"].startswith("<system>\nSUMMARY OF EARLIER MESSAGES")
    assert "system" not in body


def test_a_log_that_starts_with_the_assistant_gets_a_first_user_turn() -> None:
    body, _ = build_request(
        request(
            SystemMessage(content="s"), AssistantMessage(content="Hi! Ask me anything. "), UserMessage(content="ok")
        ),
        "claude-haiku-4-5",
        PROFILE,
        stream=False,
    )
    assert body["messages"][0] == {"role": "user", "content": [{"type": "text", "text": FIRST_TURN}]}
    assert body["messages"][1]["role"] == "assistant"


def test_max_tokens_is_always_sent_and_settings_and_extras_apply() -> None:
    settings = ModelSettings(max_tokens=123, temperature=0.3, extras={"anthropic_top_k": 5, "openai_seed": 1})
    body, _ = build_request(
        request(UserMessage(content="hi"), settings=settings),
        "claude-3-haiku-20240307",
        anthropic_profile("claude-3-haiku"),
        stream=True,
    )
    assert body["max_tokens"] == 123
    assert body["temperature"] == 0.3
    assert body["top_k"] == 5
    assert "seed" not in body
    assert body["stream"] is True
    body, _ = build_request(
        request(UserMessage(content="hi")), "claude-3-haiku-20240307", anthropic_profile("claude-3-haiku"), stream=False
    )
    assert body["max_tokens"] == 4096  # the family cannot produce more
    body, _ = build_request(
        request(UserMessage(content="hi")), "claude-next-9", anthropic_profile("claude-next-9"), stream=False
    )
    assert body["max_tokens"] > 0


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ("Weather.get", {"type": "tool", "name": "Weather_get"}),
    ],
)
def test_tool_choice_mapping(choice: str, expected: object) -> None:
    body, _ = build_request(
        request(UserMessage(content="hi"), tools=[WEATHER], tool_choice=choice), "c", PROFILE, stream=False
    )
    assert body["tool_choice"] == expected


def test_tool_calls_in_the_log_without_offered_tools_are_declared_and_switched_off() -> None:
    log = [
        UserMessage(content="go"),
        AssistantMessage(tool_calls=[ToolCall(id="t1", name="Weather.get", arguments={"location": "A"})]),
        ToolMessage(tool_call_id="t1", tool_name="Weather.get", content="ok"),
    ]
    body, _ = build_request(request(*log), "c", PROFILE, stream=False)
    assert body["tools"] == [{"name": "Weather_get", "input_schema": {"type": "object"}}]
    assert body["tool_choice"] == {"type": "none"}


def test_ids_from_other_providers_are_made_valid_deterministically() -> None:
    odd = "call:1/x.y"
    log = [
        UserMessage(content="go"),
        AssistantMessage(tool_calls=[ToolCall(id=odd, name="Weather.get", arguments={"location": "A"})]),
        ToolMessage(tool_call_id=odd, tool_name="Weather.get", content="ok"),
    ]
    first, _ = build_request(request(*log, tools=[WEATHER]), "c", PROFILE, stream=False)
    again, _ = build_request(request(*log, tools=[WEATHER]), "c", PROFILE, stream=False)
    sent = first["messages"][1]["content"][0]["id"]
    assert SAFE.match(sent) and sent.startswith("call_1_x_y_")
    assert first["messages"][2]["content"][0]["tool_use_id"] == sent
    assert again["messages"][1]["content"][0]["id"] == sent
    assert log[1].tool_calls[0].id == odd


def test_images_become_base64_or_url_blocks_before_the_text() -> None:
    message = UserMessage(
        content="What is this?",
        attachments=[Attachment.image(PNG), Attachment("image", url="https://example.com/cat.jpg")],
    )
    body, _ = build_request(request(message), "c", PROFILE, stream=False)
    content = body["messages"][0]["content"]
    assert content[0]["type"] == "image"
    assert content[0]["source"]["type"] == "base64"
    assert content[0]["source"]["media_type"] == "image/png"
    assert content[0]["source"]["data"].startswith("iVBORw0KGgo")
    assert content[1] == {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
    assert content[2] == {"type": "text", "text": "What is this?"}


def test_reference_tool_response_parses_with_text_usage_and_stop_reason() -> None:
    tool = ToolSpec(name="get_weather", description="", parameters={"type": "object"})
    _, context = build_request(request(UserMessage(content="SF?"), tools=[tool]), "c", PROFILE, stream=False)
    response = parse_message(REFERENCE_TOOL_RESPONSE.encode(), context)
    assert response.content == "I'll check the weather in San Francisco."
    assert response.tool_calls == [
        ToolCall(
            id="toolu_01A09q90qw90lq917835lq9",
            name="get_weather",
            arguments={"location": "San Francisco, CA", "unit": "celsius"},
        )
    ]
    assert response.stop_reason == "tool_calls"
    # cached input tokens count as input, and apart
    assert response.usage == Usage(input_tokens=2100, output_tokens=503, cache_read_tokens=5)


def test_reference_stream_yields_text_and_assembles_the_tool_input() -> None:
    tool = ToolSpec(name="get_weather", description="", parameters={"type": "object"})
    _, context = build_request(request(UserMessage(content="SF?"), tools=[tool]), "c", PROFILE, stream=True)
    reader = MessageStream(context)
    shown = [text for event, data in REFERENCE_STREAM if (text := reader.feed(event, data))]
    assert shown == ["Okay", ", let's check."]
    response = reader.finish()
    assert response.content == "Okay, let's check."
    assert response.tool_calls == [
        ToolCall(id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather", arguments={"location": "San Francisco, CA"})
    ]
    assert response.stop_reason == "tool_calls"
    assert response.usage == Usage(input_tokens=472, output_tokens=89)


def test_invalid_streamed_tool_input_is_kept_raw() -> None:
    _, context = build_request(request(UserMessage(content="x"), tools=[WEATHER]), "c", PROFILE, stream=True)
    reader = MessageStream(context)
    events = [
        ("message_start", '{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}'),
        (
            "content_block_start",
            '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Weather_get","input":{}}}',
        ),
        (
            "content_block_delta",
            '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"loc"}}',
        ),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}'),
        ("message_stop", '{"type":"message_stop"}'),
    ]
    for event, data in events:
        reader.feed(event, data)
    (call,) = reader.finish().tool_calls
    assert call.name == "Weather.get"
    assert call.arguments == {}
    assert call.raw_arguments == '{"loc'


def test_error_events_map_to_retryable_or_final_errors() -> None:
    _, context = build_request(request(UserMessage(content="x")), "c", PROFILE, stream=True)
    with pytest.raises(ModelError) as info:
        MessageStream(context).feed(
            "error", '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
        )
    assert info.value.type == "overloaded" and info.value.retryable
    with pytest.raises(ModelError) as info:
        MessageStream(context).feed(
            "error", '{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}'
        )
    assert info.value.type == "invalid_request_error" and not info.value.retryable


def test_a_stream_without_message_stop_is_a_cut_stream() -> None:
    _, context = build_request(request(UserMessage(content="x")), "c", PROFILE, stream=True)
    reader = MessageStream(context)
    for event, data in REFERENCE_STREAM[:5]:
        reader.feed(event, data)
    with pytest.raises(ModelError) as info:
        reader.finish()
    assert info.value.type == "stream_cut"


def test_structured_output_is_a_forced_final_tool_whose_input_is_the_answer() -> None:
    """On the families without Claude's JSON outputs (Claude 3.x, Sonnet 4, Opus 4 and 4.1)."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    fmt = ResponseFormat(name="Person", schema=schema)
    older = anthropic_profile("claude-sonnet-4-0")
    assert not older.capabilities.structured_output
    body, context = build_request(request(UserMessage(content="who?"), response_format=fmt), "c", older, stream=False)
    assert body["tools"] == [
        {"name": "final_result", "description": body["tools"][0]["description"], "input_schema": schema}
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "final_result"}
    reply = {
        "type": "message",
        "content": [{"type": "tool_use", "id": "toolu_9", "name": "final_result", "input": {"name": "Ada"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    response = parse_message(json.dumps(reply), context)
    assert json.loads(response.content or "") == {"name": "Ada"}
    assert response.tool_calls == []
    assert response.stop_reason == "stop"

    # With other tools offered the model must call one of them or the final tool.
    body, _ = build_request(
        request(UserMessage(content="who?"), tools=[WEATHER], response_format=fmt), "c", older, stream=False
    )
    assert body["tool_choice"] == {"type": "any"}
