"""Adaptive thinking in the pure Anthropic translation, without a network: which families get which mode (profile
flags), the request (``thinking``, ``output_config.effort``, ``max_tokens``, no ``temperature``), the refusals
before any request, and the replay rules of adaptive mode (every turn back exactly as received, thinking kept on in
a continuation whose turn has no thinking block). The rules are quoted in `anthropic._thinking`'s docstring, from
Anthropic's Thinking and "Troubleshooting thinking" pages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from threadline.errors import CapabilityError
from threadline.messages import AssistantMessage, LLMError, Reasoning, ToolCall, ToolMessage, UserMessage
from threadline.models import ModelRequest, ModelSettings, ResponseFormat, ToolSpec
from threadline.models.anthropic._request import build_request
from threadline.models.anthropic._thinking import check_thinking
from threadline.models.base import ReasoningSettings
from threadline.models.profiles import ModelProfile, anthropic_profile

WEATHER = ToolSpec(
    name="get_weather",
    description="Get current weather for a location",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)
PARIS = ToolCall(id="toolu_01Paris", name="get_weather", arguments={"location": "Paris"})
FABLE = anthropic_profile("claude-fable-5")
OPUS_47 = anthropic_profile("claude-opus-4-7")
SONNET_46 = anthropic_profile("claude-sonnet-4-6")


def req(*messages: Any, settings: ModelSettings | None = None, **kwargs: Any) -> ModelRequest:
    if settings is None:
        settings = ModelSettings(reasoning=ReasoningSettings(effort="medium"))
    return ModelRequest(messages=list(messages), tools=[WEATHER], settings=settings, **kwargs)


def body_of(request: ModelRequest, profile: ModelProfile = FABLE, model: str = "claude-fable-5") -> dict[str, Any]:
    body, _ = build_request(request, model, profile, stream=False)
    return json.loads(json.dumps(body))


def signed(text: str, signature: str = "sig", position: int | None = None) -> Reasoning:
    return Reasoning(text=text, signature=signature, provider="anthropic", position=position)


def result(call: ToolCall = PARIS) -> ToolMessage:
    return ToolMessage(tool_call_id=call.id, tool_name=call.name, content="22 C")


# -- which family gets which mode ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "mode"),
    [
        ("claude-3-5-haiku-latest", None),
        ("claude-3-7-sonnet-20250219", "budget"),
        ("claude-sonnet-4-20250514", "budget"),
        ("claude-opus-4-1-20250805", "budget"),
        ("claude-sonnet-4-5-20250929", "budget"),
        ("claude-opus-4-5", "budget"),
        ("claude-haiku-4-5-20251001", "budget"),
        ("claude-opus-4-6", "adaptive"),
        ("claude-sonnet-4-6", "adaptive"),
        ("claude-opus-4-7", "adaptive"),
        ("claude-opus-4-8", "adaptive"),
        ("claude-sonnet-5", "adaptive"),
        ("claude-opus-5", "adaptive"),
        ("claude-fable-5", "adaptive"),
        ("claude-mythos-5", "adaptive"),
        ("claude-mythos-preview", "adaptive"),
        ("claude-fable-5-1", "adaptive"),
        ("claude-opus-5-5", "adaptive"),
        ("claude-sonnet-5-5", "adaptive"),
        ("claude-haiku-5-5", "adaptive"),
        ("claude-nova-7", "adaptive"),  # an id no family knows is a newer Claude
        ("anthropic/claude-opus-4-7", "adaptive"),  # a router's vendor prefix
    ],
)
def test_each_family_has_its_thinking_mode(model: str, mode: str | None) -> None:
    profile = anthropic_profile(model)
    assert profile.thinking == mode
    assert profile.capabilities.reasoning is (mode is not None)
    assert profile.prefill is (mode != "adaptive")  # Claude 4.6 and later refuse a prefill


@pytest.mark.parametrize(
    ("model", "context", "output", "forced_tool", "temperature"),
    [
        ("claude-opus-4-6", 1_000_000, 128_000, True, True),
        ("claude-sonnet-4-6", 1_000_000, 128_000, True, True),
        ("claude-opus-4-7", 1_000_000, 128_000, True, False),
        ("claude-sonnet-5", 1_000_000, 128_000, True, False),
        ("claude-fable-5", 1_000_000, 128_000, True, False),
        ("claude-haiku-5-5", 1_000_000, 128_000, True, False),
        ("claude-fable-5-1", 1_000_000, 128_000, False, False),
        ("claude-mythos-5-1", 1_000_000, 128_000, False, False),
        ("claude-opus-5-5", 1_000_000, 128_000, False, False),
        ("claude-sonnet-5-5", 1_000_000, 128_000, False, False),
        ("claude-sonnet-4-5", 200_000, 64_000, True, True),
    ],
)
def test_the_adaptive_families_carry_their_documented_limits(
    model: str, context: int, output: int, forced_tool: bool, temperature: bool
) -> None:
    profile = anthropic_profile(model)
    assert profile.capabilities.context_length == context
    assert profile.output_limit == output
    assert profile.max_output_tokens == 8_192  # the default answer stays modest
    assert (profile.forced_tool, profile.temperature) == (forced_tool, temperature)


# -- the request --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reasoning", "effort"),
    [
        (ReasoningSettings(effort="low"), "low"),
        (ReasoningSettings(effort="medium"), "medium"),
        (ReasoningSettings(effort="high"), "high"),
        (ReasoningSettings(), "medium"),  # .reasoning() with neither
        (ReasoningSettings(budget_tokens=100), "low"),  # no 1,024-token floor: there is no budget to send
        (ReasoningSettings(budget_tokens=2_048), "low"),
        (ReasoningSettings(budget_tokens=4_000), "medium"),
        (ReasoningSettings(budget_tokens=8_192), "medium"),
        (ReasoningSettings(budget_tokens=10_000), "high"),
        (ReasoningSettings(budget_tokens=200_000), "high"),
    ],
)
def test_adaptive_thinking_sends_the_effort_and_no_budget(reasoning: ReasoningSettings, effort: str) -> None:
    request = req(UserMessage(content="Weather in Paris?"), settings=ModelSettings(reasoning=reasoning))
    check_thinking(request, FABLE, "anthropic:claude-fable-5")  # no budget rule applies
    body = body_of(request)
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}  # summarized: else the text is empty
    assert body["output_config"] == {"effort": effort}
    assert "budget_tokens" not in json.dumps(body)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (ModelSettings(reasoning=ReasoningSettings(effort="high")), 24_576 + 8_192),  # room for thinking + answer
        (ModelSettings(reasoning=ReasoningSettings(effort="low")), 2_048 + 8_192),
        (ModelSettings(reasoning=ReasoningSettings(budget_tokens=200_000)), 128_000),  # within the output limit
        (ModelSettings(reasoning=ReasoningSettings(effort="high"), max_tokens=500), 500),  # the caller's, as is
    ],
)
def test_max_tokens_leaves_room_for_thinking_unless_the_caller_set_it(settings: ModelSettings, expected: int) -> None:
    assert body_of(req(UserMessage(content="q"), settings=settings))["max_tokens"] == expected


def test_temperature_is_left_out_where_the_api_refuses_it() -> None:
    thinking = ModelSettings(reasoning=ReasoningSettings(effort="low"), temperature=0.2)
    assert "temperature" not in body_of(req(UserMessage(content="q"), settings=thinking), SONNET_46)
    plain = ModelSettings(temperature=0.2)
    assert body_of(req(UserMessage(content="q"), settings=plain), SONNET_46)["temperature"] == 0.2
    # From Opus 4.7 on a temperature is refused on every request, thinking or not.
    assert "temperature" not in body_of(req(UserMessage(content="q"), settings=plain), OPUS_47)


def test_no_reasoning_settings_send_no_thinking_fields() -> None:
    body = body_of(req(UserMessage(content="q"), settings=ModelSettings()))
    assert "thinking" not in body and "output_config" not in body  # the model's own default applies


FREE_KEYS = {"type": "object", "additionalProperties": {"type": "integer"}}  # dict[str, int]: JSON outputs refuse it


def test_a_forced_tool_goes_with_adaptive_thinking() -> None:
    request = req(UserMessage(content="Weather?"), tool_choice="required")
    check_thinking(request, OPUS_47, "anthropic:claude-opus-4-7")  # "adaptive thinking supports forced tool use"
    body = body_of(request, OPUS_47)
    assert body["tool_choice"] == {"type": "any"} and body["thinking"]["type"] == "adaptive"
    structured = req(UserMessage(content="q"), response_format=ResponseFormat(name="A", schema={"type": "object"}))
    check_thinking(structured, OPUS_47, "anthropic:claude-opus-4-7")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tool_choice": "required"}, r"\(tool_choice='required'\).*are not supported for this model"),
        ({"tool_choice": "get_weather"}, r"\(tool_choice='get_weather'\)"),
        (
            {"response_format": ResponseFormat(name="A", schema=FREE_KEYS)},
            r"\(structured output through the final-result tool: the schema allows extra properties or is recursive\)",
        ),
    ],
)
@pytest.mark.parametrize("reasoning", [None, ReasoningSettings(effort="low")])
def test_a_forced_tool_is_refused_on_the_families_that_refuse_it_on_every_request(
    kwargs: dict[str, Any], message: str, reasoning: ReasoningSettings | None
) -> None:
    request = req(UserMessage(content="q"), settings=ModelSettings(reasoning=reasoning), **kwargs)
    with pytest.raises(CapabilityError, match=message):
        check_thinking(request, anthropic_profile("claude-opus-5-5"), "anthropic:claude-opus-5-5")


@pytest.mark.parametrize("reasoning", [None, ReasoningSettings(effort="low")])
def test_structured_output_in_json_outputs_goes_where_forced_tools_do_not(reasoning: ReasoningSettings | None) -> None:
    profile = anthropic_profile("claude-opus-5-5")
    fits = ResponseFormat(name="A", schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    request = req(UserMessage(content="q"), settings=ModelSettings(reasoning=reasoning), response_format=fits)
    check_thinking(request, profile, "anthropic:claude-opus-5-5")
    body = body_of(request, profile)
    # The offered tool stays offered, unforced; there is no final-result tool.
    assert [tool["name"] for tool in body["tools"]] == [WEATHER.name] and "tool_choice" not in body
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    assert body["output_config"]["format"] == {"type": "json_schema", "schema": schema}


@pytest.mark.parametrize("reasoning", [None, ReasoningSettings(effort="low")])
def test_a_prefill_is_refused_on_the_adaptive_families(reasoning: ReasoningSettings | None) -> None:
    settings = ModelSettings(reasoning=reasoning)
    request = req(UserMessage(content="q"), AssistantMessage(content="Half an"), settings=settings)
    with pytest.raises(CapabilityError, match="does not support assistant message prefill"):
        check_thinking(request, OPUS_47, "anthropic:claude-opus-4-7")
    check_thinking(request, anthropic_profile("claude-sonnet-4-5"), "m")  # older families take it (without thinking)


# -- replay -------------------------------------------------------------------------------------------------------


def test_a_continuation_whose_turn_has_no_thinking_keeps_thinking_on() -> None:
    # Adaptive thinking may skip thinking (or the turn began on another provider): the turn is legitimate as it is.
    bare = AssistantMessage(content=None, tool_calls=[PARIS])
    body = body_of(req(UserMessage(content="q"), bare, result()))
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "medium"}
    foreign = AssistantMessage(content=None, tool_calls=[PARIS], reasoning=[Reasoning(text="o3", provider="openai")])
    body = body_of(req(UserMessage(content="q"), foreign, result()))
    assert body["thinking"]["type"] == "adaptive"
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": PARIS.id, "name": "get_weather", "input": {"location": "Paris"}}
    ]


def test_thinking_after_text_goes_back_in_place_not_moved_to_the_front() -> None:
    # A progress update between a text and its tool call, or a failed call merged with its retry: budget mode moves
    # the thinking to the front of the turn, adaptive mode sends the turn as the model produced it.
    answer = AssistantMessage(content="Checking.", tool_calls=[PARIS], reasoning=[signed("Paris first.", position=1)])
    sent = body_of(req(UserMessage(content="q"), answer, result()))["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["text", "thinking", "tool_use"]
    failed = AssistantMessage(
        content="Let me", error=LLMError(type="timeout", message="read timed out", retryable=True)
    )
    retry = AssistantMessage(content=None, tool_calls=[PARIS], reasoning=[signed("whole")])
    body = body_of(req(UserMessage(content="q"), failed, retry, result()))
    assert [block["type"] for block in body["messages"][1]["content"]] == ["text", "thinking", "tool_use"]
    assert body["thinking"]["type"] == "adaptive"


def test_trailing_thinking_goes_back_too() -> None:
    # "When a response stops on max_tokens ... its last block can be a progress-update block ... pass the assistant
    # turn back unchanged and append a new user message (with a tool_result for each tool_use block)".
    cut = AssistantMessage(
        content=None, tool_calls=[PARIS], reasoning=[signed("first"), signed("interrupted", "s2", position=2)]
    )
    sent = body_of(req(UserMessage(content="q"), cut, result()))["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["thinking", "tool_use", "thinking"]
    assert sent[2] == {"type": "thinking", "thinking": "interrupted", "signature": "s2"}


def test_thinking_in_the_current_turn_goes_back_even_without_reasoning_settings() -> None:
    # Nothing is stripped: a family that thinks by default thinks in this request too, and where thinking is off
    # the API itself drops what does not fit ("Mid-turn conflicts degrade gracefully").
    answer = AssistantMessage(content=None, tool_calls=[PARIS], reasoning=[signed("", "omitted-sig")])
    body = body_of(req(UserMessage(content="q"), answer, result(), settings=ModelSettings()))
    assert "thinking" not in body
    assert body["messages"][1]["content"][0] == {"type": "thinking", "thinking": "", "signature": "omitted-sig"}


def test_the_budget_families_still_send_a_budget_and_keep_their_rules() -> None:
    sonnet = anthropic_profile("claude-sonnet-4-5")
    settings = ModelSettings(reasoning=ReasoningSettings(effort="low"))
    body = body_of(req(UserMessage(content="q"), settings=settings), sonnet, "claude-sonnet-4-5")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2_048}
    assert "output_config" not in body
    bare = AssistantMessage(content=None, tool_calls=[PARIS])
    body = body_of(req(UserMessage(content="q"), bare, result(), settings=settings), sonnet, "claude-sonnet-4-5")
    assert "thinking" not in body  # budget mode: a turn that does not start with thinking turns it off
