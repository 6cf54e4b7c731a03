"""OpenRouter's ``reasoning_details``, over real HTTP against a fake that answers as OpenRouter does with Claude and
Gemini 3 behind it, and refuses, with the upstream provider's own error in OpenRouter's envelope, a tool loop that
does not send the entries back (see `tests.providers.servers.openrouter`).

Each entry is kept in the log as one `Reasoning` piece (``provider="openrouter"``), is sent back exactly as it came,
in order, also after the log was saved and read back, and goes to no other server; the thinking reaches
``on_reasoning`` once, though OpenRouter sends it twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from threadline import (
    AssistantMessage,
    CapabilityError,
    Conversation,
    MessageList,
    ModelError,
    Reasoning,
    llm,
    open_store,
    user,
)
from threadline.conversation.config import ConversationConfig
from threadline.models.anthropic._request import build_request as anthropic_request
from threadline.models.base import ModelRequest
from threadline.models.openai import OpenAIModel
from threadline.models.openai._responses_request import build_request as responses_request
from threadline.models.profiles import anthropic_profile, openai_profile, server_for_url

from .conftest import SECRET, make_openai
from .servers import Cut, Status, ToolUse
from .servers.openrouter import CLAUDE, GEMINI, FakeOpenRouter, Reasoned, call_signature, sign

SONNET = "anthropic/claude-sonnet-4.5"
GEMINI_3 = "google/gemini-3-pro-preview"
THOUGHT = "The user wants the weather; the tool gives it."
PARIS = ToolUse("get_weather", '{"city": "Paris"}', id="call_paris")


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


@pytest.fixture
def router() -> Iterator[FakeOpenRouter]:
    with FakeOpenRouter() as fake:
        yield fake  # type: ignore[misc]


def make(router: FakeOpenRouter, model: str, **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("server", "openrouter")
    return make_openai(router, model, **kwargs)  # type: ignore[arg-type]


async def run(conversation: Conversation, **options: Any) -> list[object]:
    return [message async for message in conversation.run(**options)]


def assistant_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [message for message in body["messages"] if message["role"] == "assistant"]


def claude_entry(text: str = THOUGHT) -> dict[str, Any]:
    return {"type": "reasoning.text", "text": text, "signature": sign(text), "format": CLAUDE, "index": 0}


@pytest.mark.parametrize("stream", [True, False])
async def test_a_claude_tool_loop_with_thinking_sends_the_signed_entry_back(
    router: FakeOpenRouter, stream: bool
) -> None:
    model = make(router, SONNET)
    router.add(Reasoned(tool_calls=(PARIS,), reasoning=THOUGHT), Reasoned("22 C in Paris.", reasoning="Done."))
    thoughts: list[str] = []
    conversation = llm.model(model).tools(get_weather).request("Weather in Paris?").prompt_conversation(stream=stream)
    try:
        await run(conversation, on_reasoning=thoughts.append)
    finally:
        await model.aclose()
    assert conversation.text == "22 C in Paris."
    log = conversation.messages
    log.validate()
    calling = log[1]
    assert isinstance(calling, AssistantMessage)
    [piece] = calling.reasoning
    assert (piece.text, piece.signature, piece.provider) == (THOUGHT, sign(THOUGHT), "openrouter")
    # The second request carries the entry exactly as the server gave it (whole, though it was streamed in pieces).
    [sent] = assistant_turns(router.bodies[1])
    assert sent["reasoning_details"] == [claude_entry()]
    assert "reasoning_content" not in sent and "reasoning" not in sent
    # OpenRouter sends the thinking twice (as text and as entries); it is shown once.
    assert "".join(thoughts) == THOUGHT + "\n\nDone."
    if stream:
        assert len(thoughts) > 2


async def test_entries_that_come_after_their_plain_text_are_kept_and_the_thinking_is_shown_once(
    router: FakeOpenRouter,
) -> None:
    # The plain text streams first, the signed entry comes whole after it: the display stays with the text it
    # already showed, the log keeps the entry, and the next request sends it back.
    model = make(router, SONNET)
    router.add(
        Reasoned(tool_calls=(PARIS,), reasoning=THOUGHT, late_details=True),
        Reasoned("22 C in Paris.", reasoning="Done.", late_details=True),
    )
    thoughts: list[str] = []
    conversation = llm.model(model).tools(get_weather).request("Weather in Paris?").prompt_conversation()
    try:
        await run(conversation, on_reasoning=thoughts.append)
    finally:
        await model.aclose()
    assert "".join(thoughts) == THOUGHT + "\n\nDone."
    log = conversation.messages
    log.validate()
    [piece] = log[1].reasoning
    assert (piece.text, piece.signature, piece.provider) == (THOUGHT, sign(THOUGHT), "openrouter")
    [sent] = assistant_turns(router.bodies[1])
    assert sent["reasoning_details"] == [claude_entry()]


async def test_without_the_entries_the_loop_is_refused_with_the_upstream_error_shown(router: FakeOpenRouter) -> None:
    # The same server under an address not known to be OpenRouter, with no server option: the entries are kept but
    # not sent, and Claude's refusal comes through OpenRouter's generic message.
    model = make_openai(router, SONNET)  # type: ignore[arg-type]
    assert model.profile.reasoning_details == "drop"
    router.add(Reasoned(tool_calls=(PARIS,), reasoning=THOUGHT), Reasoned("unused"))
    conversation = llm.model(model).tools(get_weather).request("Weather in Paris?").prompt_conversation()
    with pytest.raises(ModelError) as caught:
        await run(conversation)
    await model.aclose()
    message = str(caught.value)
    assert caught.value.status == 400
    assert "Provider returned error (Anthropic: messages.1.content.0.type: Expected `thinking` or" in message
    assert "reasoning_details" not in assistant_turns(router.bodies[1])[0]
    assert conversation.messages[1].reasoning[0].signature == sign(THOUGHT)  # kept all the same


@pytest.mark.parametrize("stream", [True, False])
async def test_a_gemini_tool_loop_sends_each_thought_signature_back_with_its_call(
    router: FakeOpenRouter, stream: bool
) -> None:
    model = make(router, GEMINI_3)
    rome = ToolUse("get_weather", '{"city": "Rome"}', id="call_rome")
    router.add(
        Reasoned(tool_calls=(PARIS, rome), reasoning="Two cities."),
        Reasoned(tool_calls=(ToolUse("get_weather", '{"city": "Rome"}', id="call_rome_again"),), reasoning="Again."),
        Reasoned("Both 22 C.", reasoning="Both answered."),
    )
    conversation = llm.model(model).tools(get_weather).request("Paris and Rome?").prompt_conversation(stream=stream)
    try:
        await run(conversation)
    finally:
        await model.aclose()
    assert conversation.text == "Both 22 C."
    conversation.messages.validate()
    first = conversation.messages[1]
    assert isinstance(first, AssistantMessage)
    text_piece, signed = first.reasoning
    assert text_piece.text == "Two cities." and text_piece.signature is None
    assert (signed.text, signed.id) == ("", "call_paris")
    expected = [
        {"type": "reasoning.text", "text": "Two cities.", "format": GEMINI, "index": 0},
        {
            "type": "reasoning.encrypted",
            "data": call_signature("get_weather", PARIS.arguments),
            "id": "call_paris",
            "format": GEMINI,
            "index": 1,
        },
    ]
    assert assistant_turns(router.bodies[1])[0]["reasoning_details"] == expected
    assert assistant_turns(router.bodies[2])[0]["reasoning_details"] == expected  # every later request too


async def test_the_entries_survive_a_save_and_reload_in_the_middle_of_a_tool_loop(
    router: FakeOpenRouter, tmp_path: Path
) -> None:
    model = make(router, SONNET)
    router.add(Reasoned(tool_calls=(PARIS,), reasoning=THOUGHT, redacted=True), Reasoned("22 C.", reasoning="Done."))
    conversation = Conversation(config=ConversationConfig(model=model, tools=[get_weather]))
    conversation.add(user("Weather in Paris?"))
    await run(conversation)
    stopped = conversation.messages[:3]  # a process stopped right after the tool result was stored
    first_request = router.bodies[1]["messages"]
    [calling] = [message for message in first_request if message.get("tool_calls")]
    redacted = router.details(Reasoned(reasoning=THOUGHT, redacted=True), SONNET, [])[1]
    assert calling["reasoning_details"] == [claude_entry(), redacted]

    # Read back from JSON, and from SQLite, the loop goes on with the very same request.
    reloaded = MessageList.from_json(stopped.to_json())
    assert reloaded == stopped and reloaded.to_json() == stopped.to_json()
    store = open_store(tmp_path / "routed.db")
    try:
        stored = Conversation(messages=reloaded, store=store)
        again = Conversation.load(stored.id, store, ConversationConfig(model=model, tools=[get_weather]))
        router.add(Reasoned("22 C, still.", reasoning="Again."))
        await run(again)
        assert again.text == "22 C, still."
    finally:
        store.close()
        await model.aclose()
    assert router.bodies[2]["messages"] == first_request


async def test_a_stream_cut_in_the_thinking_is_logged_with_the_failure_and_never_sent_back(
    router: FakeOpenRouter,
) -> None:
    model = make(router, SONNET, max_retries=0)
    router.add(Cut(Reasoned(tool_calls=(PARIS,), reasoning=THOUGHT), after=4))
    conversation = llm.model(model).tools(get_weather).request("Weather in Paris?").prompt_conversation(stream=True)
    with pytest.raises(ModelError):
        await run(conversation)
    failed = conversation.messages[-1]
    assert isinstance(failed, AssistantMessage) and failed.error is not None
    [partial] = failed.reasoning
    assert THOUGHT.startswith(partial.text) and partial.text and partial.signature is None
    conversation.messages.validate()

    router.add(Reasoned("22 C.", reasoning="Fine."))
    await run(conversation.continuation.request("Again?").prompt_conversation())
    await model.aclose()
    assert "reasoning_details" not in str(router.bodies[-1]["messages"])


def test_openrouter_and_vercel_addresses_send_the_entries_and_an_explicit_server_wins() -> None:
    assert server_for_url("https://openrouter.ai/api/v1") == "openrouter"
    assert server_for_url("https://ai-gateway.vercel.sh/v1") == "vercel-ai-gateway"
    assert server_for_url("https://api.openai.com/v1") is None
    assert server_for_url("http://[::1") is None  # not a URL at all
    routed = OpenAIModel(SONNET, base_url="https://openrouter.ai/api/v1", api_key=SECRET)
    assert routed.profile.reasoning_details == "send"
    named = OpenAIModel(SONNET, base_url="https://openrouter.ai/api/v1", api_key=SECRET, server="openai")
    assert named.profile.reasoning_details == "drop"
    assert OpenAIModel("gpt-4o", api_key=SECRET).profile.reasoning_details == "drop"


def routed_log() -> MessageList:
    return MessageList(
        [
            user("Weather in Paris?"),
            AssistantMessage(
                content="Checking.",
                reasoning=[
                    Reasoning(
                        text=THOUGHT,
                        signature=sign(THOUGHT),
                        redacted='{"type":"reasoning.text","signature":"' + sign(THOUGHT) + '","format":"x","index":0}',
                        provider="openrouter",
                    )
                ],
            ),
            user("Thanks."),
        ]
    )


async def test_the_entries_go_to_no_other_server(router: FakeOpenRouter) -> None:
    log = routed_log()
    # Another OpenAI-compatible server, even one that takes thinking back: nothing of the entries.
    model = make_openai(router, "deepseek-reasoner")  # type: ignore[arg-type]
    router.reply("Fine.")
    await run(Conversation(messages=log).continuation.model(model).prompt_conversation())
    await model.aclose()
    assert sign(THOUGHT) not in str(router.bodies[0]) and THOUGHT not in str(router.bodies[0])
    # Anthropic's and the Responses API's translations leave them out too (they are another family's).
    request = ModelRequest(messages=list(log))
    anthropic_body = anthropic_request(
        request, "claude-sonnet-4-5", anthropic_profile("claude-sonnet-4-5"), stream=False
    )[0]
    responses_body = responses_request(request, "o4-mini", openai_profile("o4-mini"), stream=False)[0]
    for body in (anthropic_body, responses_body):
        assert THOUGHT not in str(body) and sign(THOUGHT) not in str(body)


async def test_odd_entries_are_kept_as_they_came_or_left_out_and_the_log_still_validates(
    router: FakeOpenRouter,
) -> None:
    model = make(router, SONNET)
    odd = [
        "not an entry",
        {"type": 7, "text": "a type that is not a string"},
        {"type": "reasoning.future", "payload": {"nested": [1, 2]}, "index": 0},
        {"type": "reasoning.text", "text": "naïve 🙂 text", "signature": "c2ln", "format": CLAUDE, "index": 1},
        {"type": "reasoning.summary", "summary": None, "index": 2},
    ]
    body = {
        "id": "gen-1",
        "object": "chat.completion",
        "model": SONNET,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Hi.", "reasoning": "plain", "reasoning_details": odd},
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    router.add(Status(200, body))
    conversation = llm.model(model).request("Hi").prompt_conversation(stream=False)
    await run(conversation)
    log = conversation.messages
    log.validate()
    assert MessageList.from_json(log.to_json()) == log
    pieces = log[1].reasoning
    assert [piece.provider for piece in pieces] == ["openrouter"] * 3
    assert pieces[1].text == "naïve 🙂 text" and pieces[1].signature == "c2ln"

    router.reply("OK.")
    await run(conversation.continuation.request("And?").prompt_conversation(stream=False))
    await model.aclose()
    assert assistant_turns(router.bodies[1])[0]["reasoning_details"] == [
        {"type": "reasoning.future", "payload": {"nested": [1, 2]}, "index": 0},
        {"type": "reasoning.text", "text": "naïve 🙂 text", "signature": "c2ln", "format": CLAUDE, "index": 1},
        {"type": "reasoning.summary", "summary": None, "index": 2},
    ]


@pytest.mark.parametrize(
    "redacted",
    # Not JSON; JSON nested far too deeply to read (before: the request could not be built, RecursionError).
    ["{not json", "[" * 3_000 + "]" * 3_000],
    ids=["not-json", "too-deep"],
)
async def test_a_piece_edited_by_hand_is_not_sent_and_nothing_else_is_lost(
    router: FakeOpenRouter, redacted: str
) -> None:
    good = routed_log()[1]
    assert isinstance(good, AssistantMessage)
    broken = Reasoning(text="edited", redacted=redacted, provider="openrouter")
    log = MessageList([user("Weather in Paris?"), msgspec.structs.replace(good, reasoning=[broken, *good.reasoning])])
    model = make(router, SONNET)
    router.reply("Fine.")
    await run(Conversation(messages=log).continuation.model(model).request("Thanks.").prompt_conversation())
    await model.aclose()
    [sent] = assistant_turns(router.bodies[0])
    assert sent["reasoning_details"] == [
        {"type": "reasoning.text", "signature": sign(THOUGHT), "format": "x", "index": 0, "text": THOUGHT}
    ]


@pytest.mark.parametrize("status", [400, 200])
async def test_the_upstream_error_is_shown_and_never_the_key(router: FakeOpenRouter, status: int) -> None:
    model = make(router, SONNET, max_retries=0)
    raw = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": f"bad key {SECRET}"}})
    error = {"message": "Provider returned error", "code": 400, "metadata": {"raw": raw, "provider_name": "Anthropic"}}
    router.add(Status(status, {"error": error}))
    with pytest.raises(ModelError) as caught:
        await run(llm.model(model).request("Hi").prompt_conversation(stream=False))
    await model.aclose()
    assert "Provider returned error (Anthropic: bad key" in str(caught.value)
    assert SECRET not in str(caught.value)


async def test_an_upstream_body_that_is_not_json_is_shown_as_it_is(router: FakeOpenRouter) -> None:
    model = make(router, SONNET, max_retries=0)
    metadata = {"raw": "upstream timed out\n", "provider_name": "Anthropic"}
    router.add(Status(400, {"error": {"message": "Provider returned error", "code": 400, "metadata": metadata}}))
    with pytest.raises(ModelError, match=r"Provider returned error \(Anthropic: upstream timed out\)"):
        await run(llm.model(model).request("Hi").prompt_conversation())
    await model.aclose()


async def test_an_upstream_body_nested_too_deeply_to_read_is_shown_as_text(router: FakeOpenRouter) -> None:
    model = make(router, SONNET, max_retries=0)
    metadata = {"raw": "[" * 3_000 + "]" * 3_000, "provider_name": "Anthropic"}
    router.add(Status(400, {"error": {"message": "Provider returned error", "code": 400, "metadata": metadata}}))
    with pytest.raises(ModelError, match=r"Provider returned error \(Anthropic: \[\[\[") as caught:
        await run(llm.model(model).request("Hi").prompt_conversation())
    await model.aclose()
    assert caught.value.type == "bad_request"


async def test_an_answer_with_plain_thinking_only_keeps_it_as_plain_thinking(router: FakeOpenRouter) -> None:
    # A model behind OpenRouter that sends ``reasoning`` and an empty ``reasoning_details`` (DeepSeek, say).
    message = {"role": "assistant", "content": "Hi.", "reasoning": "Say hi.", "reasoning_details": []}
    choice = {"index": 0, "finish_reason": "stop", "message": message}
    router.add(Status(200, {"id": "gen-2", "object": "chat.completion", "model": SONNET, "choices": [choice]}))
    model = make(router, SONNET)
    conversation = llm.model(model).request("Hi").prompt_conversation(stream=False)
    await run(conversation)
    router.reply("Bye.")
    await run(conversation.continuation.request("Bye").prompt_conversation(stream=False))
    await model.aclose()
    assert conversation.messages[1].reasoning == [Reasoning(text="Say hi.", provider="openai")]
    assert "reasoning_details" not in assistant_turns(router.bodies[1])[0]


async def test_reasoning_settings_go_as_openrouters_reasoning_object_for_any_model_behind_it(
    router: FakeOpenRouter,
) -> None:
    # GPT-5.4 refuses reasoning_effort with tools on OpenAI's own Chat Completions; OpenRouter takes both.
    model = make(router, "openai/gpt-5.4")
    router.add(Reasoned("Effort.", reasoning="x"), Reasoned("Budget.", reasoning="y"))
    builder = llm.model(model).tools(get_weather)
    assert await builder.request("Hi").reasoning(effort="high").prompt_async() == "Effort."
    assert await builder.request("Hi").reasoning(budget_tokens=3_000).prompt_async() == "Budget."
    await model.aclose()
    first, second = router.bodies
    assert first["reasoning"] == {"effort": "high"} and "reasoning_effort" not in first
    assert second["reasoning"] == {"max_tokens": 3_000} and "reasoning_effort" not in second
    # Elsewhere that name is a CapabilityError before any request, as OpenAI would refuse it.
    direct = make_openai(router, "gpt-5.4")  # type: ignore[arg-type]
    with pytest.raises(CapabilityError, match=r"openai-responses:gpt-5\.4"):
        await llm.model(direct).tools(get_weather).request("Hi").reasoning(effort="high").prompt_async()
    await direct.aclose()
    assert len(router.requests) == 2
