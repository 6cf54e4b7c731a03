"""What Anthropic's wire format has beyond text and tool calls, over real HTTP against the fake Messages API:
citations in an answer (streamed as ``citations_delta``), file attachments as ``document`` blocks, text the API
refuses (empty or whitespace only), server tools passed as the ``anthropic_tools`` extra and their answers, and the
spend-limit ``rate_limit_error``. The shapes are those of Anthropic's API reference and error docs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from threadline import llm
from threadline.errors import ModelError
from threadline.messages import AssistantMessage
from threadline.models.anthropic import AnthropicModel

from .conftest import make_anthropic
from .servers import Answer, Events, FakeAnthropic, Status

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
# A citation of a plain-text document, as the citations guide shows it.
CITATION = {
    "type": "char_location",
    "cited_text": "The grass is green. ",
    "document_index": 0,
    "document_title": "Example Document",
    "start_char_index": 0,
    "end_char_index": 20,
}
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


@pytest.fixture
async def claude(anthropic_server: FakeAnthropic) -> AsyncIterator[AnthropicModel]:
    model = make_anthropic(anthropic_server)
    yield model
    await model.aclose()


def event(kind: str, **data: Any) -> tuple[str, str]:
    return kind, json.dumps({"type": kind, **data})


def message_start() -> tuple[str, str]:
    message = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-haiku-4-5",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    return event("message_start", message=message)


def message_end(stop: str = "end_turn") -> list[tuple[str, str]]:
    return [
        event("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": 15}),
        event("message_stop"),
    ]


def message_body(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 15},
    }


def user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [block for message in body["messages"] if message["role"] == "user" for block in message["content"]]


# -- citations ------------------------------------------------------------------------------------------------------


async def test_a_streamed_citation_keeps_the_answer(anthropic_server: FakeAnthropic, claude: AnthropicModel) -> None:
    """Before, a ``citations_delta`` failed the call after the text before it was shown, and the answer was lost."""
    anthropic_server.add(
        Events(
            (
                message_start(),
                event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
                event("content_block_delta", index=0, delta={"type": "text_delta", "text": "According to it, "}),
                event("content_block_stop", index=0),
                event("content_block_start", index=1, content_block={"type": "text", "text": "", "citations": []}),
                event("content_block_delta", index=1, delta={"type": "citations_delta", "citation": CITATION}),
                event("content_block_delta", index=1, delta={"type": "text_delta", "text": "the grass is green"}),
                event("content_block_stop", index=1),
                event("content_block_start", index=2, content_block={"type": "text", "text": ""}),
                event("content_block_delta", index=2, delta={"type": "text_delta", "text": "."}),
                event("content_block_stop", index=2),
                *message_end(),
            )
        )
    )
    conv = llm.model(claude).request("What colour is the grass?").prompt_conversation()
    (answer,) = [message async for message in conv.run()]
    assert isinstance(answer, AssistantMessage) and answer.error is None
    assert answer.content == "According to it, the grass is green."
    assert anthropic_server.count == 1
    conv.messages.validate()


async def test_an_unstreamed_answer_with_citations_keeps_its_text(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    content = [
        {"type": "text", "text": "According to it, "},
        {"type": "text", "text": "the grass is green", "citations": [CITATION]},
        {"type": "text", "text": "."},
    ]
    anthropic_server.add(Status(200, message_body(content)))
    answer = await llm.model(claude).request("What colour is the grass?").prompt_async(stream=False)
    assert answer == "According to it, the grass is green."


# -- server tools ---------------------------------------------------------------------------------------------------


async def test_server_tools_go_beside_the_function_tools(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    """Before, the ``anthropic_tools`` extra replaced the function tools in the request."""
    anthropic_server.reply("Sunny.")
    builder = llm.model(claude).tools(get_weather).request("Weather in Paris?")
    await builder.prompt_async(anthropic_tools=[WEB_SEARCH])
    tools = anthropic_server.bodies[0]["tools"]
    assert [tool["name"] for tool in tools] == ["get_weather", "web_search"]
    assert tools[1] == WEB_SEARCH


async def test_server_tools_alone_are_sent(anthropic_server: FakeAnthropic, claude: AnthropicModel) -> None:
    anthropic_server.reply("Sunny.")
    await llm.model(claude).request("Weather in Paris?").prompt_async(anthropic_tools=[WEB_SEARCH])
    assert anthropic_server.bodies[0]["tools"] == [WEB_SEARCH]


_SEARCH_BLOCKS = [
    {"type": "text", "text": "I'll search for that."},
    {"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "name": "web_search", "input": {}},
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://example.org/weather",
                "title": "Paris weather",
                "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
                "page_age": None,
            }
        ],
    },
]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_answer_with_server_tool_blocks_says_they_are_not_supported(
    anthropic_server: FakeAnthropic, claude: AnthropicModel, stream: bool
) -> None:
    if stream:
        events = [message_start()]
        events += [
            event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            event("content_block_delta", index=0, delta={"type": "text_delta", "text": "I'll search for that."}),
            event("content_block_stop", index=0),
            event("content_block_start", index=1, content_block=_SEARCH_BLOCKS[1]),
        ]
        anthropic_server.add(Events(tuple(events)))
    else:
        anthropic_server.add(Status(200, message_body(_SEARCH_BLOCKS)))
    conv = (
        llm.model(claude).request("Weather in Paris?").prompt_conversation(stream=stream, anthropic_tools=[WEB_SEARCH])
    )
    with pytest.raises(ModelError) as caught:
        [message async for message in conv.run()]
    assert "server tools (web search, web fetch, code execution…) are not supported by threadline's log yet" in str(
        caught.value
    )
    assert "'server_tool_use', block 1" in str(caught.value)
    assert anthropic_server.count == 1
    conv.messages.validate()


# -- the spend limit ------------------------------------------------------------------------------------------------

# Anthropic's answer when the organization's monthly spend limit is reached: a rate_limit_error, without retry-after.
SPEND_LIMIT = {
    "type": "error",
    "error": {
        "type": "rate_limit_error",
        "message": "You have reached your specified API usage limits. You will regain access on 2026-12-01 at "
        "00:00 UTC.",
        "details": {"error_code": "enforced_spend_limit_reached"},
    },
}


async def test_a_spend_limit_429_is_not_retried(anthropic_server: FakeAnthropic, claude: AnthropicModel) -> None:
    anthropic_server.add(Status(429, SPEND_LIMIT), Answer("never reached"))
    with pytest.raises(ModelError) as caught:
        await llm.model(claude).request("Hi").prompt_async(max_retries=3)
    assert anthropic_server.count == 1
    assert (caught.value.type, caught.value.retryable) == ("quota", False)
    assert "You will regain access on 2026-12-01" in str(caught.value)


async def test_a_spend_limit_error_event_is_not_retried(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    """Before, the error event was taken for a rate limit: retried, and logged retryable."""
    anthropic_server.add(Events((message_start(), event("error", error=SPEND_LIMIT["error"]))), Answer("never"))
    with pytest.raises(ModelError) as caught:
        await llm.model(claude).request("Hi").prompt_async(max_retries=3)
    assert anthropic_server.count == 1
    assert (caught.value.type, caught.value.retryable) == ("quota", False)
    assert "spend limit is used up" in str(caught.value) and "Retrying cannot help" in str(caught.value)


async def test_an_ordinary_rate_limit_error_event_is_still_retried(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    error = {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}
    anthropic_server.add(Events((message_start(), event("error", error=error))), Answer("Hello."))
    assert await llm.model(claude).request("Hi").prompt_async() == "Hello."
    assert anthropic_server.count == 2
