"""Claude's extended thinking in the pure Anthropic translation, without a network: the request's ``thinking`` and
``max_tokens``, the refusals before any request, thinking blocks read from bodies and streams (Anthropic's own
documented examples in ``fixtures/``), their replay in place, and the turn shapes the API requires."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from threadline.errors import CapabilityError, ModelError, UserError
from threadline.messages import (
    AssistantMessage,
    LLMError,
    Reasoning,
    ToolCall,
    ToolMessage,
    UserMessage,
    answer_parts,
)
from threadline.models import ModelRequest, ModelSettings, ResponseFormat, ToolSpec
from threadline.models.anthropic._request import build_request
from threadline.models.anthropic._response import parse_message
from threadline.models.anthropic._stream import MessageStream
from threadline.models.anthropic._thinking import check_thinking
from threadline.models.base import ReasoningDelta, ReasoningSettings
from threadline.models.profiles import anthropic_profile

FIXTURES = Path(__file__).parent.parent / "fixtures"
SONNET = anthropic_profile("claude-sonnet-4-5")  # default answer 8,192 tokens, output limit 64,000
OPUS = anthropic_profile("claude-opus-4-1")  # output limit 32,000
WEATHER = ToolSpec(
    name="get_weather",
    description="Get current weather for a location",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)
THINK = ModelSettings(reasoning=ReasoningSettings(budget_tokens=10_000))


def fixture(name: str) -> str:
    """A recorded wire sample without its ``#`` header lines."""
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#"))


def sse(text: str) -> list[tuple[str, str]]:
    events = []
    for chunk in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], fields["data"]))
    return events


def req(*messages: Any, settings: ModelSettings = THINK, **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=list(messages), tools=[WEATHER], settings=settings, **kwargs)


def body_of(request: ModelRequest, profile: Any = SONNET) -> dict[str, Any]:
    body, _ = build_request(request, "claude-sonnet-4-5", profile, stream=False)
    return json.loads(json.dumps(body))


def signed(text: str, signature: str = "sig") -> Reasoning:
    return Reasoning(text=text, signature=signature, provider="anthropic")


PARIS = ToolCall(id="toolu_01Paris", name="get_weather", arguments={"location": "Paris"})
ROME = ToolCall(id="toolu_01Rome", name="get_weather", arguments={"location": "Rome"})


# -- the request --------------------------------------------------------------------------------------------------


def test_thinking_is_sent_with_room_for_the_answer_and_without_temperature() -> None:
    settings = ModelSettings(reasoning=ReasoningSettings(budget_tokens=10_000), temperature=0.2)
    body = body_of(req(UserMessage(content="Weather in Paris?"), settings=settings))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert body["max_tokens"] == 10_000 + 8_192  # the budget plus the profile's default answer
    assert "temperature" not in body  # "Thinking isn't compatible with temperature"
    plain = body_of(req(UserMessage(content="x"), settings=ModelSettings(temperature=0.2)))
    assert "thinking" not in plain and plain["temperature"] == 0.2 and plain["max_tokens"] == 8_192


@pytest.mark.parametrize(
    ("reasoning", "max_tokens", "profile", "expected"),
    [
        (ReasoningSettings(budget_tokens=10_000), 16_000, SONNET, 16_000),  # the caller's, above the budget
        (ReasoningSettings(budget_tokens=10_000), 10_000, SONNET, 18_192),  # too few: budget + default
        (ReasoningSettings(effort="high"), None, OPUS, 32_000),  # 24,576 + 8,192 capped at the output limit
        (ReasoningSettings(effort="low"), None, SONNET, 2_048 + 8_192),
    ],
)
def test_max_tokens_always_exceeds_the_budget_within_the_output_limit(
    reasoning: ReasoningSettings, max_tokens: int | None, profile: Any, expected: int
) -> None:
    settings = ModelSettings(reasoning=reasoning, max_tokens=max_tokens)
    body = body_of(req(UserMessage(content="q"), settings=settings), profile)
    assert body["max_tokens"] == expected > body["thinking"]["budget_tokens"] == reasoning.budget()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"tool_choice": "required"}, CapabilityError, "tool_choice='required'.*only tool_choice auto or none"),
        ({"tool_choice": "get_weather"}, CapabilityError, "tool_choice='get_weather'"),
        (
            {"response_format": ResponseFormat(name="A", schema={"type": "object"})},
            CapabilityError,
            "structured output through the final-result tool: this model has no JSON outputs",
        ),
        (
            {"settings": ModelSettings(reasoning=ReasoningSettings(budget_tokens=500))},
            UserError,
            "at least 1,024 tokens, got budget_tokens=500",
        ),
        (
            {"settings": ModelSettings(reasoning=ReasoningSettings(budget_tokens=40_000))},
            UserError,
            "leaves no room for an answer: .* writes at most 32,000 tokens",
        ),
    ],
)
def test_what_thinking_cannot_go_with_is_refused_before_any_request(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    kwargs.setdefault("settings", THINK)
    with pytest.raises(error, match=message):
        check_thinking(req(UserMessage(content="q"), **kwargs), OPUS, "anthropic:claude-opus-4-1")


def test_auto_and_none_tool_choice_and_no_reasoning_pass_the_check() -> None:
    for choice in (None, "auto", "none"):
        check_thinking(req(UserMessage(content="q"), tool_choice=choice), SONNET, "m")
    plain = ModelSettings()
    check_thinking(req(UserMessage(content="q"), tool_choice="required", settings=plain), SONNET, "m")


# -- responses ----------------------------------------------------------------------------------------------------


def test_the_documented_tool_use_response_keeps_its_thinking_block() -> None:
    _, context = build_request(req(UserMessage(content="What's the weather in Paris?")), "c", SONNET, stream=False)
    response = parse_message(fixture("anthropic_thinking_tool_use.json.txt").encode(), context)
    body = json.loads(fixture("anthropic_thinking_tool_use.json.txt"))
    documented = body["content"][0]
    assert response.reasoning == [
        Reasoning(text=documented["thinking"], signature=documented["signature"], provider="anthropic")
    ]
    assert response.content == body["content"][1]["text"]
    assert response.tool_calls == [
        ToolCall(id="toolu_01CswdEQBMshySk6Y9DFKrfq", name="get_weather", arguments={"location": "Paris"})
    ]


def test_the_documented_tool_use_answer_goes_back_as_the_documentation_continues_it() -> None:
    _, context = build_request(req(UserMessage(content="What's the weather in Paris?")), "c", SONNET, stream=False)
    response = parse_message(fixture("anthropic_thinking_tool_use.json.txt").encode(), context)
    answer = AssistantMessage(content=response.content, tool_calls=response.tool_calls, reasoning=response.reasoning)
    result = ToolMessage(tool_call_id=answer.tool_calls[0].id, tool_name="get_weather", content="88")
    body = body_of(req(UserMessage(content="What's the weather in Paris?"), answer, result))
    documented = json.loads(fixture("anthropic_thinking_tool_use.json.txt"))["content"]
    assert body["messages"][1] == {"role": "assistant", "content": documented}  # byte for byte, in order
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}


def test_the_documented_stream_yields_thinking_pieces_and_the_signed_block() -> None:
    _, context = build_request(req(UserMessage(content="GCD of 1071 and 462?")), "c", SONNET, stream=True)
    reader = MessageStream(context)
    pieces = _feed_all(reader, sse(fixture("anthropic_thinking.sse.txt")))
    thinking = [piece for piece in pieces if isinstance(piece, ReasoningDelta)]
    assert [piece.part for piece in thinking] == [0, 0]
    assert {piece.provider for piece in thinking} == {"anthropic"}
    assert [piece for piece in pieces if isinstance(piece, str)] == [
        "The greatest common divisor of 1071 and 462 is **21**."
    ]
    response = reader.finish()
    assert response.reasoning == [
        Reasoning(
            text="I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147"
            "\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\n\nSo GCD(1071, 462) = 21",
            signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds...",
            provider="anthropic",
        )
    ]
    assert "".join(piece.text for piece in thinking) == response.reasoning[0].text


INTERLEAVED = {
    "content": [
        {"type": "thinking", "thinking": "First the calculator.", "signature": "s1"},
        {"type": "tool_use", "id": "toolu_01a", "name": "get_weather", "input": {"location": "Paris"}},
        {"type": "thinking", "thinking": "Now the database.", "signature": "s2"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "toolu_01b", "name": "get_weather", "input": {"location": "Rome"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 10, "output_tokens": 90, "output_tokens_details": {"thinking_tokens": 70}},
}


def _stream_of(message: dict[str, Any]) -> list[tuple[str, str]]:
    events = [("message_start", json.dumps({"type": "message_start", "message": {"usage": {"input_tokens": 10}}}))]
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        opening = {"thinking": {"type": "thinking", "thinking": "", "signature": ""}, "text": {"type": "text"}}
        deltas: list[dict[str, Any]] = []
        if kind == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"][:5]},
                {"type": "thinking_delta", "thinking": block["thinking"][5:]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif kind == "text":
            deltas = [{"type": "text_delta", "text": block["text"]}]
        elif kind == "tool_use":
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        start = opening.get(kind, {**block, "input": {}} if kind == "tool_use" else block)
        events.append(
            ("content_block_start", json.dumps({"type": "content_block_start", "index": index, "content_block": start}))
        )
        for delta in deltas:
            events.append(
                ("content_block_delta", json.dumps({"type": "content_block_delta", "index": index, "delta": delta}))
            )
        events.append(("content_block_stop", json.dumps({"type": "content_block_stop", "index": index})))
    stop = {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]}, "usage": message["usage"]}
    events += [("message_delta", json.dumps(stop)), ("message_stop", '{"type": "message_stop"}')]
    return events


@pytest.mark.parametrize("stream", [False, True])
def test_interleaved_thinking_keeps_each_block_in_its_place_and_goes_back_so(stream: bool) -> None:
    question = UserMessage(content="Paris and Rome?")
    _, context = build_request(req(question), "c", SONNET, stream=stream)
    if stream:
        reader = MessageStream(context)
        for event, data in _stream_of(INTERLEAVED):
            reader.feed(event, data)
        response = reader.finish()
    else:
        response = parse_message(json.dumps(INTERLEAVED), context)
    assert [(piece.text, piece.signature, piece.redacted, piece.position) for piece in response.reasoning] == [
        ("First the calculator.", "s1", None, None),
        ("Now the database.", "s2", None, 3),  # after the text (which goes before the tool calls) and call a
        ("", None, "EmwKAhgBEgy3va3pzix/LafPsn4a", 4),
    ]
    assert response.usage is not None and response.usage.reasoning_tokens == 70
    answer = AssistantMessage(content=response.content, tool_calls=response.tool_calls, reasoning=response.reasoning)
    kinds = [part if isinstance(part, str) else type(part).__name__ for part in answer_parts(answer)]
    assert kinds == ["Reasoning", "Checking both.", "ToolCall", "Reasoning", "Reasoning", "ToolCall"]
    results = [ToolMessage(tool_call_id=call.id, tool_name="get_weather", content="22 C") for call in answer.tool_calls]
    sent = body_of(req(question, answer, *results))["messages"][1]["content"]
    non_text = [
        (block["type"], block.get("id") or block.get("signature") or block.get("data"))
        for block in sent
        if block["type"] != "text"
    ]
    assert non_text == [
        ("thinking", "s1"),
        ("tool_use", "toolu_01a"),
        ("thinking", "s2"),
        ("redacted_thinking", "EmwKAhgBEgy3va3pzix/LafPsn4a"),
        ("tool_use", "toolu_01b"),
    ]  # every thinking block where it was among the tool calls, unchanged


def test_display_omitted_thinking_has_no_text_but_keeps_and_sends_its_signature() -> None:
    _, context = build_request(req(UserMessage(content="q")), "c", SONNET, stream=False)
    body = (
        '{"content": [{"type": "thinking", "thinking": "", "signature": "EosnCkYICxIMMb3LzNrMu"}, '
        '{"type": "text", "text": "The answer is 12,231."}]}'
    )
    response = parse_message(body, context)
    assert response.reasoning == [Reasoning(text="", signature="EosnCkYICxIMMb3LzNrMu", provider="anthropic")]


# -- bad answers --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"type": "thinking", "thinking": "hm"}, "a thinking block without a signature \\(block 0\\)"),
        ({"type": "thinking", "thinking": "hm", "signature": ""}, "a thinking block without a signature"),
        ({"type": "thinking", "thinking": "hm", "signature": 42}, "Expected `str \\| null`, got `int`.*signature"),
        ({"type": "redacted_thinking"}, "a redacted_thinking block without data"),
        ({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}, "'server_tool_use'"),
    ],
)
def test_a_bad_or_unknown_block_in_a_body_is_a_clear_error(block: dict[str, Any], message: str) -> None:
    _, context = build_request(req(UserMessage(content="q")), "c", SONNET, stream=False)
    body = {"content": [block, {"type": "text", "text": "answer"}], "stop_reason": "end_turn"}
    with pytest.raises(ModelError, match=message) as caught:
        parse_message(json.dumps(body), context)
    assert caught.value.type == "bad_response"


def _feed_all(reader: MessageStream, events: list[tuple[str, str]]) -> list[Any]:
    return [piece for event, data in events if (piece := reader.feed(event, data))]


def test_a_stream_cut_between_thinking_and_signature_is_a_cut_stream_not_a_signed_block() -> None:
    _, context = build_request(req(UserMessage(content="q")), "c", SONNET, stream=True)
    reader = MessageStream(context)
    events = _stream_of(
        {
            "content": [{"type": "thinking", "thinking": "half a thought", "signature": "s"}],
            "stop_reason": "end_turn",
            "usage": {},
        }
    )
    cut = [event for event in events if "signature_delta" not in event[1]][:4]  # start, two deltas, no signature
    shown = _feed_all(reader, cut)
    assert "".join(piece.text for piece in shown) == "half a thought"
    with pytest.raises(ModelError) as caught:
        reader.finish()
    assert caught.value.type == "stream_cut"


def test_a_streamed_thinking_block_that_ends_unsigned_is_a_bad_response() -> None:
    _, context = build_request(req(UserMessage(content="q")), "c", SONNET, stream=True)
    reader = MessageStream(context)
    events = _stream_of(
        {
            "content": [
                {"type": "thinking", "thinking": "never signed", "signature": ""},
                {"type": "text", "text": "hi"},
            ],
            "stop_reason": "end_turn",
            "usage": {},
        }
    )
    _feed_all(reader, events)
    with pytest.raises(ModelError, match="a thinking block without a signature") as caught:
        reader.finish()
    assert caught.value.type == "bad_response"


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            '{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"w"}}',
            "a server tool's block \\('server_tool_use', block 0\\): server tools .* are not supported by "
            "threadline's log yet",
        ),
        (
            '{"type":"content_block_start","index":0,"content_block":{"type":"future_block"}}',
            "a content block of a type threadline does not know \\('future_block', block 0\\)",
        ),
        (
            '{"type":"content_block_delta","index":0,"delta":{"type":"future_delta","x":1}}',
            "a content_block_delta of a type threadline does not know \\('future_delta'\\)",
        ),
        (
            '{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}',
            "a signature_delta for block 0, which is not a thinking block",
        ),
    ],
)
def test_an_unknown_block_or_delta_in_a_stream_is_a_clear_error(event: str, message: str) -> None:
    _, context = build_request(req(UserMessage(content="q")), "c", SONNET, stream=True)
    reader = MessageStream(context)
    reader.feed("message_start", '{"type":"message_start","message":{"usage":{"input_tokens":1}}}')
    with pytest.raises(ModelError, match=message) as caught:
        reader.feed(json.loads(event)["type"], event)
    assert caught.value.type == "bad_response"


# -- replay -------------------------------------------------------------------------------------------------------


def test_only_claudes_signed_or_redacted_pieces_are_sent() -> None:
    answer = AssistantMessage(
        content="",
        tool_calls=[PARIS],
        reasoning=[
            signed("mine"),
            Reasoning(redacted="opaque", provider="anthropic"),
            Reasoning(text="cut off before its signature", provider="anthropic"),
            Reasoning(text="an o3 summary", signature="enc", provider="openai-responses"),
            Reasoning(text="deepseek thoughts", provider="openai"),
        ],
    )
    result = ToolMessage(tool_call_id=PARIS.id, tool_name="get_weather", content="22 C")
    sent = body_of(req(UserMessage(content="q"), answer, result))["messages"][1]["content"]
    assert sent == [
        {"type": "thinking", "thinking": "mine", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": PARIS.id, "name": "get_weather", "input": {"location": "Paris"}},
    ]


def test_a_failed_call_merged_with_its_retry_still_starts_the_turn_with_the_retrys_thinking() -> None:
    failed = AssistantMessage(
        content="Let me",
        error=LLMError(type="timeout", message="read timed out", retryable=True),
        reasoning=[Reasoning(text="partial, unsigned", provider="anthropic")],
    )
    retry = AssistantMessage(content=None, tool_calls=[PARIS], reasoning=[signed("whole")])
    result = ToolMessage(tool_call_id=PARIS.id, tool_name="get_weather", content="22 C")
    body = body_of(req(UserMessage(content="q"), failed, retry, result))
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "whole", "signature": "sig"},
        {"type": "text", "text": "Let me\n[LLM_ERROR type=timeout message=read timed out]"},
        {"type": "tool_use", "id": PARIS.id, "name": "get_weather", "input": {"location": "Paris"}},
    ]
    assert "thinking" in body  # the turn starts with its thinking block, so thinking stays on


def test_trailing_thinking_is_not_sent() -> None:
    cut = AssistantMessage(
        content=None,
        tool_calls=[PARIS],
        reasoning=[signed("first"), Reasoning(text="after", signature="s2", provider="anthropic", position=2)],
    )
    result = ToolMessage(tool_call_id=PARIS.id, tool_name="get_weather", content="22 C")
    sent = body_of(req(UserMessage(content="q"), cut, result))["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["thinking", "tool_use"]  # "The final block … cannot be thinking"


def test_a_tool_loop_begun_without_thinking_continues_without_it() -> None:
    # A log from another provider: the call has no thinking block, so this request cannot have thinking on.
    foreign = AssistantMessage(
        content=None, tool_calls=[PARIS], reasoning=[Reasoning(text="o1 thoughts", provider="openai")]
    )
    result = ToolMessage(tool_call_id=PARIS.id, tool_name="get_weather", content="22 C")
    settings = ModelSettings(reasoning=ReasoningSettings(budget_tokens=10_000), temperature=0.3, max_tokens=500)
    body = body_of(req(UserMessage(content="q"), foreign, result, settings=settings))
    assert "thinking" not in body
    assert body["max_tokens"] == 500 and body["temperature"] == 0.3  # a plain request
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": PARIS.id, "name": "get_weather", "input": {"location": "Paris"}}
    ]
    # Once the turn is complete (a new user message), thinking is on again.
    answer = AssistantMessage(content="22 C in Paris.")
    later = body_of(req(UserMessage(content="q"), foreign, result, answer, UserMessage(content="And Rome?")))
    assert later["thinking"] == {"type": "enabled", "budget_tokens": 10_000}


def test_a_tool_loop_with_thinking_continued_without_it_sends_no_thinking_in_its_turn() -> None:
    answer = AssistantMessage(content=None, tool_calls=[PARIS], reasoning=[signed("mine")])
    result = ToolMessage(tool_call_id=PARIS.id, tool_name="get_weather", content="22 C")
    body = body_of(req(UserMessage(content="q"), answer, result, settings=ModelSettings()))
    assert "thinking" not in body
    assert [block["type"] for block in body["messages"][1]["content"]] == ["tool_use"]
    # In a complete turn, earlier thinking goes back (the API uses or ignores it).
    final = AssistantMessage(content="22 C.", reasoning=[signed("done")])
    closed = body_of(req(UserMessage(content="q"), answer, result, final, UserMessage(content="more")))
    assert [block["type"] for block in closed["messages"][1]["content"]] == ["thinking", "tool_use"]
    assert [block["type"] for block in closed["messages"][3]["content"]] == ["thinking", "text"]


def test_a_request_ending_with_an_assistant_turn_has_no_thinking() -> None:
    answer = AssistantMessage(content="Half an", reasoning=[signed("mine")])
    body = body_of(req(UserMessage(content="q"), answer))
    assert "thinking" not in body  # "You can't pre-fill responses when thinking is enabled"
    assert body["messages"][-1] == {"role": "assistant", "content": [{"type": "text", "text": "Half an"}]}
