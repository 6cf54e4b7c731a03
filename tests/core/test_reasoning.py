"""Reasoning in the log (docs/file-format.md#reasoning): `Reasoning` on assistant messages, file format 2.1, the engine
keeping what a model thought (and what a failed call had thought, unsigned), ``on_reasoning``, the builder's
``.reasoning()``, the context budget and the request hash."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import (
    AssistantMessage,
    CapabilityError,
    ContextBuilder,
    ContextSettings,
    MessageList,
    MessageListDeserializationError,
    ModelError,
    ModelResponse,
    Reasoning,
    ReasoningDelta,
    ReasoningSettings,
    TextDelta,
    ToolCall,
    ToolMessage,
    Usage,
    UserError,
    generate_text,
    llm,
    request_hash,
    user,
)
from threadline.messages import answer_parts
from threadline.models.base import Model, ModelCapabilities, ModelRequest
from threadline.testing import ScriptedModel

from .test_serialization import full_log

SIGNED = Reasoning(text="The user wants Paris.", signature="c2lnbmF0dXJl", provider="anthropic")
REDACTED = Reasoning(redacted="ZW5jcnlwdGVk", provider="anthropic")


def weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def thinking_log() -> MessageList:
    return MessageList(
        [
            user("Weather in Paris?"),
            AssistantMessage(
                content="Let me check.",
                tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Paris"})],
                reasoning=[SIGNED, REDACTED],
                usage=Usage(input_tokens=10, output_tokens=30, reasoning_tokens=20),
            ),
            ToolMessage(tool_call_id="c1", tool_name="weather", content="22 C in Paris"),
            AssistantMessage(
                content="22 C.", reasoning=[Reasoning(text="Done.", signature="c2ln", provider="anthropic")]
            ),
        ]
    )


# -- the file format --------------------------------------------------------------------------------------------------
def test_a_log_with_reasoning_is_version_2_1_and_reads_back_equal() -> None:
    log = thinking_log()
    data = log.to_dict()
    assert data["version"] == "2.1"
    assert data["messages"][1]["reasoning"] == [
        {"text": "The user wants Paris.", "signature": "c2lnbmF0dXJl", "provider": "anthropic"},
        {"redacted": "ZW5jcnlwdGVk", "provider": "anthropic"},
    ]
    assert data["messages"][1]["usage"] == {"input_tokens": 10, "output_tokens": 30, "reasoning_tokens": 20}
    assert MessageList.from_dict(data) == log
    assert MessageList.from_json(log.to_json()) == log
    assert MessageList.from_json(log.to_json().encode()) == log


def test_without_reasoning_2_1_is_the_2_0_form_with_another_version() -> None:
    log = full_log()
    data = log.to_dict()
    old = copy.deepcopy(data)
    old["version"] = "2.0"
    assert MessageList.from_dict(old) == log  # a 2.0 file reads unchanged
    assert MessageList.from_json(json.dumps(old)) == log
    assert log.to_json() == json.dumps(old, separators=(",", ":"), ensure_ascii=False).replace('"2.0"', '"2.1"', 1)
    assert "reasoning" not in log.to_json()


@pytest.mark.parametrize(
    ("reasoning", "field"),
    [
        ([{"text": "x", "signature": 5}], "reasoning[0].signature"),
        ([{"text": 7}], "reasoning[0].text"),
        ("thinking", "reasoning"),
        ([{"text": "x", "position": -1}], "reasoning[0].position"),
        ([{"text": "x", "redacted": {"data": "x"}}], "reasoning[0].redacted"),
    ],
)
def test_bad_reasoning_in_a_file_is_named(reasoning: Any, field: str) -> None:
    data = {
        "version": "2.1",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok", "reasoning": reasoning}],
    }
    for read in (lambda: MessageList.from_dict(data), lambda: MessageList.from_json(json.dumps(data))):
        with pytest.raises(MessageListDeserializationError) as caught:
            read()
        assert caught.value.position == 1
        assert caught.value.field == field


def test_an_openai_list_keeps_reasoning_content() -> None:
    log = MessageList.from_dict(
        [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "Two and two."},
            {"role": "assistant", "content": "4!", "reasoning": "Again."},
        ]
    )
    assert log[1].reasoning == [Reasoning(text="Two and two.", provider="openai")]
    assert log[2].reasoning == [Reasoning(text="Again.", provider="openai")]


reasoning_texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
opaque = st.none() | st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=60)
pieces = st.builds(
    Reasoning,
    text=reasoning_texts,
    signature=opaque,
    redacted=opaque,
    provider=st.sampled_from([None, "anthropic", "openai-responses", "openai"]),
    id=st.none() | st.from_regex(r"rs_[a-z0-9]{1,12}", fullmatch=True),
    position=st.none() | st.integers(min_value=0, max_value=6),
)


@st.composite
def logs_with_reasoning(draw: st.DrawFn) -> MessageList:
    """A valid log of a few turns, some assistant messages with reasoning (tool calls and failures included)."""
    items: list[Any] = []
    for turn in range(draw(st.integers(min_value=1, max_value=4))):
        items.append(user(draw(reasoning_texts)))
        reasoning = draw(st.lists(pieces, max_size=3))
        if draw(st.booleans()):
            call = ToolCall(id=f"c{turn}", name="weather", arguments={"city": draw(reasoning_texts)})
            items.append(AssistantMessage(tool_calls=[call], reasoning=reasoning))
            items.append(ToolMessage(tool_call_id=call.id, tool_name="weather", content="ok"))
            reasoning = draw(st.lists(pieces, max_size=2))
        items.append(AssistantMessage(content=draw(reasoning_texts) or None, reasoning=reasoning))
    return MessageList(items)


def reasoning_of(log: MessageList) -> list[list[dict[str, Any]]]:
    """Every assistant message's reasoning as the builtins that are written (what must survive byte for byte)."""
    return [
        [msgspec.to_builtins(piece) for piece in message.reasoning]
        for message in log
        if isinstance(message, AssistantMessage)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs_with_reasoning())
def test_any_log_with_reasoning_survives_json(log: MessageList) -> None:
    for again in (MessageList.from_json(log.to_json()), MessageList.from_dict(json.loads(json.dumps(log.to_dict())))):
        assert again == log
        assert reasoning_of(again) == reasoning_of(log)
    log.validate()


def test_answer_parts_put_interleaved_thinking_back_in_place() -> None:
    first = Reasoning(text="a", signature="s1", provider="anthropic")
    second = Reasoning(text="b", signature="s2", provider="anthropic", position=2)
    calls = [ToolCall(id="c1", name="f", arguments={}), ToolCall(id="c2", name="g", arguments={})]
    message = AssistantMessage(tool_calls=calls, reasoning=[first, second])
    assert answer_parts(message) == [first, calls[0], second, calls[1]]
    with_text = AssistantMessage(content="Hm.", tool_calls=calls[:1], reasoning=[first])
    assert answer_parts(with_text) == [first, "Hm.", calls[0]]


# -- the engine -------------------------------------------------------------------------------------------------------
async def test_the_log_keeps_what_the_model_thought_and_on_reasoning_sees_it_stream() -> None:
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Paris"})],
                reasoning=[
                    SIGNED,
                    Reasoning(text="Second thought, a longer one.", signature="c2", provider="anthropic"),
                ],
            ),
            AssistantMessage(content="22 C in Paris.", reasoning=[Reasoning(text="Answer now.", provider="anthropic")]),
        ]
    )
    thoughts: list[str] = []
    texts: list[str] = []
    conversation = llm.model(model).tools(weather).request("Weather in Paris?").prompt_conversation()
    async for _ in conversation.run(on_reasoning=thoughts.append, on_text=texts.append):
        pass
    log = conversation.messages
    log.validate()
    assert log[1].reasoning == [
        SIGNED,
        Reasoning(text="Second thought, a longer one.", signature="c2", provider="anthropic"),
    ]
    assert log[3].reasoning == [Reasoning(text="Answer now.", provider="anthropic")]
    assert "".join(thoughts) == "The user wants Paris.\n\nSecond thought, a longer one.\n\nAnswer now."
    assert "".join(texts) == "22 C in Paris."  # thinking never reaches the text
    # The second request carried the first answer with its reasoning, to be replayed by the adapter.
    sent = model.requests[1].messages
    assert [m.reasoning for m in sent if isinstance(m, AssistantMessage)] == [log[1].reasoning]


def test_run_sync_and_stream_take_on_reasoning_and_stream_yields_text_only() -> None:
    thinking = Reasoning(text="Thinking hard about it.", provider="openai")
    model = ScriptedModel([AssistantMessage(content="Paris.", reasoning=[thinking])])
    seen: list[str] = []
    conversation = llm.model(model).request("Capital of France?").prompt_conversation()
    conversation.run_sync(on_reasoning=seen.append)
    assert "".join(seen) == "Thinking hard about it."
    model.add(AssistantMessage(content="Rome.", reasoning=[thinking]))
    assert "".join(conversation.continuation.request("Italy?").stream()) == "Rome."


class CutModel(Model):
    """Streams two thinking parts (the first whole, the second cut), then fails: a stream cut between a
    ``thinking_delta`` and its ``signature_delta``."""

    name = "cut"
    capabilities = ModelCapabilities(reasoning=True)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        yield ReasoningDelta("First ", part=0, provider="anthropic")
        yield ReasoningDelta("block.", part=0, provider="anthropic")
        yield ReasoningDelta("Second, cut", part=1, provider="anthropic")
        raise ModelError("the stream ended before the answer was complete", type="stream_cut", retryable=True)


async def test_a_call_cut_while_thinking_logs_the_thinking_unsigned() -> None:
    conversation = llm.model(CutModel()).request("Think.").prompt_conversation()
    with pytest.raises(ModelError, match="stream ended"):
        async for _ in conversation:
            pass
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "stream_cut"
    assert failure.reasoning == [
        Reasoning(text="First block.", provider="anthropic"),
        Reasoning(text="Second, cut", provider="anthropic"),
    ]
    assert all(piece.signature is None and piece.redacted is None for piece in failure.reasoning)
    conversation.messages.validate()
    assert MessageList.from_json(conversation.messages.to_json()) == conversation.messages


class JunkReasoning(Model):
    name = "junk"

    def __init__(self, reasoning: Any) -> None:
        self.reasoning = reasoning

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        yield TextDelta("Hi")
        yield ModelResponse(content="Hi", reasoning=self.reasoning)


@pytest.mark.parametrize(
    "junk",
    ["thinking", [{"text": "x"}], [Reasoning(text=5)], [Reasoning(text="x", signature=b"sig")]],  # type: ignore[arg-type]
)
async def test_reasoning_a_model_returns_that_cannot_be_logged_is_a_logged_failure(junk: Any) -> None:
    conversation = llm.model(JunkReasoning(junk)).request("Hi").prompt_conversation()
    with pytest.raises(ModelError, match="returned reasoning that is not a list of Reasoning"):
        async for _ in conversation:
            pass
    failure = conversation.messages[-1]
    assert failure.error is not None and failure.error.type == "invalid_response"
    assert failure.content == "Hi"
    assert MessageList.from_json(conversation.messages.to_json()) == conversation.messages


# -- settings ---------------------------------------------------------------------------------------------------------
def test_the_builder_sends_reasoning_settings() -> None:
    model = ScriptedModel(["a", "b", "c", "d"])
    builder = llm.model(model)
    builder.reasoning(effort="high").request("q").prompt()
    builder.reasoning(budget_tokens=3_000).request("q").prompt()
    builder.reasoning().reasoning(enabled=False).request("q").prompt()
    builder.request("q").prompt(reasoning="low")
    sent = [request.settings.reasoning for request in model.requests]
    assert sent == [
        ReasoningSettings(effort="high"),
        ReasoningSettings(budget_tokens=3_000),
        None,
        ReasoningSettings(effort="low"),
    ]


def test_derived_budgets_and_efforts() -> None:
    assert ReasoningSettings(effort="low").budget() == 2_048
    assert ReasoningSettings().budget() == 8_192
    assert ReasoningSettings(effort="high").budget() == 24_576
    assert ReasoningSettings(budget_tokens=1_500).level() == "low"
    assert ReasoningSettings(budget_tokens=5_000).level() == "medium"
    assert ReasoningSettings(budget_tokens=100_000).level() == "high"
    assert ReasoningSettings(effort="low", budget_tokens=100_000).level() == "low"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.reasoning(effort="extreme"), "reasoning effort must be one of low, medium, high, got 'extreme'"),
        (lambda b: b.reasoning(budget_tokens=0), "reasoning budget_tokens must be a positive integer, got 0"),
        (lambda b: b.reasoning(budget_tokens="lots"), "reasoning budget_tokens must be a positive integer, got 'lots'"),
    ],
)
def test_bad_reasoning_settings_are_refused(call: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        call(llm)


def test_a_model_without_reasoning_refuses_the_settings_before_any_request() -> None:
    model = ScriptedModel(["never"], capabilities=ModelCapabilities(reasoning=False))
    with pytest.raises(CapabilityError, match="takes no reasoning settings"):
        llm.model(model).reasoning(effort="low").request("q").prompt()
    assert model.requests == []


async def test_generate_text_takes_reasoning_and_hashes_it() -> None:
    model = ScriptedModel([AssistantMessage(content="4", reasoning=[Reasoning(text="2+2", provider="openai")])])
    result = await generate_text(model=model, prompt="2+2?", reasoning="high")
    assert model.requests[0].settings.reasoning == ReasoningSettings(effort="high")
    assert result.messages[-1].reasoning == [Reasoning(text="2+2", provider="openai")]
    assert request_hash(model=model, prompt="2+2?", reasoning="high") != request_hash(model=model, prompt="2+2?")


def test_the_request_hash_sees_reasoning_in_the_log() -> None:
    plain = [user("q"), AssistantMessage(content="a"), user("again")]
    thought = [user("q"), AssistantMessage(content="a", reasoning=[SIGNED]), user("again")]
    resigned = [
        user("q"),
        AssistantMessage(content="a", reasoning=[Reasoning(text=SIGNED.text, signature="x")]),
        user("again"),
    ]
    hashes = {request_hash(model="m", messages=log) for log in (plain, thought, resigned)}
    assert len(hashes) == 3


# -- the context window -----------------------------------------------------------------------------------------------
def test_the_budget_counts_reasoning_and_keeps_it_with_its_tool_group() -> None:
    long_thought = Reasoning(text="x" * 4_000, signature="s", provider="anthropic")
    log = MessageList(
        [
            user("first"),
            AssistantMessage(content="an old answer " * 20),  # 280 characters
            user("weather?"),
            AssistantMessage(
                tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Paris"})], reasoning=[long_thought]
            ),
            ToolMessage(tool_call_id="c1", tool_name="weather", content="22 C"),
        ]
    )
    roomy = ContextBuilder(ContextSettings(max_chars=100_000)).build(log, "chat")
    tight = ContextBuilder(ContextSettings(max_chars=4_100)).build(log, "chat")
    assert roomy.report.chars > 4_000  # the thinking is counted
    kept = [m for m in tight.messages if not m.role == "system"]
    # The old turn (280 characters) would fit were the thinking not counted; beside it, it does not. The tool group
    # stays whole, its reasoning with it.
    assert [m.role for m in kept] == ["user", "assistant", "tool"]
    assert kept[1].reasoning == [long_thought]
