"""Reasoning in the Chat Completions translation, without a network: the thinking compatible servers send
(``reasoning_content`` or ``reasoning``, answers and stream deltas) read into `Reasoning(provider="openai")`, what is
sent back and what never is, ``reasoning_effort``, and the reasoning token count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from threadline import AssistantMessage, Reasoning, ReasoningSettings, ToolCall, ToolMessage, UserError, user
from threadline.messages import LLMError, MessageList, Usage, answer_parts
from threadline.models import ModelRequest, ModelSettings
from threadline.models.base import ReasoningDelta
from threadline.models.openai._chat_request import build_request
from threadline.models.openai._chat_response import parse_completion
from threadline.models.openai._chat_stream import ChatStream
from threadline.models.profiles import openai_profile, server_options

FIXTURES = Path(__file__).parent.parent / "fixtures"

ANTHROPIC = Reasoning(text="Signed thought.", signature="c2lnbmF0dXJl", provider="anthropic")
ANTHROPIC_REDACTED = Reasoning(redacted="b3BhcXVl", provider="anthropic")
RESPONSES = Reasoning(text="A summary.", redacted="gAAAAencrypted", provider="openai-responses", id="rs_1")
OPENAI = Reasoning(text="Plain thinking from a compatible server.", provider="openai")


def sse_fixture(name: str) -> list[str]:
    """The data fields of a recorded stream (lines starting with ``#`` are its header)."""
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def completion(message: dict[str, object], usage: dict[str, object] | None = None) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "deepseek-reasoner",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": usage or {"prompt_tokens": 12, "completion_tokens": 40, "total_tokens": 52},
    }
    return json.dumps(body)


def chunk(delta: dict[str, object], finish: str | None = None) -> str:
    return json.dumps(
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    )


def read_stream(model: str, events: list[str]) -> tuple[list[str | ReasoningDelta | None], ChatStream]:
    _, context = build_request(ModelRequest(messages=[user("hi")]), model, openai_profile(model), stream=True)
    stream = ChatStream(context)
    return [stream.feed("", data) for data in events], stream


def request_body(*messages: object, model: str = "gpt-4o-mini", server: str | None = None, **settings: object) -> dict:
    profile = openai_profile(model).with_server(server)
    request = ModelRequest(messages=list(messages), settings=ModelSettings(**settings))  # type: ignore[arg-type]
    body, _ = build_request(request, model, profile, stream=False)
    return body


# -- reading ------------------------------------------------------------------------------------------------------
def test_the_documented_vllm_stream_gives_reasoning_deltas_then_text() -> None:
    pieces, stream = read_stream("DeepSeek-R1-Distill-Qwen-1.5B", sse_fixture("vllm_reasoning_stream.sse"))
    thinking = [piece for piece in pieces if isinstance(piece, ReasoningDelta)]
    assert thinking == [
        ReasoningDelta("is", part=0, provider="openai"),
        ReasoningDelta(" 9.11 greater than 9.8?", part=0, provider="openai"),
        ReasoningDelta(" The tenths digit: 1 < 8.", part=0, provider="openai"),
    ]
    assert [piece for piece in pieces if isinstance(piece, str)] == ["9.8 is", " greater."]
    response = stream.finish()
    assert response.content == "9.8 is greater."
    assert response.reasoning == [
        Reasoning(text="is 9.11 greater than 9.8? The tenths digit: 1 < 8.", provider="openai")
    ]
    assert response.usage == Usage(input_tokens=17, output_tokens=41)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_an_answer_keeps_its_thinking_under_either_name(field: str) -> None:
    data = completion(
        {"content": "9.8 is greater.", field: "Compare the tenths."},
        {
            "prompt_tokens": 12,
            "completion_tokens": 40,
            "total_tokens": 52,
            "completion_tokens_details": {"reasoning_tokens": 31},
        },
    )
    _, context = build_request(
        ModelRequest(messages=[user("hi")]), "deepseek-reasoner", openai_profile("deepseek-reasoner"), stream=False
    )
    response = parse_completion(data, context)
    assert response.content == "9.8 is greater."
    assert response.reasoning == [Reasoning(text="Compare the tenths.", provider="openai")]
    assert response.usage == Usage(input_tokens=12, output_tokens=40, reasoning_tokens=31)


def test_a_server_sending_both_names_is_read_once_and_odd_shapes_are_ignored() -> None:
    _, context = build_request(ModelRequest(messages=[user("hi")]), "m", openai_profile("m"), stream=False)
    both = parse_completion(completion({"content": "A.", "reasoning_content": "Once.", "reasoning": "Once."}), context)
    assert both.reasoning == [Reasoning(text="Once.", provider="openai")]
    # OpenAI's own API sends neither; a field in a shape nobody documents does not make the answer unreadable.
    plain = parse_completion(completion({"content": "A.", "reasoning": {"effort": "low"}}), context)
    assert (plain.content, plain.reasoning) == ("A.", [])
    null_details = completion(
        {"content": "A."}, {"prompt_tokens": 1, "completion_tokens": 2, "completion_tokens_details": None}
    )
    assert parse_completion(null_details, context).usage == Usage(input_tokens=1, output_tokens=2)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_chunk_with_the_end_of_thinking_and_the_start_of_the_answer_loses_no_text(field: str) -> None:
    events = [
        chunk({"role": "assistant", field: "Think"}),
        chunk({field: "ing.", "content": "The an"}),
        chunk({"content": "swer."}),
        chunk({}, "stop"),
        "[DONE]",
    ]
    pieces, stream = read_stream("m", events)
    assert pieces[:3] == [
        ReasoningDelta("Think", part=0, provider="openai"),
        ReasoningDelta("ing.", part=0, provider="openai"),
        "The answer.",  # the text of the mixed chunk comes with the next text
    ]
    response = stream.finish()
    assert (response.content, response.reasoning) == ("The answer.", [Reasoning(text="Thinking.", provider="openai")])

    # When no text follows, the whole answer is shown at the end (the transport shows an unshown answer whole).
    pieces, stream = read_stream("m", [chunk({field: "Hm."}), chunk({field: "!", "content": "Yes."}, "stop"), "[DONE]"])
    assert all(isinstance(piece, ReasoningDelta) for piece in pieces[:2])
    assert stream.finish().content == "Yes."


def test_thinking_that_resumes_after_a_tool_call_starts_a_part_in_its_place() -> None:
    events = [
        chunk({"reasoning_content": "First."}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ]
            }
        ),
        chunk({"reasoning_content": "Then more."}),
        chunk({"content": "Done."}, "stop"),
        "[DONE]",
    ]
    pieces, stream = read_stream("m", events)
    assert [piece.part for piece in pieces if isinstance(piece, ReasoningDelta)] == [0, 1]
    response = stream.finish()
    first, second = response.reasoning
    assert (first.position, second.position) == (None, 2)
    message = AssistantMessage(content=response.content, tool_calls=response.tool_calls, reasoning=response.reasoning)
    assert answer_parts(message) == [first, "Done.", second, response.tool_calls[0]]


# -- sending ------------------------------------------------------------------------------------------------------
def every_family_log() -> list[object]:
    return [
        user("Weather in Paris?"),
        AssistantMessage(
            tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Paris"})],
            reasoning=[ANTHROPIC, ANTHROPIC_REDACTED],
        ),
        ToolMessage(tool_call_id="c1", tool_name="weather", content="22 C"),
        AssistantMessage(content="22 C in Paris.", reasoning=[RESPONSES]),
        user("And Rome?"),
        AssistantMessage(
            tool_calls=[ToolCall(id="c2", name="weather", arguments={"city": "Rome"})], reasoning=[OPENAI]
        ),
        ToolMessage(tool_call_id="c2", tool_name="weather", content="24 C"),
        AssistantMessage(content="24 C in Rome.", reasoning=[Reasoning(text="Say it.", provider="openai")]),
        AssistantMessage(
            content="Cut",
            error=LLMError(type="timeout", message="read timed out"),
            reasoning=[Reasoning(text="A thought cut off", provider="openai")],
        ),
        user("Thanks."),
    ]


def test_by_default_no_thinking_is_sent_back() -> None:
    body = request_body(*every_family_log())
    assert [message for message in body["messages"] if "reasoning_content" in message or "reasoning" in message] == []
    assert "reasoning_effort" not in body


def test_with_the_server_option_only_this_familys_thinking_is_sent_as_reasoning_content() -> None:
    body = request_body(*every_family_log(), server="reasoning_content=send")
    sent = [
        (message.get("content"), message.get("reasoning_content"))
        for message in body["messages"]
        if message["role"] == "assistant"
    ]
    assert sent == [
        ("", " "),  # Anthropic's signed and redacted thinking: never to another family (a calling turn gets a blank)
        ("22 C in Paris.", None),  # the Responses API's encrypted item and its summary: never either
        ("", OPENAI.text),
        ("24 C in Rome.", "Say it."),
        ("Cut\n[LLM_ERROR type=timeout message=read timed out]", None),  # a failed call's thinking was cut off
    ]
    assert "Signed thought." not in json.dumps(body) and "A summary." not in json.dumps(body)


def test_the_server_option_is_set_like_the_others_and_deepseek_sends_by_default() -> None:
    assert server_options("reasoning_content=send") == {"reasoning_content": "send"}
    assert server_options({"reasoning_content": "drop"}) == {"reasoning_content": "drop"}
    assert server_options("llama-cpp-python, reasoning_content=SEND")["reasoning_content"] == "send"
    with pytest.raises(UserError, match="reasoning_content='keep' must be one of send, drop"):
        server_options("reasoning_content=keep")
    assert openai_profile("gpt-4o-mini").reasoning_content == "drop"
    # DeepSeek's thinking-mode guide: the thinking of tool-calling turns must come back, or HTTP 400.
    assert openai_profile("deepseek-reasoner").reasoning_content == "send"
    assert openai_profile("deepseek-v4-flash").reasoning_content == "send"
    assert openai_profile("deepseek-reasoner").with_server("reasoning_content=drop").reasoning_content == "drop"


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("o3-mini", True),
        ("gpt-5-mini", True),
        ("gpt-oss-20b", True),
        ("openai/gpt-oss-120b", True),
        ("deepseek-reasoner", True),
        ("deepseek-v4-pro", True),
        ("DeepSeek-R1-Distill-Qwen-1.5B", False),  # always thinks; vLLM and Ollama take no effort for it
        ("qwq-32b", False),
        ("gpt-4o-mini", False),
    ],
)
def test_reasoning_effort_goes_to_families_that_take_one(model: str, reasoning: bool) -> None:
    assert openai_profile(model).capabilities.reasoning is reasoning
    if reasoning:
        body = request_body(user("hi"), model=model, reasoning=ReasoningSettings(effort="high"))
        assert body["reasoning_effort"] == "high"
        derived = request_body(user("hi"), model=model, reasoning=ReasoningSettings(budget_tokens=1_000))
        assert derived["reasoning_effort"] == "low"  # the effort derived from a budget
    assert "reasoning_effort" not in request_body(user("hi"), model=model)


# -- OpenRouter's reasoning_details ---------------------------------------------------------------------------------
OPENROUTER_SIGNATURE = "ErUBCkYIBRgCIkDoc5ig1kWQh3Tyb6Yx0cHnHrsFjX5tP6XvGw=="
OPENROUTER_ENTRIES = [
    {
        "type": "reasoning.text",
        "text": "The user asks for the weather in Paris; the tool gives it.",
        "signature": OPENROUTER_SIGNATURE,
        "format": "anthropic-claude-v1",
        "index": 0,
    },
    {
        "type": "reasoning.encrypted",
        "data": "eyJlbmNyeXB0ZWQiOiJ0cnVlIiwiY29udGVudCI6IltSRURBQ1RFRF0ifQ==",
        "id": "reasoning-encrypted-1",
        "format": "anthropic-claude-v1",
        "index": 1,
    },
]


def test_the_documented_openrouter_stream_gives_each_entry_whole_and_sends_it_back_as_it_came() -> None:
    pieces, stream = read_stream("anthropic/claude-sonnet-4", sse_fixture("openrouter_reasoning_details.sse"))
    thinking = [piece for piece in pieces if isinstance(piece, ReasoningDelta)]
    assert "".join(piece.text for piece in thinking) == OPENROUTER_ENTRIES[0]["text"]  # once, though sent twice
    assert {(piece.part, piece.provider) for piece in thinking} == {(0, "openrouter")}
    response = stream.finish()
    text, redacted = response.reasoning
    assert (text.text, text.signature, text.provider) == (
        OPENROUTER_ENTRIES[0]["text"],
        OPENROUTER_SIGNATURE,
        "openrouter",
    )
    assert (redacted.text, redacted.signature, redacted.id) == ("", None, "reasoning-encrypted-1")
    assert response.usage == Usage(input_tokens=412, output_tokens=96, reasoning_tokens=41)
    [call] = response.tool_calls
    message = AssistantMessage(tool_calls=[call], reasoning=response.reasoning)
    results = ToolMessage(tool_call_id=call.id, tool_name=call.name, content="22 C")
    body = request_body(user("Weather?"), message, results, model="anthropic/claude-sonnet-4", server="openrouter")
    assert body["messages"][1]["reasoning_details"] == OPENROUTER_ENTRIES
    # Another server is sent none of it, even one that takes thinking back (DeepSeek gets the blank its thinking
    # mode requires on a tool-calling turn that has none of its own).
    elsewhere = request_body(user("Weather?"), message, results, model="deepseek-reasoner")
    assert "reasoning_details" not in elsewhere["messages"][1]
    assert elsewhere["messages"][1]["reasoning_content"] == " "


def test_an_answer_keeps_the_documented_entries_of_every_type_in_order() -> None:
    summary = {
        "type": "reasoning.summary",
        "summary": "The model analyzed the problem by first identifying key constraints.",
        "id": "reasoning-summary-1",
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    entries = [summary, *OPENROUTER_ENTRIES]
    data = completion({"content": "Done.", "reasoning": "plain copy", "reasoning_details": entries})
    _, context = build_request(ModelRequest(messages=[user("hi")]), "m", openai_profile("m"), stream=False)
    response = parse_completion(data, context)
    assert [piece.text for piece in response.reasoning] == [summary["summary"], OPENROUTER_ENTRIES[0]["text"], ""]
    assert [piece.id for piece in response.reasoning] == ["reasoning-summary-1", None, "reasoning-encrypted-1"]
    message = AssistantMessage(content="Done.", reasoning=response.reasoning)
    body = request_body(user("hi"), message, user("more"), model="m", server="reasoning_details=send")
    assert body["messages"][1]["reasoning_details"] == entries


ENCRYPTED_ONLY = {
    "type": "reasoning.encrypted",
    "data": "Q2lnbmF0dXJl",
    "id": "call_1",
    "format": "google-gemini-v1",
    "index": 0,
}


def test_plain_thinking_is_kept_beside_entries_that_carry_no_text() -> None:
    # Only an encrypted entry (a Gemini thought signature): the readable thinking is the plain ``reasoning``.
    data = completion({"content": "Hi.", "reasoning": "Readable thinking.", "reasoning_details": [ENCRYPTED_ONLY]})
    _, context = build_request(ModelRequest(messages=[user("hi")]), "m", openai_profile("m"), stream=False)
    answer = parse_completion(data, context).reasoning
    assert [(piece.text, piece.provider) for piece in answer] == [
        ("Readable thinking.", "openai"),
        ("", "openrouter"),
    ]
    events = [
        chunk({"reasoning": "Readable ", "reasoning_details": []}),
        chunk({"reasoning": "thinking.", "reasoning_details": [ENCRYPTED_ONLY]}),
        chunk({"content": "Hi."}, "stop"),
        "[DONE]",
    ]
    pieces, stream = read_stream("m", events)
    assert [piece.text for piece in pieces if isinstance(piece, ReasoningDelta)] == ["Readable ", "thinking."]
    streamed = stream.finish().reasoning
    assert [(piece.text, piece.provider) for piece in streamed] == [
        ("Readable thinking.", "openai"),
        ("", "openrouter"),
    ]
    # Only the entry goes back to OpenRouter; the plain text is this family's thinking, not sent by default.
    message = AssistantMessage(content="Hi.", reasoning=streamed)
    body = request_body(user("hi"), message, user("more"), model="m", server="openrouter")
    assert body["messages"][1]["reasoning_details"] == [ENCRYPTED_ONLY]
    assert "reasoning_content" not in body["messages"][1]


def test_an_entry_with_lone_surrogates_is_kept_under_the_logs_text_rule() -> None:
    from threadline.models.http._reasoning_details import DetailsStream

    stream = DetailsStream()
    odd = {"type": "reasoning.text", "text": "a\ud800", "format": "f\udc80", "index": 0, "x\ud801": ["y\udfff"]}
    stream.feed([odd])
    [piece] = stream.pieces()
    assert piece.text == "a\ufffd"
    kept = {"type": "reasoning.text", "format": "f\ufffd", "index": 0, "x\ufffd": ["y\ufffd"]}
    assert json.loads(piece.redacted or "") == kept
    MessageList([user("hi"), AssistantMessage(content="ok", reasoning=[piece])]).validate()
