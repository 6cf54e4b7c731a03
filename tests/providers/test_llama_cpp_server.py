"""threadline against a real OpenAI-compatible server nobody on this project wrote: llama-cpp-python's own server
(``--chat_format chatml-function-calling``) on SmolLM2-135M, started once per session through
``python -m threadline.llama_cpp_server`` (``llama_cpp_server`` in conftest.py; see `tests.providers.llama_server`).

The model is tiny, and llama.cpp is built for the CPU it runs on, so its words differ from one machine to the next:
these tests assert the protocol, never what an answer says or how long it runs (`tests.real_models`): every request
is accepted, tool calls carry real names and the server's own ids from the log to the wire and back, the log
validates at every step, and a saved conversation continues. Where the model must call a tool it is told to by
name (``tool_choice``); where a test needs text, the server's ``min_tokens`` holds back the end of the answer for a
few tokens. Sampling is greedy (temperature 0), so a run repeats itself on one machine.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

import pydantic
import pytest

from threadline import AssistantMessage, Conversation, ToolMessage, Toolset, UserMessage, llm, open_store
from threadline.models.openai import OpenAIModel

from ..real_models import assert_tool_turn
from .llama_server import LLAMA_CPP_MODEL

SETTINGS = {"temperature": 0.0, "max_tokens": 48}
# llama-cpp-python's own extension: the end of the answer is banned for its first tokens, so a test that needs text
# gets some whatever the model would have said.
SOME_TEXT = {"openai_min_tokens": 8}
# The server's own ids: "call__<n>_<wire name>_<completion id>" (threadline's fresh ones are "call_<ULID>").
SERVER_ID = re.compile(r"^call__\d+_Notes_add_note_cmpl-[0-9a-f-]+$")


class Notes:
    """Notes kept for the user."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add_note(self, text: Annotated[str, pydantic.Field(max_length=24)]) -> str:
        """Add a note."""
        # The length bound keeps the constrained arguments short: a tiny model writes long strings.
        self.items.append(text)
        return "saved"


class Verdict(pydantic.BaseModel):
    done: bool
    count: int


@pytest.fixture
async def model(llama_cpp_server: str) -> AsyncIterator[OpenAIModel]:
    model = OpenAIModel(LLAMA_CPP_MODEL, base_url=llama_cpp_server, server="llama-cpp-python", timeout=120)
    yield model
    await model.aclose()


NOTES = {"Notes.add_note": lambda text: "saved"}


def assert_server_ids(log: list[object]) -> None:
    """Every call carries the server's own id, unique across rounds, and is answered by a result with that id."""
    calls = [call for m in log if isinstance(m, AssistantMessage) for call in m.tool_calls]
    results = [m for m in log if isinstance(m, ToolMessage)]
    assert calls
    assert all(SERVER_ID.match(call.id) for call in calls), [call.id for call in calls]
    assert len({call.id for call in calls}) == len(calls)
    assert [r.tool_call_id for r in results] == [call.id for call in calls]


@pytest.mark.parametrize("stream", [False, True])
async def test_plain_text(model: OpenAIModel, stream: bool) -> None:
    answer = llm.model(model).request("Say hello to Ada.").stream(stream=stream, **SETTINGS, **SOME_TEXT)
    pieces = [piece async for piece in answer]
    assert answer.conversation is not None
    log = answer.conversation.messages
    log.validate()
    user, reply = log
    assert isinstance(user, UserMessage) and isinstance(reply, AssistantMessage)
    assert reply.error is None and reply.content and "".join(pieces) == reply.content
    assert reply.model == f"openai:{LLAMA_CPP_MODEL}"
    if stream:
        assert len(pieces) > 1  # it arrived in pieces (min_tokens makes it more than one token)
    else:
        assert reply.usage is not None and reply.usage.output_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_loop_of_up_to_two_rounds_with_a_dotted_object_tool_ends_in_an_answer(
    model: OpenAIModel, stream: bool
) -> None:
    notes = Notes()
    conversation = (
        llm.model(model)
        .tools(Toolset.from_object(notes))
        .tool_choice("Notes.add_note")  # the first round is forced; the second is the model's choice ("auto")
        .max_tool_rounds(2)
        .request("Remember to buy milk.")
        .prompt_conversation(stream=stream, **SETTINGS)
    )
    seen = []
    async for message in conversation:
        seen.append(message)
        conversation.messages.validate()  # at every step, not only at the end
    assert conversation.last_turn is not None
    rounds = assert_tool_turn(
        seen,
        tools=NOTES,
        max_rounds=2,
        stop_reason=conversation.last_turn.stop_reason,
        forced="Notes.add_note",
        max_tokens=SETTINGS["max_tokens"],
    )
    assert rounds in (1, 2)
    assert_server_ids(seen)
    successful = [r for r in seen if isinstance(r, ToolMessage) and not r.is_error]
    assert len(notes.items) == len(successful)  # each result answers a call that ran


@pytest.mark.parametrize("stream", [False, True])
async def test_prompt_for_type(model: OpenAIModel, stream: bool) -> None:
    conversation = Conversation()
    verdict = await (
        conversation.continuation.model(model)
        .request("Is the job done, and how many items are left?")
        .prompt_for_type_async(Verdict, stream=stream, temperature=0.0, max_tokens=128)
    )
    assert isinstance(verdict, Verdict)
    conversation.messages.validate()
    answer = conversation.messages[-1]
    assert isinstance(answer, AssistantMessage) and not answer.tool_calls  # no call is logged for the final tool
    assert Verdict.model_validate_json(answer.content or "") == verdict


async def test_a_saved_conversation_reloads_and_continues_on_the_same_server(
    model: OpenAIModel, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        notes = Notes()
        first = (
            llm.model(model)
            .store(store)
            .tools(Toolset.from_object(notes))
            .tool_choice("Notes.add_note")
            .max_tool_rounds(1)
            .request("Remember to water the plants.")
            .prompt_conversation(**SETTINGS)
        )
        async for _ in first:
            pass
        saved = list(first.messages)

        reloaded = Conversation.load(first.id, store)
        assert list(reloaded.messages) == saved  # real names and the server's ids, as they were
        assert_server_ids(list(reloaded.messages))
        # The next request carries the assistant message that only called a tool: the server must accept it.
        reply = (
            await reloaded.continuation.model(model).request("What did you note?").prompt_async(**SETTINGS, **SOME_TEXT)
        )
        assert reply
        again = Conversation.load(first.id, store)
        again.messages.validate()
        assert len(again.messages) == len(saved) + 2
        assert isinstance(again.messages[-1], AssistantMessage) and again.messages[-1].error is None
    finally:
        store.close()
