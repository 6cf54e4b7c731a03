"""Cached prompt tokens as each provider reports them, streamed and not, become `Usage.cache_read_tokens` and
`cache_write_tokens`; the log's ``input_tokens`` keep the whole request. The wire bodies follow the usage examples of
each provider's prompt-caching documentation."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from threadline import AssistantMessage, Cost, ModelError, llm
from threadline.messages import Usage, UserMessage
from threadline.models import ModelRequest
from threadline.models.anthropic._request import build_request as anthropic_request
from threadline.models.anthropic._response import parse_message
from threadline.models.anthropic._stream import MessageStream
from threadline.models.http._convert_common import IdMap
from threadline.models.openai._chat_request import build_request as chat_request
from threadline.models.openai._chat_response import parse_completion
from threadline.models.openai._chat_stream import ChatStream
from threadline.models.openai._responses_request import ResponsesContext
from threadline.models.openai._responses_response import parse_response
from threadline.models.openai._responses_stream import ResponsesStream
from threadline.models.profiles import anthropic_profile, openai_profile
from threadline.models.tool_catalog import ToolCatalog
from threadline.pricing.prices import prices_version

from .conftest import make_anthropic, make_openai
from .servers import Answer, Cut, FakeAnthropic, FakeOpenAI

ASK = ModelRequest(messages=[UserMessage(content="What are the key terms of this agreement?")])

# Anthropic's prompt-caching guide: the second request reads the cached prefix the first one wrote.
ANTHROPIC_WRITE = {
    "input_tokens": 21,
    "cache_creation_input_tokens": 188086,
    "cache_read_input_tokens": 0,
    "output_tokens": 393,
}
ANTHROPIC_READ = {
    "input_tokens": 21,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 188086,
    "output_tokens": 393,
}


def anthropic_message(usage: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "The key terms are..."}],
            "stop_reason": "end_turn",
            "usage": usage,
        }
    ).encode()


def anthropic_stream(start_usage: dict[str, Any], delta_usage: dict[str, Any]) -> list[tuple[str, str]]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "usage": start_usage,
        },
    }
    return [
        ("message_start", json.dumps(start)),
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
        ("content_block_delta", '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        (
            "message_delta",
            json.dumps({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta_usage}),
        ),
        ("message_stop", '{"type":"message_stop"}'),
    ]


def test_anthropic_cache_write_and_read_unstreamed() -> None:
    _, context = anthropic_request(ASK, "claude-sonnet-4-5", anthropic_profile("claude-sonnet-4-5"), stream=False)
    written = parse_message(anthropic_message(ANTHROPIC_WRITE), context).usage
    read = parse_message(anthropic_message(ANTHROPIC_READ), context).usage
    assert written == Usage(input_tokens=188107, output_tokens=393, cache_write_tokens=188086)
    assert read == Usage(input_tokens=188107, output_tokens=393, cache_read_tokens=188086)


def test_anthropic_streamed_cache_counts_from_message_start() -> None:
    _, context = anthropic_request(ASK, "claude-sonnet-4-5", anthropic_profile("claude-sonnet-4-5"), stream=True)
    reader = MessageStream(context)
    for event, data in anthropic_stream({**ANTHROPIC_READ, "output_tokens": 1}, {"output_tokens": 393}):
        reader.feed(event, data)
    assert reader.finish().usage == Usage(input_tokens=188107, output_tokens=393, cache_read_tokens=188086)


def test_anthropic_streamed_message_delta_gives_the_final_cache_counts() -> None:
    # The API now repeats the cumulative input and cache counts in message_delta: those are the final ones.
    _, context = anthropic_request(ASK, "claude-sonnet-4-5", anthropic_profile("claude-sonnet-4-5"), stream=True)
    reader = MessageStream(context)
    start = {"input_tokens": 21, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
    for event, data in anthropic_stream(start, ANTHROPIC_WRITE):
        reader.feed(event, data)
    assert reader.finish().usage == Usage(input_tokens=188107, output_tokens=393, cache_write_tokens=188086)


# OpenAI's prompt-caching guide: cached_tokens under prompt_tokens_details (Chat) / input_tokens_details (Responses).
CHAT_USAGE = {
    "prompt_tokens": 2006,
    "completion_tokens": 300,
    "total_tokens": 2306,
    "prompt_tokens_details": {"cached_tokens": 1920},
    "completion_tokens_details": {
        "reasoning_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}
CACHED = Usage(input_tokens=2006, output_tokens=300, cache_read_tokens=1920)


def test_openai_chat_cached_tokens_unstreamed() -> None:
    _, context = chat_request(ASK, "gpt-4o", openai_profile("gpt-4o"), stream=False)
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Terms."}, "finish_reason": "stop"}],
        "usage": CHAT_USAGE,
    }
    assert parse_completion(json.dumps(body), context).usage == CACHED


def test_openai_chat_cached_tokens_streamed_in_the_usage_chunk() -> None:
    _, context = chat_request(ASK, "gpt-4o", openai_profile("gpt-4o"), stream=True)
    reader = ChatStream(context)
    chunks = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Terms."}}]},
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": CHAT_USAGE},
    ]
    for chunk in chunks:
        reader.feed("message", json.dumps(chunk))
    reader.feed("message", "[DONE]")
    assert reader.finish().usage == CACHED


RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "gpt-4o-2024-08-06",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Terms.", "annotations": []}],
        }
    ],
    "usage": {
        "input_tokens": 2006,
        "input_tokens_details": {"cached_tokens": 1920},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2306,
    },
}


def responses_context() -> ResponsesContext:
    return ResponsesContext(ToolCatalog(()), IdMap(strict=False), None, origin="openai-responses")


def test_responses_cached_tokens_unstreamed() -> None:
    assert parse_response(json.dumps(RESPONSE), responses_context()).usage == CACHED


def test_responses_cached_tokens_streamed_in_the_completed_event() -> None:
    reader = ResponsesStream(responses_context())
    events = [
        {"type": "response.created", "response": {**RESPONSE, "status": "in_progress", "output": [], "usage": None}},
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "Terms.",
        },
        {"type": "response.completed", "response": RESPONSE},
    ]
    for event in events:
        reader.feed(event["type"], json.dumps(event))
    assert reader.finish().usage == CACHED


# -- a failed call the provider billed ---------------------------------------------------------------------------


async def test_an_empty_answer_that_reported_usage_is_logged_priced(openai_server: FakeOpenAI) -> None:
    # No text and no tool calls: the call fails (after its retries), but the provider billed it.
    openai_server.add(*[Answer("", input_tokens=2006, output_tokens=0, cached_tokens=1920)] * 3)
    model = make_openai(openai_server, max_retries=2, retry_base_delay=0.0)
    conversation = llm.model(model).request("Anything?").prompt_conversation()
    try:
        with pytest.raises(ModelError) as info:
            async for _ in conversation:
                pass
    finally:
        await model.aclose()
    assert info.value.type == "empty_response"
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    # gpt-4o-mini: 86 input tokens at $0.15 and 1920 cached at $0.075 per million
    cost = Cost(usd=Decimal("0.0001569"), prices=prices_version())
    assert failure.usage == Usage(input_tokens=2006, cache_read_tokens=1920, cost=cost)
    assert conversation.cost == cost  # the retried attempts are not in the log: only the last is counted


async def test_a_cut_anthropic_stream_is_logged_with_the_usage_it_reported(anthropic_server: FakeAnthropic) -> None:
    # message_start said what the request cost before the connection broke: the failure keeps it, priced.
    anthropic_server.add(Cut(Answer("A long answer that never finishes, " * 4, input_tokens=1000), after=4))
    model = make_anthropic(anthropic_server, max_retries=0)
    conversation = llm.model(model).request("Anything?").prompt_conversation()
    try:
        with pytest.raises(ModelError):
            async for _ in conversation:
                pass
    finally:
        await model.aclose()
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None and failure.content
    # claude-haiku-4-5: 1000 input tokens at $1 and the 1 output token message_start counts at $5 per million
    cost = Cost(usd=Decimal("0.001005"), prices=prices_version())
    assert failure.usage == Usage(input_tokens=1000, output_tokens=1, cost=cost)
    assert conversation.cost == cost
