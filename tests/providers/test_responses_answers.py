"""``openai-responses:<model>`` on answers and logs that went wrong before: a log with reasoning continued on a model
that does not reason, streams with a proxy's ``[DONE]`` or keepalives, gpt-oss thinking on vLLM, items of OpenAI's
hosted tools, incomplete answers, several message items, and reasoning summaries refused to an organization. Each
runs through the public API against the fake Responses API over real HTTP on 127.0.0.1
(see `tests.providers.servers.responses`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from threadline import AssistantMessage, Conversation, get_model, llm
from threadline.errors import ModelError, UserError
from threadline.models.openai_responses import OpenAIResponsesModel

from .conftest import make_responses
from .servers import FakeResponses, Status, Thought, ToolUse

QUESTION = "Weather in Paris?"
SUMMARY_ENV = "THREADLINE_OPENAI_REASONING_SUMMARY"
PARIS = ToolUse("get_weather", '{"city": "Paris"}')


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


def kinds(body: dict[str, Any]) -> list[str]:
    return [item.get("type", "message") for item in body["input"]]


async def ask(model: OpenAIResponsesModel, stream: bool = True, **settings: Any) -> tuple[Conversation, list[str]]:
    """One question through a tool round; the text shown as it came."""
    shown: list[str] = []
    conversation = llm.model(model).tools(get_weather).request(QUESTION).prompt_conversation(stream=stream, **settings)
    async for piece in conversation.run(on_text=shown.append):
        del piece
    conversation.messages.validate()
    return conversation, shown


# -- reasoning items only to reasoning models ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt-4.1", "gpt-4o", "gpt-5-chat-latest"])
async def test_a_log_with_reasoning_continues_on_a_model_that_does_not_reason(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, name: str
) -> None:
    responses_server.add(Thought(tool_calls=(PARIS,)), Thought("22 C."))
    conversation = Conversation()
    builder = conversation.continuation.model(responses_model).tools(get_weather).request(QUESTION)
    async for _ in builder.prompt_conversation():
        pass
    other = make_responses(responses_server, name)
    responses_server.add(Thought("Rome: 21 C."))
    try:
        # The server answers 400 "Reasoning input items can only be provided to a reasoning or computer use model"
        # to any reasoning item.
        answer = await conversation.continuation.model(other).tools(get_weather).request("And Rome?").prompt_async()
    finally:
        await other.aclose()
    assert answer == "Rome: 21 C."
    assert "reasoning" not in kinds(responses_server.bodies[-1])
    assert conversation.messages[1].reasoning[0].redacted  # type: ignore[union-attr]  # the log keeps it


# -- what a stream may carry besides the answer ---------------------------------------------------------------------

AFTER_THE_END = 10**6


@pytest.mark.parametrize(
    "extra",
    [
        (AFTER_THE_END, None, "[DONE]"),  # LiteLLM and other proxies end with the Chat Completions marker
        (AFTER_THE_END, "ping", "ping"),
        (2, "keepalive", ""),
        (2, "ping", "ping"),
        (2, None, "ping"),
        (2, "keepalive", "{}"),
        (5, None, "[DONE]"),
    ],
)
async def test_events_that_carry_nothing_leave_the_answer_whole(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, extra: tuple[int, str | None, str]
) -> None:
    responses_server.add(Thought("Hello there, it is sunny.", inserted=(extra,)))
    conversation, shown = await ask(responses_model)
    answer = conversation.messages[-1]
    assert isinstance(answer, AssistantMessage) and answer.error is None
    assert answer.content == "".join(shown) == "Hello there, it is sunny."
    assert responses_server.count == 1


async def test_an_unreadable_event_of_the_api_is_still_an_error(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    cut_short = '{"type": "response.output_text.delta", "output_index": 1, "delta": "lost te'
    responses_server.add(Thought("Hello there.", inserted=((6, "response.output_text.delta", cut_short),)))
    conversation = llm.model(responses_model).request(QUESTION).prompt_conversation(max_retries=0)
    with pytest.raises(ModelError, match="unreadable stream event") as info:
        async for _ in conversation:
            pass
    assert info.value.type == "bad_response"


# -- gpt-oss behind vLLM ------------------------------------------------------------------------------------------


@pytest.fixture
def vllm_server() -> Iterator[FakeResponses]:
    with FakeResponses(flavor="vllm") as server:
        yield server  # type: ignore[misc]


@pytest.mark.parametrize("stream", [True, False])
async def test_gpt_oss_thinking_on_vllm_is_kept_shown_and_sent_back(vllm_server: FakeResponses, stream: bool) -> None:
    thinking = "The user wants the weather in Paris; I will call get_weather."
    model = make_responses(vllm_server, "openai/gpt-oss-120b", api_key=None)
    vllm_server.add(Thought(tool_calls=(PARIS,), thinking=thinking), Thought("22 C.", thinking="It answered."))
    thoughts: list[str] = []
    try:
        builder = llm.model(model).tools(get_weather).reasoning(effort="low").request(QUESTION)
        conversation = builder.prompt_conversation(stream=stream)
        async for _ in conversation.run(on_reasoning=thoughts.append):
            pass
    finally:
        await model.aclose()
    call_message = conversation.messages[1]
    assert isinstance(call_message, AssistantMessage)
    (piece,) = call_message.reasoning
    origin = f"openai-responses@127.0.0.1:{vllm_server.port}"
    assert (piece.text, piece.provider, piece.redacted) == (thinking, origin, None)
    assert "".join(thoughts).startswith(thinking)
    # vLLM reads a reasoning item back from its one reasoning_text part (and fails on one without it).
    (item,) = [item for item in vllm_server.bodies[1]["input"] if item["type"] == "reasoning"]
    assert item == {
        "type": "reasoning",
        "id": piece.id,
        "summary": [],
        "content": [{"type": "reasoning_text", "text": thinking}],
    }
    assert conversation.messages[-1].content == "22 C."  # type: ignore[union-attr]


# -- hosted tools -------------------------------------------------------------------------------------------------

HOSTED = {
    "web_search_call": {"status": "completed", "action": {"type": "search", "query": "paris weather"}},
    "file_search_call": {"status": "completed", "queries": ["weather"], "results": None},
    "code_interpreter_call": {"status": "completed", "code": "print(22)", "container_id": "cntr_1", "outputs": None},
    "image_generation_call": {"status": "completed", "result": "iVBORw0KGgo="},
    "mcp_list_tools": {"server_label": "weather", "tools": [{"name": "forecast", "input_schema": {}}]},
    "mcp_call": {"server_label": "weather", "name": "forecast", "arguments": "{}", "output": "22 C", "error": None},
}


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("kind", sorted(HOSTED))
async def test_items_of_hosted_tools_keep_the_answer_and_are_not_sent_back(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, kind: str, stream: bool
) -> None:
    item = {"id": f"{kind[:2]}_1", "type": kind, **HOSTED[kind]}
    responses_server.add(Thought("It is 22 C in Paris today.", summaries=("Search first.",), extra=(item,)))
    conversation, shown = await ask(responses_model, stream, reasoning="low")
    answer = conversation.messages[-1]
    assert isinstance(answer, AssistantMessage) and answer.error is None
    assert answer.content == "".join(shown) == "It is 22 C in Paris today."
    assert answer.reasoning[0].text == "Search first."
    responses_server.add(Thought("You are welcome."))
    assert await conversation.continuation.request("Thanks").prompt_async(reasoning="low") == "You are welcome."
    assert kinds(responses_server.bodies[-1]) == ["message", "reasoning", "message", "message"]


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ({"type": "computer_call", "call_id": "c1", "action": {"type": "screenshot"}}, "computer_call_output"),
        (
            {"type": "mcp_approval_request", "server_label": "s", "name": "t", "arguments": "{}"},
            "mcp_approval_response",
        ),
        ({"type": "custom_tool_call", "call_id": "c1", "name": "grammar", "input": "x"}, "custom_tool_call_output"),
        ({"type": "frobnicate_call"}, "does not read"),
    ],
)
async def test_items_that_wait_for_an_answer_are_a_clear_error(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, item: dict[str, Any], says: str
) -> None:
    responses_server.add(Thought("Let me look.", extra=({"id": "it_1", "status": "completed", **item},)))
    conversation = llm.model(responses_model).request(QUESTION).prompt_conversation()
    with pytest.raises(ModelError) as info:
        async for _ in conversation:
            pass
    assert f"{item['type']!r}" in str(info.value) and says in str(info.value)
    assert responses_server.count == 1


# -- incomplete answers, several message items ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_an_answer_stopped_by_the_content_filter_says_so(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, stream: bool
) -> None:
    responses_server.add(Thought(incomplete="content_filter"))
    conversation = llm.model(responses_model).request(QUESTION).prompt_conversation(stream=stream)
    with pytest.raises(ModelError) as info:
        async for _ in conversation:
            pass
    message = str(info.value)
    assert "content filter" in message and "lower the reasoning effort" not in message
    assert info.value.type == "refused" and responses_server.count == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_reasoning_that_uses_up_max_tokens_fails_at_once_and_the_failure_keeps_it(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, stream: bool
) -> None:
    """Before: an error of the Responses adapter's own type, and unstreamed, the failure's log had no reasoning."""
    responses_server.add(Thought("", summaries=("Weighing three routes.",), incomplete="max_output_tokens"))
    builder = llm.model(responses_model).reasoning(effort="high").request("Plan a long route.")
    conversation = builder.prompt_conversation(stream=stream, max_retries=3)
    with pytest.raises(ModelError) as info:
        async for _ in conversation:
            pass
    assert (info.value.type, info.value.retryable) == ("length", False) and responses_server.count == 1
    assert "output token limit before answering (its reasoning used it up)" in str(info.value)
    conversation.messages.validate()
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None and failure.error.type == "length"
    assert [piece.text for piece in failure.reasoning] == ["Weighing three routes."]


@pytest.mark.parametrize("stream", [True, False])
async def test_separate_message_items_are_separate_paragraphs(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, stream: bool
) -> None:
    responses_server.add(Thought("First paragraph.", paragraphs=("Second paragraph.", "Third.")))
    conversation, shown = await ask(responses_model, stream)
    expected = "First paragraph.\n\nSecond paragraph.\n\nThird."
    assert conversation.messages[-1].content == "".join(shown) == expected  # type: ignore[union-attr]


# -- reasoning summaries ----------------------------------------------------------------------------------------------

UNVERIFIED = {
    "error": {
        "message": "Your organization must be verified to generate reasoning summaries. Please go to: "
        "https://platform.openai.com/settings/organization/general and click on Verify Organization. If you just "
        "verified, it can take up to 15 minutes for access to propagate.",
        "type": "invalid_request_error",
        "param": "reasoning.summary",
        "code": "unsupported_value",
    }
}


async def test_the_refusal_of_summaries_says_how_to_turn_them_off(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    responses_server.add(Status(400, UNVERIFIED))
    with pytest.raises(ModelError) as info:
        await llm.model(responses_model).reasoning(effort="low").request(QUESTION).prompt_async()
    assert info.value.status == 400 and "must be verified to generate reasoning summaries" in str(info.value)
    assert f"{SUMMARY_ENV}=none" in str(info.value) and "reasoning_summary=None" in str(info.value)


async def test_summaries_are_turned_off_for_a_model_named_by_a_string(
    responses_server: FakeResponses, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", responses_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
    model = get_model("openai-responses:o4-mini")
    responses_server.add(Thought("One."), Thought("Two."))
    try:
        await llm.model(model).reasoning(effort="low").request(QUESTION).prompt_async()
        monkeypatch.setenv(SUMMARY_ENV, "none")
        await llm.model("openai-responses:o4-mini").reasoning(effort="low").request(QUESTION).prompt_async()
        monkeypatch.setenv(SUMMARY_ENV, "sometimes")
        with pytest.raises(UserError, match=SUMMARY_ENV):
            await llm.model(model).reasoning(effort="low").request(QUESTION).prompt_async()
    finally:
        await model.aclose()
    first, second = responses_server.bodies
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    assert second["reasoning"] == {"effort": "low"}
    assert responses_server.count == 2  # the unknown value never left


def test_an_explicit_summary_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SUMMARY_ENV, "none")
    model = OpenAIResponsesModel("o4-mini", base_url="http://127.0.0.1:9/v1", api_key="k", reasoning_summary="detailed")
    assert model._profile_now().reasoning_summary == "detailed"
