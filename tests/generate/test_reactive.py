"""reactive_generate_text: starts by itself, re-runs only for a new request hash, cancels a superseded run and
drops its late writes, never re-runs for reads or writes of the result cell, batches partial text, reports errors."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from threadline import (
    Cell,
    GenerateTextState,
    Model,
    ModelCapabilities,
    ModelError,
    ModelRequest,
    ModelResponse,
    TextDelta,
    UserError,
    reactive_generate_text,
    user,
)
from threadline.testing import ScriptedModel, ScriptedRequest


def watch(cell: Cell[GenerateTextState]) -> list[GenerateTextState]:
    states: list[GenerateTextState] = []
    cell.subscribe(states.append)
    return states


async def test_it_starts_by_itself_and_lands_the_result() -> None:
    model = ScriptedModel(["Hello!"])
    inputs = Cell({"prompt": "Hi"})
    state = reactive_generate_text(inputs, model=model, system="Be kind.")

    assert state.get().pending and state.get().request_hash is not None
    done = await state.settled()

    assert not done.pending and done.result == "Hello!" and done.error is None
    assert done.messages is not None and [m.content for m in done.messages] == ["Hi", "Hello!"]
    assert len(model.requests) == 1 and model.requests[0].messages[0].content == "Be kind."


async def test_equal_inputs_do_not_run_again() -> None:
    model = ScriptedModel(["Hello!"])
    inputs = Cell({"prompt": "Hi"})
    state = reactive_generate_text(inputs, model=model)
    done = await state.settled()

    inputs.set({"prompt": "Hi"})  # a new dict, the same request
    await asyncio.sleep(0.02)
    assert state.get() is done and len(model.requests) == 1


async def test_a_new_request_runs_again_and_continues_the_conversation() -> None:
    model = ScriptedModel(["Hello!", "Fine, thanks."])
    inputs: Cell[dict[str, Any]] = Cell({"messages": [user("Hi")]})
    state = reactive_generate_text(inputs, model=model)
    first = await state.settled()
    assert first.messages is not None

    inputs.set({"messages": [*first.messages, user("How are you?")]})
    assert state.get().pending and state.get().request_hash != first.request_hash
    second = await state.settled()

    assert second.result == "Fine, thanks." and len(model.requests) == 2
    assert [m.content for m in model.requests[1].messages] == ["Hi", "Hello!", "How are you?"]


async def test_a_superseded_run_is_cancelled_and_its_late_result_never_written() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def stubborn(request: ScriptedRequest) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()  # ...and it answers anyway, late: that answer must go nowhere
        return "LATE answer to the old question"

    model = ScriptedModel([stubborn, "Answer to the new question"])
    inputs = Cell({"prompt": "Old question"})
    state = reactive_generate_text(inputs, model=model)
    states = watch(state)
    await started.wait()

    inputs.set({"prompt": "New question"})
    done = await state.settled()
    await asyncio.sleep(0.02)

    assert cancelled.is_set()
    assert done.result == "Answer to the new question"
    assert state.get() is done
    assert all("LATE" not in (s.result or "") + (s.partial or "") for s in states)


async def test_reading_or_writing_the_result_cell_never_starts_a_run() -> None:
    model = ScriptedModel(["Hello!", "never"])
    inputs = Cell({"prompt": "Hi"})
    state = reactive_generate_text(inputs, model=model)
    done = await state.settled()

    assert state.get() is done
    state.set(GenerateTextState(result="written by the app"))
    state.update(lambda s: GenerateTextState(result=(s.result or "") + "!"))
    await asyncio.sleep(0.02)

    assert len(model.requests) == 1 and model.remaining == 1
    assert state.get().result == "written by the app!"


class DripModel(Model):
    """Streams its answer one word at a time, yielding to the loop between words."""

    def __init__(self, words: int) -> None:
        self.name = "drip"
        self.capabilities = ModelCapabilities(tools=True, streaming=True)
        self.words = [f"w{i} " for i in range(words)]

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelResponse]:
        for word in self.words:
            yield TextDelta(word)
            await asyncio.sleep(0)
        yield ModelResponse(content="".join(self.words))


@pytest.mark.parametrize(("interval", "expected"), [(3600.0, 1), (0.0, 40)])
async def test_partial_updates_are_batched(interval: float, expected: int) -> None:
    inputs = Cell({"prompt": "Talk"})
    state = reactive_generate_text(inputs, model=DripModel(40), partial_interval=interval)
    states = watch(state)
    done = await state.settled()

    partials = [s.partial for s in states if s.pending]
    assert len(partials) == expected  # an hour between updates: only the first; no interval: every word
    assert all(p is not None and p.startswith("w0 ") for p in partials)
    assert done.partial == done.result == "".join(f"w{i} " for i in range(40))
    assert all(a is not b for a, b in itertools.pairwise(states))  # every change is a new state


async def test_a_failure_lands_in_error_with_the_log_to_continue_from() -> None:
    model = ScriptedModel([ModelError("overloaded", type="server", partial="Hal")])
    state = reactive_generate_text(Cell({"prompt": "Hi"}), model=model)
    done = await state.settled()

    assert not done.pending and done.result is None
    assert isinstance(done.error, ModelError) and done.error.type == "server"
    assert done.messages is not None and done.messages[-1].content == "Hal"


async def test_bad_inputs_land_in_error_without_a_run() -> None:
    model = ScriptedModel(["never"])
    state = reactive_generate_text(Cell({"prompt": "Hi", "colour": "red"}), model=model)
    done = await state.settled()
    assert not done.pending and isinstance(done.error, UserError) and model.requests == []


async def test_stop_cancels_the_run_and_stops_watching() -> None:
    release = asyncio.Event()

    async def slow(request: ScriptedRequest) -> str:
        await release.wait()
        return "too late"

    model = ScriptedModel([slow, "never"])
    inputs = Cell({"prompt": "Hi"})
    state = reactive_generate_text(inputs, model=model)
    await asyncio.sleep(0.01)
    state.stop()
    inputs.set({"prompt": "Something else"})
    release.set()
    await asyncio.sleep(0.02)
    assert not state.get().pending and state.get().result is None and len(model.requests) == 1


def test_it_needs_a_running_event_loop() -> None:
    with pytest.raises(UserError, match="running event loop"):
        reactive_generate_text(Cell({"prompt": "Hi"}), model=ScriptedModel())


def test_a_cell_tells_its_subscribers_until_they_unsubscribe() -> None:
    cell = Cell(1)
    seen: list[int] = []
    unsubscribe = cell.subscribe(seen.append)
    cell.set(2)
    cell.update(lambda v: v + 1)
    unsubscribe()
    cell.set(10)
    assert seen == [2, 3] and cell.get() == 10
