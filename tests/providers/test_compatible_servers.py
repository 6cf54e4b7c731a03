"""OpenAI-compatible servers that differ from OpenAI's API, over real HTTP against the fake server playing their quirks
(each checked against llama-cpp-python's real server, which `test_llama_cpp_server.py` runs): what an assistant
message that only calls tools is sent as, streamed tool calls that repeat their name or leave out their index,
and what is sent about tools (``tool_choice``, ``required``, streaming) as the profile says."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pydantic
import pytest

from threadline import AssistantMessage, Conversation, ToolMessage, Toolset, get_model, llm
from threadline.errors import CapabilityError, UserError
from threadline.models.openai import OpenAIModel
from threadline.models.profiles import SERVERS, openai_profile, server_options

from .conftest import make_openai
from .servers import LLAMA_CPP_PYTHON, Answer, FakeOpenAI, ToolUse


class Notes:
    """Notes kept for the user."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add_note(self, text: str) -> str:
        """Add a note."""
        self.items.append(text)
        return "saved"


class Verdict(pydantic.BaseModel):
    done: bool
    count: int


def get_time(city: str) -> str:
    """The local time in a city."""
    return f"12:00 in {city}"


@pytest.fixture
def llama_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(quirks=LLAMA_CPP_PYTHON) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
async def llama_model(llama_server: FakeOpenAI) -> AsyncIterator[OpenAIModel]:
    model = make_openai(llama_server, model="smollm2", server="llama-cpp-python", api_key="")
    yield model
    await model.aclose()


def note_calls(*texts: str) -> list[Answer]:
    return [Answer(tool_calls=(ToolUse("Notes_add_note", f'{{"text": "{text}"}}'),)) for text in texts]


async def run(conversation: Conversation) -> list[Any]:
    return [message async for message in conversation]


# -- what an assistant message that only calls tools is sent as -------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_multi_round_tool_loop_completes_on_a_server_that_refuses_null_content(stream: bool) -> None:
    # llama-cpp-python's server answers HTTP 500 ("content: Input should be a valid string") to the second round
    # when an assistant message that only called tools is sent with "content": null, as threadline once did.
    with FakeOpenAI(quirks={"reject_null_content"}) as server:
        model = make_openai(server)
        notes = Notes()
        server.add(*note_calls("milk", "eggs"), Answer("Noted both."))
        try:
            conversation = (
                llm.model(model)
                .tools(Toolset.from_object(notes))
                .request("Remember milk and eggs")
                .prompt_conversation(stream=stream)
            )
            messages = await run(conversation)
        finally:
            await model.aclose()
    assert server.count == 3  # no request was refused, so none was retried
    assert notes.items == ["milk", "eggs"]
    assert conversation.text == "Noted both."
    conversation.messages.validate()
    calls = [m for m in messages if isinstance(m, AssistantMessage) and m.tool_calls]
    assert [m.content for m in calls] == [None, None]  # the log keeps "no text"; only the wire says ""
    sent = [m for m in server.bodies[2]["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in sent] == ["", ""]


async def test_content_null_can_be_chosen_per_server(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, server="tool_call_content=null")
    openai_server.add(*note_calls("milk"), Answer("Noted."))
    try:
        await llm.model(model).tools(Toolset.from_object(Notes())).request("milk").prompt_async()
    finally:
        await model.aclose()
    assistant = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] is None


# -- streamed tool calls ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("quirks", [{"repeat_names"}, {"index_less"}, {"repeat_names", "index_less"}])
async def test_streamed_tool_calls_are_assembled_whatever_the_server_repeats_or_leaves_out(quirks: set[str]) -> None:
    with FakeOpenAI(quirks=quirks) as server:
        model = make_openai(server)
        notes = Notes()
        server.add(
            Answer(
                tool_calls=(
                    ToolUse("Notes_add_note", '{"text": "buy oat milk today"}', id="call_first"),
                    ToolUse("Notes_add_note", '{"text": "call the plumber"}', id="call_second"),
                )
            ),
            Answer("Both noted."),
        )
        try:
            conversation = (
                llm.model(model).tools(Toolset.from_object(notes)).request("notes").prompt_conversation(stream=True)
            )
            messages = await run(conversation)
        finally:
            await model.aclose()
    call_message, *results, answer = messages
    assert isinstance(call_message, AssistantMessage)
    assert [(c.id, c.name, c.arguments) for c in call_message.tool_calls] == [
        ("call_first", "Notes.add_note", {"text": "buy oat milk today"}),
        ("call_second", "Notes.add_note", {"text": "call the plumber"}),
    ]
    assert [r.tool_call_id for r in results] == ["call_first", "call_second"]
    assert not any(isinstance(r, ToolMessage) and r.is_error for r in results)
    # The two calls run concurrently (docs/architecture.md#how-a-turn-runs), so their side effects may land in either
    # order; the results are appended in call order, which the assertion above checks.
    assert sorted(notes.items) == ["buy oat milk today", "call the plumber"]
    assert answer.content == "Both noted."
    conversation.messages.validate()


def test_a_name_streamed_in_pieces_is_still_put_together() -> None:
    import json

    from threadline.messages import UserMessage
    from threadline.models import ModelRequest, ToolSpec
    from threadline.models.openai._chat_request import build_request
    from threadline.models.openai._chat_stream import ChatStream

    spec = ToolSpec("Notes.add_note", "Add a note.", {"type": "object", "properties": {"text": {"type": "string"}}})
    _, context = build_request(
        ModelRequest(messages=[UserMessage(content="x")], tools=[spec]), "m", openai_profile("m"), stream=True
    )
    reader = ChatStream(context)
    for fragment in (
        {"index": 0, "id": "call_1", "function": {"name": "Notes_", "arguments": ""}},
        {"index": 0, "function": {"name": "add_note", "arguments": '{"text": "x"}'}},
    ):
        reader.feed("", json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}))
    reader.feed("", json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    (call,) = reader.finish().tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "Notes.add_note", {"text": "x"})


# -- tool_choice as the profile says ------------------------------------------------------------------------------


async def test_openai_defaults_leave_tool_choice_out_exactly_as_openai_expects(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server)
    openai_server.add(*note_calls("milk"), Answer("Noted."))
    try:
        await llm.model(model).tools(Toolset.from_object(Notes())).request("milk").prompt_async()
    finally:
        await model.aclose()
    for body in openai_server.bodies:
        assert "tool_choice" not in body
        assert body["stream"] is True


async def test_a_server_that_ignores_tools_without_tool_choice_gets_auto(
    llama_server: FakeOpenAI, llama_model: OpenAIModel
) -> None:
    notes = Notes()
    llama_server.add(*note_calls("milk"), Answer("Noted."))
    conversation = llm.model(llama_model).tools(Toolset.from_object(notes)).request("milk").prompt_conversation()
    await run(conversation)
    assert notes.items == ["milk"]  # the tool was called: the server was told it may
    first, second = llama_server.bodies
    assert first["tool_choice"] == "auto" and second["tool_choice"] == "auto"
    # It cannot stream an automatic choice, so those requests go unstreamed; the final answer still arrives.
    assert "stream" not in first and "stream" not in second
    assert conversation.text == "Noted."


async def test_without_the_server_option_such_a_server_ignores_the_tools(llama_server: FakeOpenAI) -> None:
    # What a user saw before the option existed: tools offered, never called, and no error to say why.
    model = make_openai(llama_server, model="smollm2", api_key="")
    notes = Notes()
    llama_server.add(*note_calls("milk"))
    try:
        await llm.model(model).tools(Toolset.from_object(notes)).request("milk").prompt_async(stream=False)
    finally:
        await model.aclose()
    assert notes.items == []
    assert "tool_choice" not in llama_server.bodies[0]


async def test_a_named_choice_streams_on_such_a_server(llama_server: FakeOpenAI, llama_model: OpenAIModel) -> None:
    notes = Notes()
    llama_server.add(*note_calls("milk"), Answer("Noted."))
    pieces = [
        piece
        async for piece in llm.model(llama_model)
        .tools(Toolset.from_object(notes))
        .tool_choice("Notes.add_note")
        .request("milk")
        .stream()
    ]
    first, second = llama_server.bodies
    assert first["tool_choice"] == {"type": "function", "function": {"name": "Notes_add_note"}}
    assert first["stream"] is True  # a named choice streams there, repeated names and all
    assert notes.items == ["milk"]
    assert second["tool_choice"] == "auto" and "stream" not in second
    assert "".join(pieces).endswith("Noted.")


async def test_required_with_one_tool_becomes_a_named_choice(
    llama_server: FakeOpenAI, llama_model: OpenAIModel
) -> None:
    notes = Notes()
    llama_server.add(*note_calls("milk"), Answer("Noted."))
    await llm.model(llama_model).tools(Toolset.from_object(notes)).tool_choice("required").request("m").prompt_async()
    assert llama_server.bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "Notes_add_note"}}
    assert notes.items == ["milk"]


async def test_required_among_several_tools_is_refused_before_any_request(
    llama_server: FakeOpenAI, llama_model: OpenAIModel
) -> None:
    builder = llm.model(llama_model).tools(Toolset.from_object(Notes()), get_time).tool_choice("required")
    with pytest.raises(CapabilityError, match="tool_choice='required'"):
        await builder.request("m").prompt_async()
    assert llama_server.count == 0


async def test_prompt_for_type_forces_the_final_tool_by_name_and_streams(
    llama_server: FakeOpenAI, llama_model: OpenAIModel
) -> None:
    llama_server.add(Answer(tool_calls=(ToolUse("final_result", '{"done": true, "count": 3}'),)))
    verdict = await llm.model(llama_model).request("Done? How many?").prompt_for_type_async(Verdict)
    assert verdict == Verdict(done=True, count=3)
    body = llama_server.bodies[0]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    assert body["stream"] is True


async def test_prompt_for_type_with_tools_is_refused_where_required_is_not_honoured(
    llama_server: FakeOpenAI, llama_model: OpenAIModel
) -> None:
    builder = llm.model(llama_model).tools(get_time).request("Time in Oslo, as a verdict?")
    with pytest.raises(CapabilityError, match="structured answer while also offering tools"):
        await builder.prompt_for_type_async(Verdict)
    assert llama_server.count == 0


async def test_required_is_sent_as_is_where_the_server_honours_it(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server)
    openai_server.add(*note_calls("milk"), Answer("Noted."))
    try:
        await (
            llm.model(model)
            .tools(Toolset.from_object(Notes()), get_time)
            .tool_choice("required")
            .request("m")
            .prompt_async()
        )
    finally:
        await model.aclose()
    assert openai_server.bodies[0]["tool_choice"] == "required"
    assert "tool_choice" not in openai_server.bodies[1]  # later rounds: the default, left out


# -- the option, independent of the base URL ----------------------------------------------------------------------


async def test_the_server_option_comes_from_the_environment_whatever_the_url(
    llama_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server.base_url)
    monkeypatch.setenv("THREADLINE_OPENAI_SERVER", "llama-cpp-python")
    model = get_model("openai:smollm2-env")
    try:
        assert isinstance(model, OpenAIModel)
        assert model.profile.tool_choice_default == "auto"
        assert not model.capabilities.tool_choice_required
        notes = Notes()
        llama_server.add(*note_calls("milk"), Answer("Noted."))
        await llm.model(model).tools(Toolset.from_object(notes)).request("m").prompt_async()
        assert notes.items == ["milk"]
    finally:
        await model.aclose()


def test_server_specs() -> None:
    assert server_options("llama-cpp-python") == SERVERS["llama-cpp-python"]
    assert server_options("openai") == {}
    assert server_options(" tool_choice_default = omit , tool_streaming=none") == {
        "tool_choice_default": None,
        "tool_streaming": "none",
    }
    assert server_options("llama-cpp-python,tool_call_content=null")["tool_call_content"] is None
    profile = openai_profile("smollm2").with_server({"tool_streaming": "named", "tool_choice_required": False})
    assert profile.tool_streaming == "named" and not profile.capabilities.tool_choice_required
    assert openai_profile("gpt-4o").with_server("llama-cpp-python").capabilities.images  # the family's flags stay
    with pytest.raises(UserError, match="unknown server 'lama'"):
        server_options("lama")
    with pytest.raises(UserError, match="unknown server option 'tool_choise'"):
        server_options("tool_choise=auto")
    with pytest.raises(UserError, match="must be one of all, named, none"):
        server_options("tool_streaming=sometimes")
    with pytest.raises(UserError, match="unknown server"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", server="nonsense")
    from threadline.models.anthropic import AnthropicModel

    with pytest.raises(UserError, match="takes no server= option"):
        AnthropicModel("claude-haiku-4-5", server="llama-cpp-python")
