"""What Anthropic's wire format has beyond text and tool calls, over real HTTP against the fake Messages API:
citations in an answer (streamed as ``citations_delta``), file attachments as ``document`` blocks, text the API
refuses (empty or whitespace only), server tools passed as the ``anthropic_tools`` extra and their answers, and the
spend-limit ``rate_limit_error``. The shapes are those of Anthropic's API reference and error docs."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from threadline import Attachment, Conversation, llm
from threadline.conversation.config import ConversationConfig
from threadline.errors import ModelError, UserError
from threadline.messages import AssistantMessage, ToolMessage, UserMessage
from threadline.models.anthropic import AnthropicModel
from threadline.models.base import ReasoningSettings

from .conftest import make_anthropic
from .servers import Answer, Events, FakeAnthropic, Status, ToolUse
from .servers.anthropic_thinking import FakeAnthropicThinking, Think, Thought, sign

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


# -- file attachments -----------------------------------------------------------------------------------------------


async def test_a_pdf_goes_as_a_base64_document_before_the_question(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    """Before, a file attachment was silently left out of the request."""
    pdf = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF"
    anthropic_server.reply("A one-page report.")
    report = Attachment("file", data=pdf, media_type="application/pdf", name="report.pdf")
    await llm.model(claude).request("Summarise the report.", attachments=[report]).prompt_async()
    (document, question) = user_blocks(anthropic_server.bodies[0])
    assert document == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(pdf).decode()},
        "title": "report.pdf",
    }
    assert question == {"type": "text", "text": "Summarise the report."}


@pytest.mark.parametrize(
    ("media_type", "data", "text"),
    [
        ("text/plain", b"The grass is green.", "The grass is green."),
        ("text/markdown", "# Caf\u00e9\n\n- green".encode(), "# Caf\u00e9\n\n- green"),
        ("text/csv", b"city,temp\nParis,22\n", "city,temp\nParis,22\n"),
        ("text/plain; charset=latin-1", "Caf\u00e9".encode("latin-1"), "Caf\u00e9"),
    ],
)
async def test_a_text_file_goes_as_a_plain_text_document(
    anthropic_server: FakeAnthropic, claude: AnthropicModel, media_type: str, data: bytes, text: str
) -> None:
    anthropic_server.reply("Read it.")
    notes = Attachment("file", data=data, media_type=media_type)
    await llm.model(claude).request("Read this.", attachments=[notes]).prompt_async()
    assert anthropic_server.count == 1  # the fake takes only the documented source shapes
    document = user_blocks(anthropic_server.bodies[0])[0]
    assert document == {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}


@pytest.mark.parametrize(
    ("attachment", "words"),
    [
        (Attachment("file", data=b"PK\x03\x04", media_type="application/zip", name="a.zip"), "application/zip"),
        (Attachment("file", data=b"\x00\x01", name="blob"), "has media type None"),
        (Attachment("file", media_type="application/pdf", name="gone.pdf"), "'gone.pdf' has no data"),
        (Attachment("file", data=b"\xff\xfe\xfa", media_type="text/plain", name="bad.txt"), "is not text in"),
        (Attachment("file", data=b"", media_type="application/pdf", name="empty.pdf"), "is empty"),
    ],
)
async def test_a_file_anthropic_cannot_take_is_refused_before_anything_is_sent(
    anthropic_server: FakeAnthropic, claude: AnthropicModel, attachment: Attachment, words: str
) -> None:
    with pytest.raises(UserError, match="file attachment") as caught:
        await llm.model(claude).request("Read this.", attachments=[attachment]).prompt_async()
    assert words in str(caught.value)
    assert anthropic_server.count == 0


# -- text the API refuses -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_claudes_whitespace_before_a_tool_call_is_not_sent_back(
    anthropic_server: FakeAnthropic, claude: AnthropicModel, stream: bool
) -> None:
    """Before, the "\\n\\n" went back as a text block and the API refused the next request (HTTP 400)."""
    anthropic_server.add(
        Answer("\n\n", tool_calls=(ToolUse("get_weather", '{"city": "Paris"}', id="toolu_01A"),)),
        Answer("22 C in Paris."),
    )
    conv = llm.model(claude).tools(get_weather).request("Weather in Paris?").prompt_conversation(stream=stream)
    call, result, answer = [message async for message in conv.run()]
    assert isinstance(call, AssistantMessage) and isinstance(result, ToolMessage)
    assert call.content == "\n\n"  # the log keeps what Claude said
    assert answer.content == "22 C in Paris."
    assert anthropic_server.count == 2  # the fake refuses whitespace-only text, as the API does
    assert anthropic_server.bodies[1]["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}
    ]


async def test_whitespace_between_thinking_and_a_tool_call_is_not_sent_back() -> None:
    with FakeAnthropicThinking() as server:
        model = make_anthropic(server, "claude-sonnet-4-5")  # type: ignore[arg-type]
        try:
            thought = "The user wants Paris."
            server.add(
                Thought(blocks=(Think(thought), "\n\n", ToolUse("get_weather", '{"city": "Paris"}', id="toolu_01B"))),
                Thought(blocks=("22 C in Paris.",)),
            )
            config = ConversationConfig(
                model=model, tools=[get_weather], reasoning=ReasoningSettings(budget_tokens=2_000)
            )
            conv = Conversation(config=config)
            conv.add(UserMessage(content="Weather in Paris?"))
            messages = [message async for message in conv.run()]
        finally:
            await model.aclose()
    assert messages[-1].content == "22 C in Paris."
    assert [block["type"] for block in server.bodies[1]["messages"][1]["content"]] == ["thinking", "tool_use"]
    assert server.bodies[1]["messages"][1]["content"][0]["signature"] == sign(thought)


@pytest.mark.parametrize("text", ["", " \n\t"])
async def test_a_blank_message_is_refused_before_anything_is_sent(
    anthropic_server: FakeAnthropic, claude: AnthropicModel, text: str
) -> None:
    with pytest.raises(UserError, match="the message to send is empty"):
        await llm.model(claude).request(text).prompt_async()
    assert anthropic_server.count == 0


async def test_a_blank_message_with_an_image_sends_the_image_only(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    anthropic_server.reply("A black square.")
    image = Attachment.image(PNG, media_type="image/png")
    assert await llm.model(claude).request("  ", attachments=[image]).prompt_async() == "A black square."
    assert [block["type"] for block in user_blocks(anthropic_server.bodies[0])] == ["image"]


async def test_a_blank_message_earlier_in_the_log_is_left_out(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    anthropic_server.reply("Yes.")
    conv = Conversation(config=ConversationConfig(model=claude))
    conv.add(UserMessage(content="Hello"))
    conv.add(AssistantMessage(content="Hi! How can I help?"))
    conv.add(UserMessage(content="\n"))  # e.g. from a provider that took it
    conv.add(AssistantMessage(content="Did you mean to say something?"))
    conv.add(UserMessage(content="Is the grass green?"))
    (answer,) = [message async for message in conv.run()]
    assert answer.content == "Yes."
    sent = anthropic_server.bodies[0]["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "user"]
    assert [block["text"] for block in sent[1]["content"]] == ["Hi! How can I help?", "Did you mean to say something?"]


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


async def test_a_failed_tool_result_with_no_text_is_sent_saying_it_failed(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    """A log with an error result and no text (imported, or an MCP server's bare isError): before, it went out as
    empty content, and the API refuses that with 400 "content cannot be empty if `is_error` is true" on every
    later request of the conversation."""
    from threadline import ToolCall
    from threadline.models.anthropic._request import EMPTY_ERROR_RESULT

    conv = Conversation(config=ConversationConfig(model=claude))
    conv.add(UserMessage(content="Weather in Paris?"))
    conv.add(AssistantMessage(tool_calls=[ToolCall(id="toolu_01A", name="get_weather", arguments={"city": "Paris"})]))
    conv.add(ToolMessage(tool_call_id="toolu_01A", tool_name="get_weather", content="", is_error=True))
    anthropic_server.add(Answer("The weather service failed."))
    [answer] = [message async for message in conv.run()]
    assert answer.content == "The weather service failed."
    [block] = anthropic_server.bodies[0]["messages"][2]["content"]
    assert block == {"type": "tool_result", "tool_use_id": "toolu_01A", "content": EMPTY_ERROR_RESULT, "is_error": True}
    assert conv.messages[2].content == ""  # the log keeps what it had
