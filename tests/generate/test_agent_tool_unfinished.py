"""agent_tool with a child that did not finish normally: an answer cut off at the token limit or by a content filter
is reported as such, a failed child names its stored log, and a failure that may pass is not cached."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from tests.core._support import call, calls
from threadline import (
    Model,
    ModelCapabilities,
    ModelError,
    ModelRequest,
    ModelResponse,
    TextDelta,
    agent_tool,
    find_tool_result,
    generate_text,
    llm,
)
from threadline.generate.result import cache_key
from threadline.store import Store
from threadline.testing import ScriptedModel


class StoppedModel(Model):
    """Answers once with ``content``, stopped for ``stop_reason``."""

    def __init__(self, content: str | None, stop_reason: str) -> None:
        self.name = "stopped"
        self.capabilities = ModelCapabilities(tools=True, streaming=True)
        self.content = content
        self.stop_reason = stop_reason

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelResponse]:
        if self.content:
            yield TextDelta(self.content)
        yield ModelResponse(content=self.content, stop_reason=self.stop_reason)


def parent() -> ScriptedModel:
    return ScriptedModel([calls(call("sub", {"task": "Find it"})), "Parent done."])


@pytest.mark.parametrize("reason", ["length", "content_filter"])
async def test_a_child_answer_that_stopped_short_says_so(reason: str) -> None:
    tool = agent_tool(llm.model(StoppedModel("The answer is 4", reason)), "sub", "Finds things.")

    result = await generate_text(model=parent(), prompt="Go", tools=[tool])

    answer = find_tool_result(result.messages, "sub")
    assert answer is not None and not answer.is_error
    assert answer.content.startswith("The answer is 4")
    assert "may be incomplete" in answer.content
    assert ("token limit" if reason == "length" else "content filter") in answer.content


@pytest.mark.parametrize("reason", ["length", "content_filter"])
@pytest.mark.parametrize("content", [None, ""])
async def test_a_child_that_stopped_short_with_no_text_is_an_error(reason: str, content: str | None) -> None:
    tool = agent_tool(llm.model(StoppedModel(content, reason)), "sub", "Finds things.")

    result = await generate_text(model=parent(), prompt="Go", tools=[tool])

    answer = find_tool_result(result.messages, "sub")
    assert answer is not None and answer.is_error
    assert "gave no answer" in answer.content


async def test_a_stored_child_that_stopped_short_adds_a_note_beside_its_result(store: Store) -> None:
    tool = agent_tool(llm.model(StoppedModel("Partial", "length")), "sub", "Finds things.", store=store)

    result = await generate_text(model=parent(), prompt="Go", tools=[tool])

    answer = find_tool_result(result.messages, "sub")
    assert answer is not None and not answer.is_error
    data = json.loads(answer.content)
    assert data["result"] == "Partial" and data["stop_reason"] == "length" and "incomplete" in data["note"]
    assert store.load(data["conversation_id"])[-1].content == "Partial"


async def test_a_failed_stored_child_is_named_and_a_retryable_failure_is_not_cached(store: Store) -> None:
    child = ScriptedModel([ModelError("rate limited", type="rate_limit", retryable=True), "Found it."])
    tool = agent_tool(llm.model(child).agent("You research."), "sub", "Finds things.", store=store)
    model = ScriptedModel([calls(call("sub", {"task": "Find it"})), "Parent gave up."])
    model.add(calls(call("sub", {"task": "Find it"})), "Parent done.")

    first = await generate_text(model=model, prompt="Go", tools=[tool], cache=store)

    failed = find_tool_result(first.messages, "sub")
    assert failed is not None and failed.is_error
    assert "rate limited" in failed.content
    child_id = failed.content.rsplit(" ", 1)[-1]
    assert store.load(child_id)[-1].error is not None  # the child's log holds the failure

    again = await generate_text(model=model, prompt="Go", tools=[tool], cache=store)

    assert not again.cached  # the transient failure is not replayed: the request ran again
    assert again.text == "Parent done."
    answered = find_tool_result(again.messages, "sub")
    assert answered is not None and not answered.is_error
    assert json.loads(answered.content)["result"] == "Found it."
    # Once it succeeded, the result is cached as usual.
    assert (await generate_text(model=model, prompt="Go", tools=[tool], cache=store)).cached


async def test_a_child_failure_that_will_not_pass_is_cached_as_before(store: Store) -> None:
    child = ScriptedModel([ModelError("bad request", type="invalid_request", retryable=False)])
    tool = agent_tool(llm.model(child), "sub", "Finds things.")

    first = await generate_text(model=parent(), prompt="Go", tools=[tool], cache=store)
    again = await generate_text(model=parent(), prompt="Go", tools=[tool], cache=store)

    assert not first.cached and again.cached


async def test_a_child_stopped_by_its_timeout_is_not_cached(store: Store) -> None:
    async def hang(_: ModelRequest) -> str:
        await asyncio.sleep(30)
        return "never"

    tool = agent_tool(llm.model(ScriptedModel([hang])), "sub", "Finds things.", timeout=0.05)

    first = await generate_text(model=parent(), prompt="Go", tools=[tool], cache=store)

    stopped = find_tool_result(first.messages, "sub")
    assert stopped is not None and stopped.is_error
    assert store.cache_get(cache_key(first.request_hash)) is None
