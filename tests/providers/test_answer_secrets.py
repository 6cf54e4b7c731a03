"""The adapter's own key, echoed by a server in what the model answers, reaches neither the log, the screen
(``on_text`` / ``on_reasoning``), a tool, nor the command line's output: in the answer's text (streamed, where the key
is split over several deltas, and not), in tool-call arguments, and in the thinking (``reasoning_content`` of a
compatible server, Claude's thinking, a Responses reasoning summary); raw or base64-encoded. Streaming stays live:
only text that could be the start of a form of the key is held back. OpenAI Chat Completions, Anthropic Messages and
the Responses API, over real HTTP against the fake servers."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from threadline import AssistantMessage, Conversation, ModelError, llm, open_store
from threadline.messages import UserMessage
from threadline.models.base import ModelRequest, ModelSettings, TextDelta

from .conftest import make_anthropic, make_openai, make_responses
from .key_forms import readable
from .servers import Answer, Cut, FakeAnthropic, FakeOpenAI, FakeResponses, FakeServer, Stall, ToolUse
from .servers import Thought as ResponsesThought
from .servers.anthropic_thinking import FakeAnthropicThinking, Think
from .servers.anthropic_thinking import Thought as ClaudeThought
from .servers.compatible import FakeCompatible, Thinking

KEY = 'hunt3r"SECRET/+=x9Q'  # not shaped like an API key: only masking the configured key can hide it
BEARER = base64.b64encode(f"Bearer {KEY}".encode()).decode()
ECHO = f"Your key is {KEY}; as sent, {BEARER}. Anything else?"
MASKED = "Your key is ***; as sent, ***. Anything else?"

PLACES = {
    "openai": ["text", "tool arguments", "reasoning"],
    "anthropic": ["text", "tool arguments", "reasoning"],
    "responses": ["text", "tool arguments", "reasoning"],
}
CASES = [(provider, place) for provider, places in PLACES.items() for place in places]


def server_for(provider: str, place: str) -> FakeServer:
    if provider == "openai":
        return FakeCompatible() if place == "reasoning" else FakeOpenAI()
    if provider == "anthropic":
        return FakeAnthropicThinking() if place == "reasoning" else FakeAnthropic()
    return FakeResponses()


def model_for(provider: str, server: FakeServer, place: str) -> Any:
    if provider == "openai":
        name = "DeepSeek-R1-Distill-Qwen-1.5B" if place == "reasoning" else "gpt-4o-mini"
        return make_openai(server, name, api_key=KEY)  # type: ignore[arg-type]
    if provider == "anthropic":
        return make_anthropic(server, "claude-sonnet-4-5", api_key=KEY)  # type: ignore[arg-type]
    return make_responses(server, "o4-mini", api_key=KEY)  # type: ignore[arg-type]


def answers(provider: str, place: str) -> list[Any]:
    """What the server answers: the echo in one place, then (after a tool call) a plain answer."""
    if place == "text":
        return [Answer(ECHO)]
    if place == "tool arguments":
        return [Answer(tool_calls=(ToolUse("remember", json.dumps({"text": ECHO})),)), Answer("Noted.")]
    if provider == "openai":
        return [Thinking("Fine.", reasoning=ECHO)]
    if provider == "anthropic":
        return [ClaudeThought(blocks=(Think(ECHO), "Fine."))]
    return [ResponsesThought("Fine.", summaries=(ECHO,))]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(("provider", "place"), CASES)
async def test_a_key_the_server_echoes_in_the_answer_is_masked_everywhere(
    provider: str, place: str, stream: bool
) -> None:
    """Before, the key reached the log, the callbacks and the tool as the server wrote it."""
    received: list[str] = []

    def remember(text: str) -> str:
        """Remember a text."""
        received.append(text)
        return "remembered"

    server = server_for(provider, place)
    with server:
        model = model_for(provider, server, place)
        server.add(*answers(provider, place))
        builder = llm.model(model).tools(remember).request("What is my key?")
        if place == "reasoning" and provider != "openai":
            builder = builder.reasoning(effort="low")
        conversation = builder.prompt_conversation(stream=stream)
        shown: list[str] = []
        thoughts: list[str] = []
        try:
            async for _ in conversation.run(on_text=shown.append, on_reasoning=thoughts.append):
                pass
        finally:
            await model.aclose()
    log = conversation.messages
    log.validate()
    assert readable(log.to_json(), KEY) == []
    assert readable("".join(shown), KEY) == [] and readable("".join(thoughts), KEY) == []
    assert readable(" ".join(received), KEY) == []
    replies = [m for m in log if isinstance(m, AssistantMessage)]
    if place == "text":
        assert replies[-1].content == MASKED  # only the key is masked, the rest is kept
        assert "".join(shown) == MASKED  # the screen showed what the log holds
        if stream:
            assert len(shown) > 5  # still streamed in pieces, not held back to the end
    elif place == "tool arguments":
        assert replies[0].tool_calls[0].arguments == {"text": MASKED}
        assert received == [MASKED]
    else:
        assert [piece.text for piece in replies[0].reasoning] == [MASKED]
        assert "".join(thoughts) == MASKED
        if stream:
            assert len(thoughts) > 5


async def test_thinking_masked_for_the_key_is_not_sent_back_and_the_conversation_goes_on() -> None:
    """Claude signs its thinking: masked, its text no longer matches the signature, which the API refuses ("Invalid
    `signature` in `thinking` block") on every later request. The masked piece is kept without its signature, so it
    is logged but never sent back, and the conversation goes on."""
    with FakeAnthropicThinking() as server:
        model = make_anthropic(server, "claude-sonnet-4-5", api_key=KEY)  # type: ignore[arg-type]
        server.add(ClaudeThought(blocks=(Think(ECHO), "Fine.")), ClaudeThought(blocks=(Think("Easy."), "Sure.")))
        conversation = llm.model(model).reasoning(effort="low").request("What is my key?").prompt_conversation()
        try:
            async for _ in conversation:
                pass
            assert await conversation.continuation.request("Thanks!").prompt_async() == "Sure."
        finally:
            await model.aclose()
    assert server.count == 2
    first = conversation.messages[1]
    assert isinstance(first, AssistantMessage) and first.reasoning[0].text == MASKED
    assert first.reasoning[0].signature is None
    assert readable(json.dumps(server.bodies[1]), KEY) == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_key_cut_off_by_a_broken_stream_is_masked_in_the_partial_answer(provider: str) -> None:
    """The stream breaks 20 characters into the key: what was held back of it goes to the failure's log masked,
    not as the first 20 characters of the key."""
    key = "sk-test-SECRET0123456789abcdef"
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    before_text = 1 if provider == "openai" else 3  # the events before the first piece of text
    with server:
        model: Any = make_openai(server, api_key=key) if provider == "openai" else make_anthropic(server, api_key=key)  # type: ignore[arg-type]
        # Pieces of 4 characters: "Your", " key", " is ", then five pieces of the key.
        server.add(Cut(Answer("Your key is " + key + ", keep it safe."), after=before_text + 8))
        conversation = llm.model(model).request("hi").prompt_conversation(max_retries=0)
        shown: list[str] = []
        try:
            with pytest.raises(ModelError) as info:
                async for _ in conversation.run(on_text=shown.append):
                    pass
        finally:
            await model.aclose()
    assert info.value.partial == "".join(shown) == "Your key is ***"
    failed = conversation.messages[-1]
    assert isinstance(failed, AssistantMessage) and failed.content == "Your key is ***"
    assert key[8:20] not in conversation.messages.to_json()


async def stream_until_stalled(model: Any, request: ModelRequest, expected: str) -> str:
    """The text a model's stream shows while the server stalls mid-answer (read until it shows ``expected`` or, at
    the latest, the read timeout), then the stream is closed."""
    shown = ""
    events: AsyncIterator[Any] = model.stream(request)
    try:
        async for event in events:
            if isinstance(event, TextDelta):
                shown += event.text
                if shown == expected:
                    break
    except Exception:  # the stall ended in a timeout: what was shown by then is the answer
        pass
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    return shown


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_streaming_stays_live_holding_back_only_what_could_start_the_key(provider: str) -> None:
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    request = ModelRequest(messages=[UserMessage("hi")], settings=ModelSettings(timeout=5.0, max_retries=0))
    with server:
        model = model_for(provider, server, "text")
        # Pieces of 4 characters: "Once upon a time, my key is hunt" is shown but for "hunt", which may begin the key.
        first = 2 if provider == "openai" else 4  # the events before the first text (role chunk; start, block, ping)
        text = "Once upon a time, my key is " + KEY
        server.add(Stall(Answer(text), after=first + 8, seconds=30), Stall(Answer(STORY), after=first + 8, seconds=30))
        try:
            held = await stream_until_stalled(model, request, "Once upon a time, my key is ")
            live = await stream_until_stalled(model, request, STORY[:32])
        finally:
            await model.aclose()
    assert held == "Once upon a time, my key is "
    assert live == STORY[:32]  # everything the server sent, as it came


STORY = "Once upon a time a fox found a lantern in the snow, and it glowed."


# -- the command line -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_cli_neither_prints_nor_stores_a_key_echoed_in_the_answer(provider: str, tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    with server:
        server.add(Answer(ECHO), Answer(ECHO))
        prefix = "OPENAI" if provider == "openai" else "ANTHROPIC"
        env = {**os.environ, f"{prefix}_BASE_URL": server.base_url, f"{prefix}_API_KEY": KEY, "COLUMNS": "200"}  # type: ignore[attr-defined]
        model = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-haiku-4-5"
        command = [sys.executable, "-m", "threadline", "prompt", "What is my key?", "-m", model, "--store", store_url]
        runs = [
            subprocess.run(
                [*command, *options],
                capture_output=True,
                text=True,
                cwd=tmp_path,
                env=env,
                timeout=300,
            )
            for options in ([], ["-c"])
        ]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert "Your key is ***" in done.stdout
        assert readable(done.stdout + done.stderr, KEY) == []
    with open_store(store_url) as store:
        for info in store.list_conversations():
            assert readable(store.load(info.id).to_json(), KEY) == []


async def test_an_answer_is_left_as_it_is_when_no_key_is_configured() -> None:
    # A local server without a key: nothing is masked, whatever the answer holds.
    with FakeOpenAI() as server:
        model = make_openai(server, api_key="")  # type: ignore[arg-type]
        server.add(Answer(ECHO))
        try:
            assert await Conversation().continuation.model(model).request("hi").prompt_async() == ECHO
        finally:
            await model.aclose()
