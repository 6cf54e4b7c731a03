"""A cancelled generate_text call never hands its cancellation to a later caller with the same request, and a
reactive generation always lands a state, whatever cancels its run."""

from __future__ import annotations

import asyncio

from threadline import Cell, ModelRequest, generate_text, reactive_generate_text
from threadline.testing import ScriptedModel


async def slow(_: ModelRequest) -> str:
    await asyncio.sleep(0.1)
    return "answer"


async def test_a_call_started_right_after_one_was_cancelled_runs_on_its_own() -> None:
    model = ScriptedModel([slow, slow])
    first = asyncio.create_task(generate_text(model=model, prompt="hi"))
    await asyncio.sleep(0.02)  # its model call is under way
    first.cancel()
    # Started before the loop turns: the first call's shared run is being cancelled, so this one must not join it.
    second = asyncio.create_task(generate_text(model=model, prompt="hi"))

    result = await asyncio.wait_for(second, 2)

    assert result.text == "answer"
    assert first.cancelled()
    assert len(model.requests) == 2


async def test_inputs_flipped_back_while_the_first_call_runs_settle_on_its_answer() -> None:
    model = ScriptedModel([slow, slow, slow])
    inputs = Cell({"prompt": "X"})
    state = reactive_generate_text(inputs, model=model)
    await asyncio.sleep(0.02)  # X's model call is under way
    inputs.set({"prompt": "Y"})
    inputs.set({"prompt": "X"})  # back before the loop turns

    settled = await asyncio.wait_for(state.settled(), 2)

    assert not settled.pending
    assert settled.result == "answer"
    assert settled.error is None


async def test_a_run_cancelled_by_something_else_lands_a_state() -> None:
    async def cancelled(_: ModelRequest) -> str:
        # What a cancellation from elsewhere looks like to the runner: generate_text raises CancelledError though
        # nothing superseded the run.
        raise asyncio.CancelledError

    state = reactive_generate_text(Cell({"prompt": "go"}), model=ScriptedModel([cancelled]))

    settled = await asyncio.wait_for(state.settled(), 2)

    assert not settled.pending
    assert isinstance(settled.error, asyncio.CancelledError)
    assert settled.result is None
