"""Thinking a server leaves inside the answer's text as ``<think>…</think>`` (vLLM without a reasoning parser,
llama.cpp's ``--reasoning-format none``, LM Studio) is kept as the answer's reasoning, not shown or logged as its
text, streamed or not; a tag split across stream chunks is still found; ``think_tags=keep`` leaves the text as it
came, and a server that sends its thinking apart is left alone."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadline import Reasoning, llm
from threadline.models.http._think_tags import ThinkTags, split_think_tags
from threadline.models.openai import OpenAIModel

from .conftest import make_openai
from .servers import Answer, FakeOpenAI
from .servers.compatible import FakeCompatible, Thinking

QWEN = "<think>\nThe user wants the capital of France. That is Paris.\n</think>\n\nParis."


@pytest.fixture
async def qwen(openai_server: FakeOpenAI) -> AsyncIterator[OpenAIModel]:
    model = make_openai(openai_server, "Qwen/Qwen3-8B")
    yield model
    await model.aclose()


@pytest.mark.parametrize("stream", [True, False])
async def test_a_think_block_opening_the_answer_is_its_reasoning(
    openai_server: FakeOpenAI, qwen: OpenAIModel, stream: bool
) -> None:
    """Before, the thinking was shown and logged as the answer, and sent back as if the model had said it."""
    openai_server.add(Answer(QWEN), Answer("Lyon is second."))
    shown: list[str] = []
    thought: list[str] = []
    conversation = llm.model(qwen).request("Capital of France?").prompt_conversation(stream=stream)
    [answer] = [m async for m in conversation.run(on_text=shown.append, on_reasoning=thought.append)]
    assert answer.content == "Paris." and "".join(shown) == "Paris."
    thinking = "\nThe user wants the capital of France. That is Paris.\n"
    assert answer.reasoning == [Reasoning(text=thinking, provider="openai")]
    assert "".join(thought) == thinking
    await conversation.continuation.request("And the second city?").prompt_async()
    replayed = openai_server.bodies[1]["messages"][2]
    assert replayed == {"role": "assistant", "content": "Paris."}  # the thinking is not sent back as text


@given(st.text(alphabet="<>/thinkab \n", max_size=40), st.lists(st.integers(1, 7), min_size=1, max_size=30))
def test_any_split_of_a_text_into_pieces_gives_what_the_whole_text_gives(text: str, sizes: list[int]) -> None:
    whole = split_think_tags(text)
    tags = ThinkTags()
    thought, answer, at = [], [], 0
    for size in sizes * (len(text) // max(1, sum(sizes)) + 1):
        if at >= len(text):
            break
        piece_thought, piece_answer = tags.feed(text[at : at + size])
        thought.append(piece_thought)
        answer.append(piece_answer)
        at += size
    end_thought, end_answer = tags.end()
    thought.append(end_thought)
    answer.append(end_answer)
    if whole[0] is None:
        assert "".join(thought) == "" and "".join(answer) == text
    else:
        assert ("".join(thought), "".join(answer)) == whole


def test_what_is_and_is_not_a_think_block() -> None:
    assert split_think_tags("Paris.") == (None, "Paris.")
    assert split_think_tags("The tag <think> in the middle stays.") == (None, "The tag <think> in the middle stays.")
    assert split_think_tags("<thinking>no</thinking>") == (None, "<thinking>no</thinking>")
    assert split_think_tags("  \n<think>a</think>b") == ("a", "b")
    assert split_think_tags("<think>cut off at the token lim") == ("cut off at the token lim", "")
    assert split_think_tags("<think>a</think>\n\n<think>b</think>") == ("a", "<think>b</think>")


async def test_think_tags_keep_leaves_the_text_as_it_came(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, "Qwen/Qwen3-8B", server="think_tags=keep")
    openai_server.add(Answer(QWEN))
    answer = await llm.model(model).request("Capital of France?").prompt_async()
    await model.aclose()
    assert answer == QWEN


async def test_a_server_that_sends_thinking_apart_keeps_a_think_tag_in_the_answer() -> None:
    with FakeCompatible() as server:
        model = make_openai(server, "deepseek-chat")  # type: ignore[arg-type]
        server.add(Thinking("<think> is how the tag is written.", reasoning="They ask about the tag."))
        conversation = llm.model(model).request("How is the tag written?").prompt_conversation()
        [answer] = [m async for m in conversation.run()]
        await model.aclose()
    assert answer.content == "<think> is how the tag is written."
    assert [piece.text for piece in answer.reasoning] == ["They ask about the tag."]
