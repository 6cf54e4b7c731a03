"""Claude's extended thinking end to end: the public API against a fake Anthropic server on 127.0.0.1 that signs
every thinking block and refuses, with the API's own 400 texts, a continuation that does not carry its blocks back
exactly (`servers.anthropic_thinking`). Tool loops streamed and not, interleaved thinking, redacted thinking, a log
saved and reloaded mid-loop (JSON, SQLite), logs crossing to the embedded model and from another provider, and the
answers that cannot be logged whole."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from threadline import (
    AssistantMessage,
    CapabilityError,
    Conversation,
    LLMError,
    MessageList,
    ModelError,
    Reasoning,
    ToolMessage,
    UserError,
    UserMessage,
    llm,
    open_store,
)
from threadline.conversation.config import ConversationConfig
from threadline.models.anthropic import AnthropicModel
from threadline.models.base import ReasoningSettings
from threadline.models.local import LocalModel
from threadline.models.openai import OpenAIModel

from .conftest import SECRET, make_anthropic
from .servers import Answer, Cut, FakeOpenAI, ToolUse
from .servers.anthropic_thinking import FakeAnthropicThinking, Raw, Redact, Think, Thought, sign

PARIS_THOUGHT = "The user wants the weather in Paris. I have get_weather; I should call it with Paris."
ROME_THOUGHT = "Paris is done; now Rome, with the same tool."
BUDGET = ReasoningSettings(budget_tokens=4_000)


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


@pytest.fixture
def server() -> Iterator[FakeAnthropicThinking]:
    with FakeAnthropicThinking() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
async def claude(server: FakeAnthropicThinking) -> AsyncIterator[AnthropicModel]:
    model = make_anthropic(server, "claude-sonnet-4-5")  # type: ignore[arg-type]
    yield model
    await model.aclose()


def config(model: Any, reasoning: ReasoningSettings | None = BUDGET, **kwargs: Any) -> ConversationConfig:
    return ConversationConfig(model=model, tools=[get_weather], reasoning=reasoning, **kwargs)


async def run(conversation: Conversation, **overrides: Any) -> list[Any]:
    return [message async for message in conversation.run(**overrides)]


def call_paris() -> Thought:
    return Thought(blocks=(Think(PARIS_THOUGHT), "Let me check.", ToolUse("get_weather", '{"city": "Paris"}')))


def thinking_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] in ("thinking", "redacted_thinking")
    ]


# -- a tool loop ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_tool_loop_with_thinking_sends_the_signed_block_back(
    server: FakeAnthropicThinking, claude: AnthropicModel, stream: bool
) -> None:
    server.add(call_paris(), Thought(blocks=("It is 22 C and sunny in Paris.",), thinking_tokens=40))
    seen: list[str] = []
    conversation = llm.model(claude).tools(get_weather).reasoning(budget_tokens=4_000).request("Weather in Paris?")
    conv = conversation.prompt_conversation(stream=stream)
    call, result, answer = await run(conv, on_reasoning=seen.append)
    assert isinstance(call, AssistantMessage) and isinstance(result, ToolMessage)
    assert call.reasoning == [Reasoning(text=PARIS_THOUGHT, signature=sign(PARIS_THOUGHT), provider="anthropic")]
    assert call.content == "Let me check." and call.tool_calls[0].arguments == {"city": "Paris"}
    assert answer.content == "It is 22 C and sunny in Paris."
    assert answer.usage is not None and answer.usage.reasoning_tokens == 40
    assert "".join(seen) == PARIS_THOUGHT  # on_reasoning saw the thinking, streamed or not
    assert server.count == 2  # the second request passed the server's checks: no 400
    first, second = server.bodies
    assert first["thinking"] == second["thinking"] == {"type": "enabled", "budget_tokens": 4_000}
    assert first["max_tokens"] > 4_000 and "temperature" not in first
    assert second["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": PARIS_THOUGHT,
        "signature": sign(PARIS_THOUGHT),
    }
    conv.messages.validate()


async def test_the_fake_refuses_a_continuation_without_its_block_or_with_an_altered_one(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    # What every adapter sent before thinking was kept, and what a tampered log sends: the API's own 400s.
    server.add(call_paris())
    conv = llm.model(claude).tools(get_weather).reasoning(budget_tokens=4_000).request("Weather?").prompt_conversation()
    with pytest.raises(ModelError):
        await run(conv)  # the script has no second answer: a 500 after the first round
    sent = server.bodies[-1]
    url = f"{server.base_url}/v1/messages"
    headers = {"x-api-key": SECRET, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient() as client:
        without = {**sent, "messages": [dict(m) for m in sent["messages"]]}
        without["messages"][1] = {**without["messages"][1], "content": without["messages"][1]["content"][1:]}
        refused = (await client.post(url, json=without, headers=headers)).json()["error"]["message"]
        assert refused.startswith("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found")
        assert "To avoid this requirement, disable `thinking`" in refused
    # A log whose thinking was altered goes out as it is, and the server says so.
    tampered = conv.messages.copy()
    call = tampered[1]
    assert isinstance(call, AssistantMessage)
    call.reasoning[0].text = PARIS_THOUGHT + " (edited)"
    retry = Conversation(messages=tampered[:3], config=config(claude))
    with pytest.raises(ModelError, match=r"messages\.1\.content\.0: Invalid `signature` in `thinking` block"):
        await run(retry)


@pytest.mark.parametrize("stream", [True, False])
async def test_interleaved_thinking_goes_back_in_its_place(
    server: FakeAnthropicThinking, claude: AnthropicModel, stream: bool
) -> None:
    server.add(
        Thought(
            blocks=(
                Think(PARIS_THOUGHT),
                ToolUse("get_weather", '{"city": "Paris"}'),
                Think(ROME_THOUGHT),
                ToolUse("get_weather", '{"city": "Rome"}'),
            )
        ),
        Thought(blocks=(Think("Both are known."), "Both are at 22 C.")),
    )
    conv = Conversation(config=config(claude, stream=stream))
    conv.add(UserMessage(content="Paris and Rome?"))
    call, *_, answer = await run(conv)
    assert [(piece.text, piece.position) for piece in call.reasoning] == [(PARIS_THOUGHT, None), (ROME_THOUGHT, 2)]
    assert answer.content == "Both are at 22 C." and server.count == 2  # the server found its blocks in place
    sent = server.bodies[1]["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["thinking", "tool_use", "thinking", "tool_use"]
    assert sent[2]["thinking"] == ROME_THOUGHT


@pytest.mark.parametrize("stream", [True, False])
async def test_text_blocks_a_call_or_thinking_separates_stay_apart_and_side_by_side_ones_join(
    server: FakeAnthropicThinking, claude: AnthropicModel, stream: bool
) -> None:
    """Before: "Checking Paris.Now Rome." (the words of two text blocks run together)."""
    server.add(
        Thought(
            blocks=(
                Think(PARIS_THOUGHT),
                "Checking Paris.",
                ToolUse("get_weather", '{"city": "Paris"}'),
                "Now Rome.",
                Think(ROME_THOUGHT),
                ToolUse("get_weather", '{"city": "Rome"}'),
            )
        ),
        Thought(blocks=("Both are ", "at 22 C.")),  # a text split in two blocks (as where its citations change)
    )
    shown: list[str] = []
    conv = Conversation(config=config(claude, stream=stream))
    conv.add(UserMessage(content="Paris and Rome?"))
    call, *_, answer = [message async for message in conv.run(on_text=shown.append)]
    assert call.content == "Checking Paris.\n\nNow Rome."
    assert answer.content == "Both are at 22 C."
    assert "".join(shown) == call.content + answer.content  # what was shown is what the log keeps
    assert server.count == 2  # the thinking still went back in its place
    conv.messages.validate()


@pytest.mark.parametrize("stream", [True, False])
async def test_redacted_thinking_round_trips(
    server: FakeAnthropicThinking, claude: AnthropicModel, stream: bool
) -> None:
    server.add(
        Thought(blocks=(Think(PARIS_THOUGHT), Redact(), ToolUse("get_weather", '{"city": "Paris"}'))),
        Thought(blocks=("22 C.",)),
    )
    conv = Conversation(config=config(claude, stream=stream))
    conv.add(UserMessage(content="Weather?"))
    call, _, _ = await run(conv)
    redacted = call.reasoning[1]
    assert redacted.redacted and redacted.text == "" and redacted.signature is None
    assert redacted.provider == "anthropic"
    assert server.count == 2
    assert server.bodies[1]["messages"][1]["content"][1] == {"type": "redacted_thinking", "data": redacted.redacted}
    assert server.answered[0][1]["data"] == redacted.redacted


async def test_a_later_round_without_thinking_keeps_thinking_on_for_the_loop(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    # Without interleaved thinking Claude thinks once, at the start of the turn; its later calls come bare.
    server.add(
        call_paris(),
        Thought(blocks=(ToolUse("get_weather", '{"city": "Rome"}'),)),
        Thought(blocks=("Paris and Rome: 22 C.",)),
    )
    conv = Conversation(config=config(claude))
    conv.add(UserMessage(content="Paris, then Rome?"))
    *_, answer = await run(conv)
    assert answer.content == "Paris and Rome: 22 C." and server.count == 3
    third = server.bodies[2]
    assert third["thinking"]["budget_tokens"] == 4_000  # the turn starts with its thinking block: still on
    assert [block["type"] for block in third["messages"][1]["content"]] == ["thinking", "text", "tool_use"]
    assert [block["type"] for block in third["messages"][3]["content"]] == ["tool_use"]


async def test_a_failure_and_its_retry_merged_into_one_turn_still_pass_the_apis_checks(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    server.add(call_paris(), Thought(blocks=("22 C.",)))
    done = Conversation(config=config(claude))
    done.add(UserMessage(content="Weather in Paris?"))
    await run(done)
    question, call, result = done.messages[:3]
    failed = AssistantMessage(
        content="I will",
        error=LLMError(type="overloaded", message="Overloaded", retryable=True),
        reasoning=[Reasoning(text="The user wa", provider="anthropic")],
    )
    server.add(Thought(blocks=("22 C in Paris.",)))
    conv = Conversation(messages=[question, failed, call, result], config=config(claude))
    (answer,) = await run(conv)
    assert answer.content == "22 C in Paris."
    sent = server.bodies[2]
    assert [block["type"] for block in sent["messages"][1]["content"]] == ["thinking", "text", "text", "tool_use"]
    assert sent["messages"][1]["content"][1]["text"].endswith("[LLM_ERROR type=overloaded message=Overloaded]")
    assert "thinking" in sent


# -- saved and reloaded mid-loop ------------------------------------------------------------------------------------


async def _stopped_after_the_tool_result(server: FakeAnthropicThinking, claude: AnthropicModel) -> MessageList:
    """The log of a process stopped right after the tool result was stored, and the request it would have sent."""
    server.add(call_paris(), Thought(blocks=("22 C in Paris.",)))
    conv = Conversation(config=config(claude))
    conv.add(UserMessage(content="Weather in Paris?"))
    await run(conv)
    return conv.messages[:3]


async def test_a_log_saved_as_json_mid_loop_continues_with_the_same_request(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    stopped = await _stopped_after_the_tool_result(server, claude)
    reloaded = MessageList.from_json(stopped.to_json())
    assert reloaded == stopped
    server.add(Thought(blocks=("22 C in Paris, still.",)))
    conv = Conversation(messages=reloaded, config=config(claude))
    (answer,) = await run(conv)
    assert answer.content == "22 C in Paris, still."
    assert server.bodies[2]["messages"] == server.bodies[1]["messages"]  # replayed identically, thinking included
    assert server.bodies[2]["thinking"] == {"type": "enabled", "budget_tokens": 4_000}


async def test_a_log_stored_in_sqlite_mid_loop_continues_with_the_same_request(
    server: FakeAnthropicThinking, claude: AnthropicModel, tmp_path: Path
) -> None:
    stopped = await _stopped_after_the_tool_result(server, claude)
    store = open_store(tmp_path / "thinking.db")
    try:
        first = Conversation(messages=stopped, store=store)
        again = Conversation.load(first.id, store, config(claude))
        assert again.messages == stopped
        server.add(Thought(blocks=("22 C in Paris, still.",)))
        (answer,) = await run(again)
        assert answer.content == "22 C in Paris, still."
        assert server.bodies[2]["messages"] == server.bodies[1]["messages"]
        assert server.bodies[2]["messages"][1]["content"][0]["signature"] == sign(PARIS_THOUGHT)
        assert Conversation.load(first.id, store).messages[-1] == answer
    finally:
        store.close()


# -- crossing providers ---------------------------------------------------------------------------------------------


class WatchedLocal(LocalModel):
    """The embedded model, keeping the text of every prompt it renders."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def render(self, request: Any) -> Any:
        prompt = super().render(request)
        self.prompts.append("".join(segment.text for segment in prompt.segments))
        return prompt


async def test_a_claude_log_with_thinking_continues_on_the_embedded_model(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    server.add(call_paris(), Thought(blocks=(Think("Answer plainly."), "It is 22 C and sunny in Paris.")))
    conv = Conversation(config=config(claude))
    conv.add(UserMessage(content="Weather in Paris?"))
    await run(conv)
    local = WatchedLocal()
    on_local = Conversation(messages=conv.messages.copy(), config=ConversationConfig(model=local, max_tokens=8))
    on_local.add(UserMessage(content="Thanks!"))
    (answer,) = await run(on_local, settings=on_local.host.plan().settings)
    assert isinstance(answer, AssistantMessage) and answer.error is None and answer.model == "local:smollm2"
    (prompt,) = local.prompts
    assert "22 C and sunny in Paris" in prompt  # the tool result and the answer are there
    assert PARIS_THOUGHT not in prompt and "Answer plainly." not in prompt  # the thinking is not
    assert sign(PARIS_THOUGHT) not in prompt
    on_local.messages.validate()


async def test_a_tool_loop_begun_on_another_provider_continues_on_claude_with_thinking(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    with FakeOpenAI() as openai_server:
        openai_server.add(Answer(tool_calls=(ToolUse("get_weather", '{"city": "Paris"}', id="call_1"),)))
        openai = OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, api_key=SECRET, retry_base_delay=0.01)
        begun = Conversation(config=config(openai, reasoning=None))
        begun.add(UserMessage(content="Weather in Paris?"))
        try:
            with pytest.raises(ModelError):
                await run(begun)  # the second request finds no answer: the log ends mid-loop
        finally:
            await openai.aclose()
    stopped = begun.messages[:3]
    assert isinstance(stopped[2], ToolMessage)
    server.add(Thought(blocks=("It is 22 C in Paris.",)), Thought(blocks=(Think("Rome now."), "Rome: 22 C.")))
    conv = Conversation(messages=stopped, config=config(claude))
    (answer,) = await run(conv)
    assert answer.content == "It is 22 C in Paris."
    continued = server.bodies[0]
    # Anthropic: a tool-use continuation whose turn has no thinking block must leave thinking off.
    assert "thinking" not in continued
    assert thinking_blocks(continued) == []
    conv.add(UserMessage(content="And Rome?"))
    (rome,) = await run(conv)
    assert rome.reasoning[0].text == "Rome now." and server.bodies[1]["thinking"]["budget_tokens"] == 4_000
    conv.messages.validate()


# -- answers that cannot be logged whole ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("blocks", "fragment"),
    [
        ((Think("unsigned", signature=None), "hi"), "a thinking block without a signature"),
        ((Think("odd", signature=42), "hi"), "got `int`"),
        ((Raw({"type": "web_search_tool_result", "tool_use_id": "s", "content": []}), "hi"), "web_search_tool_result"),
    ],
)
async def test_a_bad_answer_is_a_logged_failure_and_the_log_stays_valid(
    server: FakeAnthropicThinking, claude: AnthropicModel, stream: bool, blocks: tuple[Any, ...], fragment: str
) -> None:
    server.add(Thought(blocks=blocks))
    conv = Conversation(config=config(claude, stream=stream))
    conv.add(UserMessage(content="q"))
    with pytest.raises(ModelError, match=re.escape(fragment)) as caught:
        await run(conv)
    assert caught.value.type == "bad_response"
    failure = conv.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "bad_response" and fragment in failure.error.message
    assert all(piece.signature is None for piece in failure.reasoning)  # whatever was shown is kept unsigned
    conv.messages.validate()
    MessageList.from_json(conv.messages.to_json()).validate()
    assert server.count == 1  # refused at once: a retry cannot fix it


async def test_a_stream_cut_between_thinking_and_its_signature_is_never_replayed_as_signed(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    # message_start, content_block_start, ping, the thinking deltas: the signature_delta never comes.
    server.add(Cut(call_paris(), after=3 + -(-len(PARIS_THOUGHT) // 9)))  # the fake sends 9 characters a delta
    conv = Conversation(config=config(claude))
    conv.add(UserMessage(content="Weather in Paris?"))
    shown: list[str] = []
    with pytest.raises(ModelError) as caught:
        await run(conv, on_reasoning=shown.append)
    assert caught.value.type == "connection" and server.count == 1  # thinking was shown: not retried
    assert "".join(shown) == PARIS_THOUGHT
    failure = conv.messages[-1]
    assert isinstance(failure, AssistantMessage)
    assert failure.reasoning == [Reasoning(text=PARIS_THOUGHT, provider="anthropic")]  # kept, unsigned
    conv.messages.validate()
    server.add(Thought(blocks=(Think("Fresh start."), "22 C in Paris.")))
    conv.add(UserMessage(content="continue"))
    (answer,) = await run(conv)
    assert answer.content == "22 C in Paris."
    assert thinking_blocks(server.bodies[1]) == []  # the unsigned thinking stayed in the log only
    assert "[LLM_ERROR type=connection" in server.bodies[1]["messages"][1]["content"][0]["text"]


async def test_a_stream_cut_in_thinking_nobody_is_shown_is_retried_and_the_answer_is_whole(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    """Before, any thinking streamed stopped the retries, shown or not: with thinking on, nearly every broken
    stream (an overload, a proxy's idle timeout during a long think) failed the turn although nothing had been
    shown and a retry would have worked."""
    server.add(Cut(call_paris(), after=3 + -(-len(PARIS_THOUGHT) // 9)), call_paris(), Answer("22 C in Paris."))
    conv = Conversation(config=config(claude))
    conv.add(UserMessage(content="Weather in Paris?"))
    call, _result, answer = await run(conv)
    assert server.count == 3  # the cut attempt, its retry, the answer after the tool
    assert [m.error for m in conv.messages if isinstance(m, AssistantMessage)] == [None, None]
    assert call.reasoning == [Reasoning(text=PARIS_THOUGHT, signature=sign(PARIS_THOUGHT), provider="anthropic")]
    assert answer.content == "22 C in Paris."
    assert thinking_blocks(server.bodies[2]) == [
        {"type": "thinking", "thinking": PARIS_THOUGHT, "signature": sign(PARIS_THOUGHT)}
    ]


@pytest.mark.parametrize("stream", [True, False])
async def test_structured_output_with_a_thinking_budget_is_claudes_json_outputs(
    server: FakeAnthropicThinking, claude: AnthropicModel, stream: bool
) -> None:
    """A thinking budget refuses every forced tool, so structured output goes as JSON outputs (Claude 4.5 on):
    the thinking is kept in the log and the JSON text is the answer."""

    class City(BaseModel):
        name: str
        population: int

    server.add(Thought(blocks=(Think("France's capital is Paris."), '{"name": "Paris", "population": 2100000}')))
    conversation = llm.model(claude).reasoning(budget_tokens=2_048).request("Capital of France?")
    city = await conversation.prompt_for_type_async(City, stream=stream)
    assert city == City(name="Paris", population=2_100_000)
    body = server.bodies[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2_048}
    assert "tools" not in body and "tool_choice" not in body
    assert body["output_config"]["format"]["schema"]["additionalProperties"] is False


async def test_a_forced_tool_or_structured_output_with_thinking_is_refused_before_any_request(
    server: FakeAnthropicThinking, claude: AnthropicModel
) -> None:
    class City(BaseModel):
        name: str

    thinking = llm.model(claude).tools(get_weather).reasoning(effort="low")
    with pytest.raises(CapabilityError, match="only tool_choice auto or none"):
        await thinking.tool_choice("required").request("Weather?").prompt_async()
    # A schema Claude's JSON outputs cannot take (free keys) needs the forced final-result tool.
    with pytest.raises(CapabilityError, match="structured output through the final-result tool"):
        await thinking.request("Population by city?").prompt_for_type_async(dict[str, int])
    with pytest.raises(UserError, match="at least 1,024 tokens"):
        await llm.model(claude).reasoning(budget_tokens=100).request("q").prompt_async()
    assert server.count == 0
