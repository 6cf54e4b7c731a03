"""The OpenAI Responses translation, without a network: log -> request JSON (reasoning replayed in place, other
families' reasoning never sent), response JSON and stream events -> answers with their reasoning pieces. Wire
shapes from OpenAI's documentation are in ``fixtures/responses_openai_docs.json`` (its header says where each came
from)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from threadline import Attachment
from threadline.errors import ModelError
from threadline.messages import (
    AssistantMessage,
    LLMError,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    answer_parts,
)
from threadline.models import ModelRequest, ModelSettings, ReasoningDelta, ReasoningSettings, ResponseFormat, ToolSpec
from threadline.models.http._convert_common import IdMap
from threadline.models.openai._responses_request import ResponsesContext, build_request
from threadline.models.openai._responses_response import parse_response
from threadline.models.openai._responses_stream import ResponsesStream
from threadline.models.profiles import ModelProfile, openai_profile
from threadline.models.tool_catalog import ToolCatalog

DOCS = json.loads((Path(__file__).parent.parent / "fixtures" / "responses_openai_docs.json").read_text())
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
WEATHER = ToolSpec(
    name="Weather.get",
    description="Current weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
O4 = openai_profile("o4-mini")


def body_for(messages: list[Any], profile: ModelProfile = O4, **fields: Any) -> dict[str, Any]:
    body, _ = build_request(ModelRequest(messages=messages, **fields), "o4-mini", profile, stream=False)
    return body


def context(
    tools: tuple[str, ...] = ("get_weather",), final: str | None = None, origin: str = "openai-responses"
) -> ResponsesContext:
    return ResponsesContext(ToolCatalog(tools), IdMap(strict=False), final, origin=origin)


def rs(
    text: str, ident: str, redacted: str | None = None, provider: str = "openai-responses", **more: Any
) -> Reasoning:
    return Reasoning(text=text, id=ident, redacted=redacted, provider=provider, **more)


# -- requests -----------------------------------------------------------------------------------------------------


def test_a_conversation_becomes_stateless_input_items() -> None:
    call = ToolCall(id="call_1", name="Weather.get", arguments={"city": "Paris"})
    body = body_for(
        [
            SystemMessage(content="Be brief."),
            SystemMessage(content="MODE: chat"),
            UserMessage(content="Weather in Paris?"),
            AssistantMessage(content="Let me look.", tool_calls=[call]),
            ToolMessage(tool_call_id="call_1", tool_name="Weather.get", content="22 C"),
            SystemMessage(content="The user prefers Fahrenheit."),
            AssistantMessage(content="It is 22 C."),
            UserMessage(content="Thanks", attachments=[Attachment.image(PNG)]),
        ],
        tools=[WEATHER],
    )
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "Be brief.\n\nMODE: chat"  # the leading system text, first in context
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "Weather in Paris?"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        {"type": "function_call", "call_id": "call_1", "name": "Weather_get", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "22 C"},
        {"type": "message", "role": "developer", "content": "The user prefers Fahrenheit."},  # kept in place
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 22 C."}]},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Thanks"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64," + base64.b64encode(PNG).decode(),
                    "detail": "auto",
                },
            ],
        },
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "Weather_get",
            "description": "Current weather.",
            "parameters": WEATHER.parameters,
            "strict": False,  # strict is the Responses default, and tool schemas with defaults fail it
        }
    ]
    assert "tool_choice" not in body and "reasoning" not in body and "stream" not in body


def test_a_model_that_does_not_reason_is_not_asked_for_encrypted_reasoning() -> None:
    body = body_for([UserMessage(content="Hi")], openai_profile("gpt-4o-mini"), settings=ModelSettings(temperature=0.2))
    assert "include" not in body  # "Encrypted content is not supported with this model"
    assert body["temperature"] == 0.2


def test_settings_map_to_the_responses_fields() -> None:
    settings = ModelSettings(
        max_tokens=300, temperature=0.5, reasoning=ReasoningSettings(budget_tokens=9_000), extras={"openai_seed": 3}
    )
    body, _ = build_request(
        ModelRequest(messages=[UserMessage(content="Hi")], settings=settings), "o4-mini", O4, stream=True
    )
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["max_output_tokens"] == 300
    assert "temperature" not in body  # reasoning models refuse it; the profile says so
    assert body["stream"] is True and body["seed"] == 3
    quiet = ModelProfile("o4-mini", O4.capabilities, reasoning_summary=None)
    body = body_for([UserMessage(content="Hi")], quiet, settings=ModelSettings(reasoning=ReasoningSettings("low")))
    assert body["reasoning"] == {"effort": "low"}  # no summary asked of an organization that may not have them


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("Weather.get", {"type": "function", "name": "Weather_get"}),
    ],
)
def test_tool_choice(choice: str, wire: Any) -> None:
    assert body_for([UserMessage(content="Hi")], tools=[WEATHER], tool_choice=choice)["tool_choice"] == wire


def test_structured_output_uses_the_json_schema_format_where_the_profile_has_it() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    body = body_for([UserMessage(content="Hi")], response_format=ResponseFormat(name="City answer", schema=schema))
    assert body["text"] == {"format": {"type": "json_schema", "name": "City_answer", "schema": schema, "strict": False}}
    assert "tools" not in body


def test_structured_output_without_the_format_goes_through_the_final_result_tool() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    no_format = ModelProfile("x", openai_profile("gpt-4").capabilities)
    body, ctx = build_request(
        ModelRequest(messages=[UserMessage(content="Hi")], response_format=ResponseFormat(name="A", schema=schema)),
        "x",
        no_format,
        stream=False,
    )
    assert body["tools"][0]["name"] == "final_result" and body["tools"][0]["parameters"] == schema
    assert body["tool_choice"] == {"type": "function", "name": "final_result"}
    item = {"type": "function_call", "call_id": "c", "name": "final_result", "arguments": '{"city": "Rome"}'}
    answer = parse_response(json.dumps({"status": "completed", "output": [item]}), ctx)
    assert answer.content == '{"city": "Rome"}' and answer.tool_calls == [] and answer.stop_reason == "stop"


def test_a_failed_call_is_sent_as_its_partial_text_ending_in_the_error_block() -> None:
    failed = AssistantMessage(content="Once upon", error=LLMError(type="stream_cut", message="cut", retryable=True))
    body = body_for([UserMessage(content="Story"), failed, UserMessage(content="continue")])
    assert body["input"][1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Once upon\n[LLM_ERROR type=stream_cut message=cut]"}],
    }


def test_reasoning_goes_back_in_its_place_and_summary_parts_of_one_item_are_one_item() -> None:
    calls = [ToolCall(id="c1", name="Weather.get", arguments={}), ToolCall(id="c2", name="Weather.get", arguments={})]
    answer = AssistantMessage(
        tool_calls=calls,
        reasoning=[
            rs("First part.", "rs_1", "ENC1"),
            rs("Second part.", "rs_1"),
            rs("", "rs_2", "ENC2", position=3),  # thought again between the two calls
        ],
    )
    assert [type(part).__name__ for part in answer_parts(answer)] == [
        "Reasoning",
        "Reasoning",
        "ToolCall",
        "Reasoning",
        "ToolCall",
    ]
    items = body_for([UserMessage(content="Weather?"), answer])["input"][1:]
    assert items == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "First part."},
                {"type": "summary_text", "text": "Second part."},
            ],
            "encrypted_content": "ENC1",
        },
        {"type": "function_call", "call_id": "c1", "name": "Weather_get", "arguments": "{}"},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "ENC2"},
        {"type": "function_call", "call_id": "c2", "name": "Weather_get", "arguments": "{}"},
    ]


@pytest.mark.parametrize(
    "piece",
    [
        Reasoning(text="Claude thought.", signature="sig", provider="anthropic"),
        Reasoning(text="", redacted="opaque", provider="anthropic"),
        Reasoning(text="A compatible server's plain thinking.", provider="openai"),
        rs("Kept without its encrypted content (a store: true log).", "rs_9"),
        rs("Logged from a failed call: never signed.", "rs_8", redacted=None),
        Reasoning(text="No item id.", redacted="ENC", provider="openai-responses"),
    ],
)
def test_reasoning_that_cannot_be_replayed_here_is_never_sent(piece: Reasoning) -> None:
    answer = AssistantMessage(content="Done.", reasoning=[piece])
    items = body_for([UserMessage(content="Go"), answer])["input"]
    assert [item["type"] for item in items] == ["message", "message"]
    assert "Claude" not in json.dumps(items) and "plain thinking" not in json.dumps(items)


def test_reasoning_nothing_follows_is_left_out() -> None:
    # The answer's text came before this item: replayed last, it would be "provided without its required following
    # item".
    answer = AssistantMessage(content="Here.", reasoning=[rs("", "rs_1", "E1"), rs("After.", "rs_2", "E2", position=2)])
    items = body_for([UserMessage(content="Go"), answer])["input"]
    assert [(item["type"], item.get("id")) for item in items] == [
        ("message", None),
        ("reasoning", "rs_1"),
        ("message", None),
    ]


# -- responses: OpenAI's own examples -----------------------------------------------------------------------------


def test_the_documented_reasoning_and_function_call_response() -> None:
    answer = parse_response(json.dumps(DOCS["response_reasoning_function_call"]), context())
    (call,) = answer.tool_calls
    assert call.id == "call_9ylqPOZUyFEwhxvBwgpNDqPT" and call.name == "get_weather"
    assert call.arguments == {"latitude": 48.8566, "longitude": 2.3522}
    assert answer.reasoning == [
        Reasoning(text="", provider="openai-responses", id="rs_68210c71a95c81919cc44afadb9d220400c77cc15fd2f785")
    ]
    assert answer.usage == Usage(input_tokens=10, output_tokens=148, reasoning_tokens=128)
    assert answer.content is None and answer.stop_reason == "tool_calls"
    # Made with store: true, it has no encrypted content: under store: false its id alone would refer to nothing.
    logged = AssistantMessage(tool_calls=answer.tool_calls, reasoning=answer.reasoning)
    items = body_for([UserMessage(content="Weather in Paris?"), logged])["input"]
    assert [item["type"] for item in items] == ["message", "function_call"]


def test_the_documented_encrypted_reasoning_item_goes_back_verbatim() -> None:
    item = DOCS["encrypted_reasoning_item"]
    call = DOCS["response_reasoning_function_call"]["output"][1]
    answer = parse_response(json.dumps({"status": "completed", "output": [item, call]}), context())
    (piece,) = answer.reasoning
    assert piece.redacted == item["encrypted_content"] and piece.id == item["id"]
    logged = AssistantMessage(tool_calls=answer.tool_calls, reasoning=answer.reasoning)
    tool = ToolMessage(tool_call_id=call["call_id"], tool_name="get_weather", content="20")
    items = body_for([UserMessage(content="Weather in Paris?"), logged, tool], tools=[])["input"]
    assert items[1] == {
        "type": "reasoning",
        "id": item["id"],
        "summary": [],
        "encrypted_content": item["encrypted_content"],
    }
    assert items[2]["call_id"] == call["call_id"] and "id" not in items[2]
    assert items[3] == {"type": "function_call_output", "call_id": call["call_id"], "output": "20"}


def feed(reader: ResponsesStream, events: list[Any]) -> list[Any]:
    out = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        kind = json.loads(data)["type"]
        out.append(reader.feed(kind, data))
    return out


def test_the_documented_function_call_stream() -> None:
    reader = ResponsesStream(context())
    assert feed(reader, DOCS["stream_function_call"]) == [None] * 10  # argument fragments are not answer text
    with pytest.raises(ModelError) as info:
        reader.finish()  # the guide's example shows no terminal event: as a whole stream, it would be cut
    assert info.value.type == "stream_cut" and info.value.retryable
    feed(reader, [DOCS["response_completed"]])
    answer = reader.finish()
    (call,) = answer.tool_calls
    assert call.id == "call_2345abc"  # the complete item of output_item.done is the one kept
    assert call.arguments == {"location": "Paris, France"} and answer.stop_reason == "tool_calls"


def test_the_documented_reasoning_summary_events() -> None:
    reader = ResponsesStream(context())
    added, delta, done, part_done = feed(reader, DOCS["stream_reasoning_summary"])
    assert added is None and done is None and part_done is None
    assert delta == ReasoningDelta(DOCS["stream_reasoning_summary"][1]["delta"], part=0, provider="openai-responses")


def test_the_documented_completed_and_failed_events() -> None:
    text = parse_response(json.dumps(DOCS["response_completed"]["response"]), context())
    assert text.content is not None and text.content.startswith("In a shimmering forest")
    assert text.stop_reason == "stop" and text.usage == Usage(input_tokens=0, output_tokens=0)
    reader = ResponsesStream(context())
    with pytest.raises(ModelError) as info:
        feed(reader, [DOCS["response_failed"]])
    assert info.value.type == "server" and info.value.retryable
    assert "The model failed to generate a response." in str(info.value)


# -- responses: the rest of what can come back --------------------------------------------------------------------


def reasoning_item(ident: str, *summary: str, encrypted: str | None = "ENC") -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": ident,
        "summary": [{"type": "summary_text", "text": t} for t in summary],
    }
    if encrypted:
        item["encrypted_content"] = encrypted
    return item


def call_item(call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_" + call_id,
        "call_id": call_id,
        "name": "get_weather",
        "arguments": "{}",
    }


def test_several_summary_parts_and_interleaved_reasoning_keep_their_places() -> None:
    output = [
        reasoning_item("rs_1", "One.", "Two."),
        call_item("c1"),
        reasoning_item("rs_2", encrypted="E2"),
        call_item("c2"),
    ]
    answer = parse_response(json.dumps({"status": "completed", "output": output}), context())
    assert answer.reasoning == [
        rs("One.", "rs_1", "ENC"),
        rs("Two.", "rs_1"),  # the first piece carries the item's encrypted content
        rs("", "rs_2", "E2", position=3),
    ]
    logged = AssistantMessage(tool_calls=answer.tool_calls, reasoning=answer.reasoning)
    assert [getattr(part, "id", part) for part in answer_parts(logged)][2:4] == ["c1", "rs_2"]
    results = [ToolMessage(tool_call_id=c, tool_name="get_weather", content="x") for c in ("c1", "c2")]
    items = body_for([UserMessage(content="Go"), logged, *results], tools=[])["input"]
    assert [(item["type"], item.get("id") or item.get("call_id")) for item in items[1:5]] == [
        ("reasoning", "rs_1"), ("function_call", "c1"), ("reasoning", "rs_2"), ("function_call", "c2"),
    ]  # fmt: skip
    assert items[1]["summary"] == [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two."}]


def test_an_output_item_of_an_unknown_type_is_an_error_naming_it() -> None:
    output = [{"type": "holodeck_call", "id": "hc_1", "status": "completed"}, {"type": "message", "content": []}]
    with pytest.raises(ModelError) as info:
        parse_response(json.dumps({"status": "completed", "output": output}), context())
    assert info.value.type == "bad_response" and "'holodeck_call'" in str(info.value)


def test_incomplete_is_a_length_stop_and_an_empty_incomplete_answer_keeps_its_reasoning() -> None:
    message = {"type": "message", "content": [{"type": "output_text", "text": "Partial"}]}
    body = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": [message]}
    answer = parse_response(json.dumps(body), context())
    assert answer.content == "Partial" and answer.stop_reason == "length"
    # Nothing but reasoning: the empty answer with its stop reason, for the transport to fail as every provider's.
    body["output"] = [reasoning_item("rs_1")]
    answer = parse_response(json.dumps(body), context())
    assert (answer.content, answer.tool_calls, answer.stop_reason) == (None, [], "length")
    assert [piece.id for piece in answer.reasoning] == ["rs_1"] and answer.reasoning[0].redacted
    body["incomplete_details"] = {"reason": "content_filter"}
    assert parse_response(json.dumps(body), context()).stop_reason == "content_filter"
    # A reason OpenAI does not document: a clear error naming it.
    body["incomplete_details"] = {"reason": "solar_flare"}
    with pytest.raises(ModelError) as info:
        parse_response(json.dumps(body), context())
    assert info.value.type == "incomplete" and not info.value.retryable and "solar_flare" in str(info.value)


def test_a_refusal_is_the_answer_with_a_content_filter_stop() -> None:
    message = {"type": "message", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    answer = parse_response(json.dumps({"status": "completed", "output": [message]}), context())
    assert answer.content == "I can't help with that." and answer.stop_reason == "content_filter"


@pytest.mark.parametrize(
    ("body", "kind", "retryable"),
    [
        ({"status": "failed", "error": {"code": "rate_limit_exceeded", "message": "Slow down."}}, "rate_limit", True),
        ({"status": "failed", "error": {"code": "invalid_prompt", "message": "Flagged."}}, "invalid_prompt", False),
        ({"error": {"message": "Bad request", "type": "invalid_request_error"}}, "invalid_request_error", False),
    ],
)
def test_an_error_object_is_a_model_error(body: dict[str, Any], kind: str, retryable: bool) -> None:
    with pytest.raises(ModelError) as info:
        parse_response(json.dumps(body), context())
    assert info.value.type == kind and info.value.retryable is retryable


def test_a_body_that_is_not_a_response() -> None:
    with pytest.raises(ModelError) as info:
        parse_response(b"<html>Bad gateway</html>", context())
    assert info.value.type == "bad_response"


def test_stream_error_events_and_an_incomplete_stream() -> None:
    reader = ResponsesStream(context())
    with pytest.raises(ModelError) as info:
        reader.feed("error", json.dumps({"type": "error", "code": "server_error", "message": "Oops", "param": None}))
    assert info.value.retryable and "Oops" in str(info.value)
    reader = ResponsesStream(context())
    assert (
        reader.feed("", json.dumps({"type": "response.output_text.delta", "output_index": 0, "delta": "Par"})) == "Par"
    )
    incomplete = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}
    reader.feed("", json.dumps({"type": "response.incomplete", "response": incomplete}))
    answer = reader.finish()
    assert answer.content == "Par" and answer.stop_reason == "length"


def test_a_streamed_final_result_tool_shows_its_arguments_as_the_answer() -> None:
    reader = ResponsesStream(context(final="final_result"))
    added = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "final_result", "arguments": ""}
    shown = feed(
        reader,
        [
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"a": '},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "1}"},
            {"type": "response.output_item.done", "output_index": 0, "item": {**added, "arguments": '{"a": 1}'}},
            {"type": "response.completed", "response": {"status": "completed", "output": []}},
        ],
    )
    assert "".join(piece for piece in shown if piece) == '{"a": 1}'
    answer = reader.finish()
    assert answer.content == '{"a": 1}' and answer.tool_calls == []


VLLM = "openai-responses@vllm.internal:8000"


def test_plain_reasoning_text_goes_back_only_to_the_server_that_made_it() -> None:
    """gpt-oss on vLLM: thinking as ``reasoning_text`` content, no encrypted content. It is logged with the server's
    origin and goes back as it came to that server only; OpenAI's own API would answer 404 for an item it cannot
    find under store: false, and another server never made it."""
    item = {"type": "reasoning", "id": "rs_oss", "summary": [], "content": [{"type": "reasoning_text", "text": "Hm."}]}
    call = call_item("call_1")
    answer = parse_response(json.dumps({"status": "completed", "output": [item, call]}), context(origin=VLLM))
    assert answer.reasoning == [Reasoning(text="Hm.", provider=VLLM, id="rs_oss")]
    message = AssistantMessage(tool_calls=answer.tool_calls, reasoning=answer.reasoning)
    log = [
        UserMessage(content="q"),
        message,
        ToolMessage(tool_call_id=answer.tool_calls[0].id, tool_name="get_weather", content="r"),
    ]
    request = ModelRequest(messages=log, tools=[ToolSpec(name="get_weather", description="", parameters={})])
    oss = openai_profile("gpt-oss-120b")
    sent, _ = build_request(request, "gpt-oss-120b", oss, stream=False, origin=VLLM)
    assert sent["input"][1] == item
    for elsewhere in ("openai-responses", "openai-responses@vllm.internal:8001", "openai-responses@other:8000"):
        sent, _ = build_request(request, "gpt-oss-120b", oss, stream=False, origin=elsewhere)
        assert [i["type"] for i in sent["input"]] == ["message", "function_call", "function_call_output"]


def test_encrypted_reasoning_goes_back_only_to_the_server_that_made_it() -> None:
    """OpenAI's encrypted reasoning means nothing to vLLM (it answers 400); a proxy's own encrypted reasoning goes
    back to the proxy, and to nobody else."""
    call = ToolCall(id="call_1", name="get_weather", arguments={})
    tools = [ToolSpec(name="get_weather", description="", parameters={})]
    for made_by in ("openai-responses", "openai-responses@gateway.example:443"):
        log = [
            UserMessage(content="q"),
            AssistantMessage(tool_calls=[call], reasoning=[rs("Plan.", "rs_1", "gAAAAenc", provider=made_by)]),
            ToolMessage(tool_call_id="call_1", tool_name="get_weather", content="r"),
        ]
        request = ModelRequest(messages=log, tools=tools)
        for origin in ("openai-responses", "openai-responses@gateway.example:443", VLLM):
            sent, ctx = build_request(request, "o4-mini", O4, stream=False, origin=origin)
            reasoning = [i for i in sent["input"] if i["type"] == "reasoning"]
            assert ctx.origin == origin
            if origin == made_by:
                assert reasoning == [
                    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}],
                     "encrypted_content": "gAAAAenc"}
                ]  # fmt: skip
            else:
                assert reasoning == [] and "gAAAAenc" not in json.dumps(sent)


def test_stream_pieces_carry_the_servers_origin() -> None:
    reader = ResponsesStream(context(origin=VLLM))
    delta = reader.feed(
        "response.reasoning_text.delta",
        json.dumps({"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "delta": "Hm"}),
    )
    assert delta == ReasoningDelta("Hm", part=0, provider=VLLM)
