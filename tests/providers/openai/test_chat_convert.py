"""The OpenAI Chat Completions translation, without a network: log -> request JSON, response JSON -> messages,
stream chunks -> deltas and assembled tool calls. Response bodies follow the API reference examples."""

from __future__ import annotations

import json

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
from threadline.models.openai._chat_request import build_request
from threadline.models.openai._chat_response import parse_completion
from threadline.models.openai._chat_stream import ChatStream
from threadline.models.profiles import openai_profile

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
WEATHER = ToolSpec(
    name="Weather.get",
    description="Current weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)

# From the API reference: "Create chat completion", function calling example.
REFERENCE_TOOL_RESPONSE = """{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1699896916,
  "model": "gpt-4o-mini",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {
            "id": "call_abc123",
            "type": "function",
            "function": {
              "name": "get_current_weather",
              "arguments": "{\\n\\"location\\": \\"Boston, MA\\"\\n}"
            }
          }
        ]
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 82,
    "completion_tokens": 17,
    "total_tokens": 99,
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  }
}"""

# From the API reference: "The chat completion chunk object", streamed tool call then usage (include_usage).
REFERENCE_STREAM = [
    '{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini", '
    '"system_fingerprint": "fp_44709d6fcb", "choices":[{"index":0,"delta":{"role":"assistant","content":null,'
    '"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":'
    '{"name":"get_current_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}',
    '{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini",'
    '"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\""}}]},'
    '"logprobs":null,"finish_reason":null}]}',
    '{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini",'
    '"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"location"}}]},'
    '"logprobs":null,"finish_reason":null}]}',
    '{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini",'
    '"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\":\\"Boston, MA\\"}"}}]},'
    '"logprobs":null,"finish_reason":null}]}',
    '{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini",'
    '"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}',
    '{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini",'
    '"choices":[],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}}',
    "[DONE]",
]


def request(*messages: object, **kwargs: object) -> ModelRequest:
    return ModelRequest(messages=list(messages), **kwargs)  # type: ignore[arg-type]


def test_log_becomes_chat_messages_with_wire_names_and_verbatim_invalid_arguments() -> None:
    log = [
        SystemMessage(content="You are terse."),
        UserMessage(content="Weather in Paris and Rome?"),
        AssistantMessage(
            content="Checking.",
            tool_calls=[
                ToolCall(id="call_1", name="Weather.get", arguments={"city": "Paris"}),
                ToolCall(id="call_2", name="Weather.get", arguments={}, raw_arguments='{"city": "Ro'),
            ],
        ),
        ToolMessage(tool_call_id="call_1", tool_name="Weather.get", content="22 C"),
        ToolMessage(tool_call_id="call_2", tool_name="Weather.get", content="Invalid arguments", is_error=True),
        SystemMessage(content="Be brief from now on."),
        AssistantMessage(content="It is 22 C", error=LLMError(type="timeout", message="read timed out")),
        UserMessage(content="continue"),
    ]
    body, _ = build_request(request(*log, tools=[WEATHER]), "gpt-4o-mini", openai_profile("gpt-4o-mini"), stream=False)
    assert body["model"] == "gpt-4o-mini"
    assert "stream" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "Weather_get", "arguments": '{"city":"Paris"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "Weather_get", "arguments": '{"city": "Ro'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "22 C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Invalid arguments"},
        {"role": "system", "content": "Be brief from now on."},
        {"role": "assistant", "content": "It is 22 C\n[LLM_ERROR type=timeout message=read timed out]"},
        {"role": "user", "content": "continue"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "Weather_get",
                "description": "Current weather.",
                "parameters": dict(WEATHER.parameters),
            },
        }
    ]
    assert "tool_choice" not in body


def test_reasoning_models_get_developer_role_and_max_completion_tokens() -> None:
    settings = ModelSettings(max_tokens=300, temperature=0.2)
    body, _ = build_request(
        request(SystemMessage(content="rules"), UserMessage(content="hi"), settings=settings),
        "o3",
        openai_profile("o3"),
        stream=True,
    )
    assert body["messages"][0] == {"role": "developer", "content": "rules"}
    assert body["max_completion_tokens"] == 300
    assert "max_tokens" not in body
    assert "temperature" not in body  # the family refuses it
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}

    body, _ = build_request(
        request(UserMessage(content="hi"), settings=settings), "gpt-4o", openai_profile("gpt-4o"), stream=False
    )
    assert body["max_tokens"] == 300
    assert body["temperature"] == 0.2


def test_extras_with_the_openai_prefix_go_into_the_body() -> None:
    settings = ModelSettings(extras={"openai_seed": 7, "openai_parallel_tool_calls": False, "anthropic_top_k": 3})
    body, _ = build_request(
        request(UserMessage(content="hi"), settings=settings), "gpt-4o", openai_profile("gpt-4o"), stream=False
    )
    assert body["seed"] == 7
    assert body["parallel_tool_calls"] is False
    assert "top_k" not in body


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("Weather.get", {"type": "function", "function": {"name": "Weather_get"}}),
    ],
)
def test_tool_choice_mapping(choice: str, expected: object) -> None:
    body, _ = build_request(
        request(UserMessage(content="hi"), tools=[WEATHER], tool_choice=choice),
        "gpt-4o",
        openai_profile("gpt-4o"),
        stream=False,
    )
    assert body["tool_choice"] == expected


def test_images_become_image_url_parts() -> None:
    message = UserMessage(
        content="What is this?",
        attachments=[Attachment.image(PNG), Attachment("image", url="https://example.com/cat.jpg")],
    )
    body, _ = build_request(request(message), "gpt-4o", openai_profile("gpt-4o"), stream=False)
    parts = body["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "What is this?"}
    assert parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert parts[2] == {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}


def test_structured_output_uses_json_schema_where_the_family_has_it_and_a_final_tool_elsewhere() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    fmt = ResponseFormat(name="Person", schema=schema)
    body, context = build_request(
        request(UserMessage(content="who?"), response_format=fmt), "gpt-4o", openai_profile("gpt-4o"), stream=False
    )
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "Person", "schema": schema}}
    assert "tools" not in body
    assert context.final_tool is None

    body, context = build_request(
        request(UserMessage(content="who?"), response_format=fmt), "llama3.2", openai_profile("llama3.2"), stream=False
    )
    assert "response_format" not in body
    assert body["tools"][0]["function"]["name"] == "final_result"
    assert body["tools"][0]["function"]["parameters"] == schema
    assert body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    # The forced call comes back as the answer's JSON text, not as a tool call.
    reply = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "final_result", "arguments": '{"name":"Ada"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    response = parse_completion(json.dumps(reply), context)
    assert response.content == '{"name":"Ada"}'
    assert response.tool_calls == []
    assert response.stop_reason == "stop"


def test_final_tool_name_avoids_a_user_tool_of_the_same_name() -> None:
    clash = ToolSpec(name="final_result", description="mine", parameters={"type": "object"})
    fmt = ResponseFormat(name="X", schema={"type": "object"})
    body, context = build_request(
        request(UserMessage(content="x"), tools=[clash], response_format=fmt),
        "llama3",
        openai_profile("llama3"),
        stream=False,
    )
    names = [tool["function"]["name"] for tool in body["tools"]]
    assert names == ["final_result", "final_result_2"]
    assert context.final_tool == "final_result_2"
    assert body["tool_choice"] == "required"  # the model may use the user's tool first


def test_reference_tool_response_parses_to_a_tool_call_with_arguments() -> None:
    catalog_tool = ToolSpec(name="get_current_weather", description="", parameters={"type": "object"})
    _, context = build_request(
        request(UserMessage(content="Boston?"), tools=[catalog_tool]),
        "gpt-4o-mini",
        openai_profile("gpt-4o-mini"),
        stream=False,
    )
    response = parse_completion(REFERENCE_TOOL_RESPONSE.encode(), context)
    assert response.content is None
    assert response.stop_reason == "tool_calls"
    assert response.usage == Usage(input_tokens=82, output_tokens=17)
    assert response.tool_calls == [
        ToolCall(id="call_abc123", name="get_current_weather", arguments={"location": "Boston, MA"})
    ]


def test_wire_names_map_back_to_real_names_and_invalid_arguments_are_kept_raw() -> None:
    _, context = build_request(
        request(UserMessage(content="x"), tools=[WEATHER]), "gpt-4o", openai_profile("gpt-4o"), stream=False
    )
    reply = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "Weather_get", "arguments": '{"city": "Par'},
                        },
                        {"id": "b", "type": "function", "function": {"name": "Weather_get", "arguments": "[1, 2]"}},
                        {"id": "c", "type": "function", "function": {"name": "Weather_get", "arguments": ""}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    calls = parse_completion(json.dumps(reply), context).tool_calls
    assert [call.name for call in calls] == ["Weather.get"] * 3
    assert calls[0].arguments == {} and calls[0].raw_arguments == '{"city": "Par'
    assert calls[1].arguments == {} and calls[1].raw_arguments == "[1, 2]"  # not an object
    assert calls[2].arguments == {} and calls[2].raw_arguments is None  # no arguments at all


def test_reference_stream_assembles_the_tool_call_usage_and_finish_reason() -> None:
    tool = ToolSpec(name="get_current_weather", description="", parameters={"type": "object"})
    _, context = build_request(
        request(UserMessage(content="Boston?"), tools=[tool]), "gpt-4o-mini", openai_profile("gpt-4o-mini"), stream=True
    )
    reader = ChatStream(context)
    shown = [reader.feed("message", data) for data in REFERENCE_STREAM]
    assert shown == [None] * len(REFERENCE_STREAM)  # a tool call shows no text
    response = reader.finish()
    assert response.tool_calls == [
        ToolCall(id="call_DdmO9pD3xa9XTPNJ32zg2hcA", name="get_current_weather", arguments={"location": "Boston, MA"})
    ]
    assert response.stop_reason == "tool_calls"
    assert response.usage == Usage(input_tokens=82, output_tokens=17)


def test_stream_text_deltas_and_a_usage_chunk_with_null_choices() -> None:
    _, context = build_request(request(UserMessage(content="hi")), "m", openai_profile("m"), stream=True)
    reader = ChatStream(context)
    events = [
        '{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
        '{"choices":null,"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}',  # vLLM's form
        "[DONE]",
    ]
    assert [reader.feed("", data) for data in events] == [None, "Hel", "lo", None, None, None]
    response = reader.finish()
    assert response.content == "Hello"
    assert response.usage == Usage(input_tokens=5, output_tokens=2)
    assert response.stop_reason == "stop"


def test_a_stream_that_ends_without_finishing_is_a_cut_stream() -> None:
    _, context = build_request(request(UserMessage(content="hi")), "m", openai_profile("m"), stream=True)
    reader = ChatStream(context)
    reader.feed("", '{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}')
    with pytest.raises(ModelError) as info:
        reader.finish()
    assert info.value.type == "stream_cut"
    assert info.value.retryable


def test_error_objects_and_unreadable_bodies_become_model_errors() -> None:
    _, context = build_request(request(UserMessage(content="hi")), "m", openai_profile("m"), stream=True)
    reader = ChatStream(context)
    with pytest.raises(ModelError) as info:
        reader.feed("", '{"error":{"message":"The server had an error","type":"server_error"}}')
    assert info.value.retryable
    assert "The server had an error" in str(info.value)
    with pytest.raises(ModelError) as info:
        parse_completion(b"<html>Bad gateway</html>", context)
    assert info.value.type == "bad_response"


def test_unsafe_and_overlong_ids_are_mapped_deterministically_and_the_log_keeps_them() -> None:
    long_id = "x" * 80
    log = [
        UserMessage(content="go"),
        AssistantMessage(tool_calls=[ToolCall(id=long_id, name="Weather.get", arguments={"city": "A"})]),
        ToolMessage(tool_call_id=long_id, tool_name="Weather.get", content="ok"),
    ]
    first, _ = build_request(request(*log, tools=[WEATHER]), "m", openai_profile("m"), stream=False)
    second, _ = build_request(request(*log, tools=[WEATHER]), "m", openai_profile("m"), stream=False)
    sent = first["messages"][1]["tool_calls"][0]["id"]
    assert len(sent) <= 64 and sent != long_id
    assert first["messages"][2]["tool_call_id"] == sent
    assert second["messages"][1]["tool_calls"][0]["id"] == sent  # same log, same wire id
    assert log[1].tool_calls[0].id == long_id  # the log is untouched


def test_response_ids_that_repeat_a_log_id_are_replaced() -> None:
    log = [
        UserMessage(content="go"),
        AssistantMessage(tool_calls=[ToolCall(id="call_0", name="Weather.get", arguments={"city": "A"})]),
        ToolMessage(tool_call_id="call_0", tool_name="Weather.get", content="ok"),
    ]
    _, context = build_request(request(*log, tools=[WEATHER]), "m", openai_profile("m"), stream=False)
    reply = {
        "choices": [
            {
                "message": {
                    "tool_calls": [
                        {"id": "call_0", "function": {"name": "Weather_get", "arguments": "{}"}},
                        {"id": "", "function": {"name": "Weather_get", "arguments": "{}"}},
                        {"id": "call_1", "function": {"name": "Weather_get", "arguments": "{}"}},
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    ids = [call.id for call in parse_completion(json.dumps(reply), context).tool_calls]
    assert ids[0] != "call_0" and ids[0].startswith("call_")
    assert ids[1] and ids[1] != ids[0]
    assert ids[2] == "call_1"
