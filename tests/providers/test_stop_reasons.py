"""Why a model stopped, told to the user: an answer cut at the output token limit or stopped by a refusal says so
(the turn's ``stop_reason``), and one that stopped before any text or tool call fails at once with the reason
(a retry would end the same way and bill again), keeping what the model thought. Also: text a stream reader held
back when the stream ended is still shown, and a stream cut during thinking nobody watches is retried."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from threadline import AssistantMessage, Conversation, Reasoning, UserMessage, llm
from threadline.conversation.config import ConversationConfig
from threadline.errors import ModelError
from threadline.models.openai import OpenAIModel

from .conftest import make_anthropic, make_openai
from .servers import Answer, Events, FakeAnthropic, FakeOpenAI, Status
from .servers.compatible import FakeCompatible, Thinking

THOUGHT = "The user wants a long essay. First, outline the history; then the causes; then"


@pytest.fixture
async def compatible() -> AsyncIterator[tuple[FakeCompatible, OpenAIModel]]:
    with FakeCompatible() as server:
        model = make_openai(server, "deepseek-chat")  # type: ignore[arg-type]
        yield server, model  # type: ignore[misc]
        await model.aclose()


def _completion(content: str, finish: str, reasoning: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "deepseek-chat",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 256,
            "total_tokens": 268,
            "completion_tokens_details": {"reasoning_tokens": 256},
        },
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-chat", "choices": [choice]}
    return None, json.dumps(body)


def _failure(conversation: Conversation) -> AssistantMessage:
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    conversation.messages.validate()
    return failure


@pytest.mark.parametrize("stream", [False, True])
async def test_thinking_that_uses_up_max_tokens_fails_at_once_saying_so_and_keeps_the_thinking(
    compatible: tuple[FakeCompatible, OpenAIModel], stream: bool
) -> None:
    """Before: "returned an empty answer", retried 3 times (the thinking billed 3 times), the thinking not logged."""
    server, model = compatible
    if stream:
        pieces = [THOUGHT[i : i + 20] for i in range(0, len(THOUGHT), 20)]
        events = [_chunk({"role": "assistant", "content": ""})]
        events += [_chunk({"reasoning_content": piece}) for piece in pieces]
        events += [_chunk({}, "length"), (None, "[DONE]")]
        server.add(Events(tuple(events)))
    else:
        server.add(Status(200, body=_completion("", "length", THOUGHT)))
    conversation = Conversation(config=ConversationConfig(model=model, stream=stream, max_retries=3))
    conversation.add(UserMessage(content="Write a long essay."))
    with pytest.raises(ModelError) as raised:
        [_ async for _ in conversation.run()]
    assert server.count == 1
    error = raised.value
    assert (error.type, error.retryable) == ("length", False)
    assert "output token limit before answering (its reasoning used it up): raise max_tokens" in str(error)
    failure = _failure(conversation)
    assert failure.error is not None and failure.error.type == "length"
    assert failure.reasoning == [Reasoning(text=THOUGHT, provider="openai")]


async def test_an_answer_cut_at_max_tokens_says_so_in_the_turns_stop_reason(
    openai_server: FakeOpenAI, openai_model: OpenAIModel
) -> None:
    openai_server.add(Status(200, body=_completion("The history of Rome begins", "length")))
    conversation = llm.model(openai_model).request("Write a long essay.").prompt_conversation()
    [_ async for _ in conversation.run()]
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "length"
    assert conversation.messages[-1].content == "The history of Rome begins"


_REFUSAL = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [],
    "stop_reason": "refusal",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 0},
}


async def test_a_refusal_with_no_text_fails_at_once_as_refused() -> None:
    """Before: "returned an empty answer", retried 3 times."""
    with FakeAnthropic() as server:
        model = make_anthropic(server)  # type: ignore[arg-type]
        server.add(Status(200, body=_REFUSAL), Answer("never reached"))
        with pytest.raises(ModelError) as raised:
            await llm.model(model).request("Help me with something.").prompt_async(stream=False, max_retries=3)
        await model.aclose()
    assert server.count == 1
    assert (raised.value.type, raised.value.retryable) == ("refused", False)
    assert "refused to answer" in str(raised.value)


async def test_a_refusal_with_text_says_so_in_the_turns_stop_reason() -> None:
    with FakeAnthropic() as server:
        model = make_anthropic(server)  # type: ignore[arg-type]
        body = {**_REFUSAL, "content": [{"type": "text", "text": "I can't help with that."}]}
        server.add(Status(200, body=body))
        conversation = Conversation(config=ConversationConfig(model=model, stream=False))
        conversation.add(UserMessage(content="Help me with something."))
        [_ async for _ in conversation.run()]
        await model.aclose()
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "content_filter"


async def test_text_a_reader_held_back_when_the_stream_ended_is_still_shown(
    compatible: tuple[FakeCompatible, OpenAIModel],
) -> None:
    """A chunk that carries the end of the thinking and text: the reader holds its text back until the next text
    chunk; before, when the stream ended there, that text never reached on_text (nor the CLI), only the log."""
    server, model = compatible
    events = (
        _chunk({"role": "assistant", "content": "Part one. "}),
        _chunk({"reasoning_content": "and so", "content": "Part two."}),
        _chunk({}, "stop"),
        (None, "[DONE]"),
    )
    server.add(Events(events))
    shown: list[str] = []
    conversation = llm.model(model).request("Two parts, please.").prompt_conversation()
    [_ async for _ in conversation.run(on_text=shown.append)]
    assert conversation.messages[-1].content == "Part one. Part two."
    assert "".join(shown) == "Part one. Part two."


async def test_a_stream_cut_in_thinking_nobody_watches_is_retried(
    compatible: tuple[FakeCompatible, OpenAIModel],
) -> None:
    """Before, a connection cut after some thinking (a proxy's idle timeout during a long think) was never retried,
    although nothing had been shown."""
    server, model = compatible
    from .servers import Cut

    server.add(Cut(Thinking("Paris is in France.", reasoning=THOUGHT), after=4), Thinking("Paris.", reasoning=THOUGHT))
    answer = await llm.model(model).request("Capital of France?").prompt_async(max_retries=2)
    assert answer == "Paris." and server.count == 2


def _anthropic_event(kind: str, **data: Any) -> tuple[str, str]:
    return kind, json.dumps({"type": kind, **data})


async def test_a_tool_call_cut_off_at_max_tokens_is_not_made_and_its_result_says_why() -> None:
    """Before, the result told the model its JSON was invalid and to call again with a JSON object: it sent the
    same long call again, was cut off again, and so on until the round limit."""
    written: list[str] = []

    def write_file(path: str, content: str) -> str:
        """Write a file."""
        written.append(path)
        return "written"

    start = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-haiku-4-5",
        "stop_reason": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    use = {"type": "tool_use", "id": "toolu_01A", "name": "write_file", "input": {}}
    cut = '{"path": "essay.txt", "content": "Chapter one. It was a long'
    events = (
        _anthropic_event("message_start", message=start),
        _anthropic_event("content_block_start", index=0, content_block=use),
        _anthropic_event("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": cut}),
        _anthropic_event("content_block_stop", index=0),
        _anthropic_event("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 4096}),
        _anthropic_event("message_stop"),
    )
    with FakeAnthropic() as server:
        model = make_anthropic(server)  # type: ignore[arg-type]
        server.add(Events(events), Answer("I will write it in parts."))
        conversation = llm.model(model).tools(write_file).request("Write the essay.").prompt_conversation()
        messages = [message async for message in conversation.run()]
        await model.aclose()
    _call, result, answer = messages
    assert written == []  # the cut call was not made
    assert result.is_error and "output token limit while writing its arguments" in result.content
    assert f"{len(cut):,} characters written" in result.content and "invalid" not in result.content.lower()
    assert answer.content == "I will write it in parts."
    conversation.messages.validate()
