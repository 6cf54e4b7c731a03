"""Reasoning of one server speaking the Responses API is sent back to that server only, through the public API
against two fake servers over real HTTP on 127.0.0.1: one plays OpenAI's API reached at another base URL (a proxy,
a gateway, Azure), which verifies its own encrypted reasoning and answers 404 for an item it never stored; the
other plays vLLM serving gpt-oss, which shows raw ``reasoning_text`` and fails (400 ``AssertionError``) on a
reasoning item without exactly one such part, as OpenAI's encrypted items are. Each piece records its origin
(`Reasoning.provider`: ``openai-responses`` for OpenAI's own API, ``openai-responses@host:port`` for another
server); the log keeps every piece wherever it goes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from threadline import AssistantMessage, Conversation, MessageList, Reasoning, ToolCall, ToolMessage, UserMessage, llm
from threadline.models import ModelRequest, ModelSettings, ReasoningSettings
from threadline.models.openai_responses import OpenAIResponsesModel, origin_of

from .conftest import SECRET, make_responses
from .servers import FakeResponses, Thought, ToolUse

PARIS = ToolUse("get_weather", '{"city": "Paris"}')
ROME = ToolUse("get_weather", '{"city": "Rome"}')
VLLM_THINKING = "The user wants Paris; I will call get_weather."


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


@pytest.fixture
def vllm_server() -> Iterator[FakeResponses]:
    with FakeResponses(flavor="vllm") as server:
        yield server  # type: ignore[misc]


def origin(server: FakeResponses) -> str:
    return f"openai-responses@127.0.0.1:{server.port}"


async def ask(model: OpenAIResponsesModel, question: str, log: MessageList | None = None, stream: bool = True) -> Any:
    """One question through a tool round on ``model``, continuing ``log``; the conversation."""
    builder = (
        (Conversation(messages=log.copy()).continuation if log is not None else llm)
        .model(model)
        .tools(get_weather)
        .reasoning(effort="low")
    )
    conversation = builder.request(question).prompt_conversation(stream=stream)
    try:
        async for _ in conversation:
            pass
    finally:
        await model.aclose()
    conversation.messages.validate()
    return conversation


def pieces(log: MessageList) -> list[Reasoning]:
    return [piece for message in log if isinstance(message, AssistantMessage) for piece in message.reasoning]


def reasoning_items(server: FakeResponses) -> list[list[dict[str, Any]]]:
    return [[item for item in body["input"] if item["type"] == "reasoning"] for body in server.bodies]


async def vllm_log(vllm_server: FakeResponses, stream: bool) -> MessageList:
    vllm_server.add(Thought(tool_calls=(PARIS,), thinking=VLLM_THINKING), Thought("Paris: 22 C.", thinking="Done."))
    conversation = await ask(make_responses(vllm_server, "gpt-oss-20b", api_key=None), "Paris?", stream=stream)
    return conversation.messages  # type: ignore[no-any-return]


async def openai_log(responses_server: FakeResponses, stream: bool) -> MessageList:
    responses_server.add(
        Thought(summaries=("Use the tool.",), tool_calls=(PARIS,)), Thought("Paris: 22 C.", summaries=("Done.",))
    )
    conversation = await ask(make_responses(responses_server, "o4-mini"), "Paris?", stream=stream)
    assert all(piece.redacted and piece.redacted.startswith("gAAAAA") for piece in pieces(conversation.messages))
    return conversation.messages  # type: ignore[no-any-return]


@pytest.mark.parametrize("stream", [True, False])
async def test_a_vllm_log_continues_on_openais_api_behind_another_base_url(
    vllm_server: FakeResponses, responses_server: FakeResponses, stream: bool
) -> None:
    """Before, vLLM's raw reasoning went to any non-default base URL: OpenAI's API behind a proxy answered 404
    "Item with id 'rs_…' not found. Items are not persisted when `store` is set to false"."""
    log = await vllm_log(vllm_server, stream)
    vllm_ids = list(vllm_server.reasoning_ids)
    responses_server.add(
        Thought(summaries=("Rome now.",), tool_calls=(ROME,)), Thought("Rome: 22 C.", summaries=("Rome done.",))
    )
    conversation = await ask(make_responses(responses_server, "o4-mini"), "And Rome?", log, stream=stream)
    assert responses_server.count == 2  # both requests accepted, none refused or retried
    for body in responses_server.bodies:
        sent = json.dumps(body)
        assert "reasoning_text" not in sent and VLLM_THINKING not in sent
        assert not any(ident in sent for ident in vllm_ids)
    # This server's own reasoning still goes back to it within the loop (it refuses the call without it).
    first, second = reasoning_items(responses_server)
    assert first == [] and [item["id"] for item in second] == responses_server.reasoning_ids[:1]
    assert second[0]["encrypted_content"] == pieces(conversation.messages)[2].redacted
    kept = pieces(conversation.messages)
    assert [piece.provider for piece in kept] == [origin(vllm_server)] * 2 + [origin(responses_server)] * 2
    assert [piece.id for piece in kept] == vllm_ids + responses_server.reasoning_ids
    assert conversation.messages[-1].content == "Rome: 22 C."


@pytest.mark.parametrize("stream", [True, False])
async def test_an_openai_log_continues_on_vllm_and_back(
    vllm_server: FakeResponses, responses_server: FakeResponses, stream: bool
) -> None:
    """Before, OpenAI's encrypted reasoning went to vLLM, which answered 400 (AssertionError)."""
    log = await openai_log(responses_server, stream)
    encrypted = [piece.redacted for piece in pieces(log)]
    vllm_server.add(Thought(tool_calls=(ROME,), thinking="Rome next."), Thought("Rome: 22 C.", thinking="Done."))
    on_vllm = await ask(make_responses(vllm_server, "gpt-oss-20b", api_key=None), "And Rome?", log, stream=stream)
    assert vllm_server.count == 2
    for body in vllm_server.bodies:
        sent = json.dumps(body)
        assert not any("encrypted_content" in item for item in body["input"])
        assert not any(token in sent for token in encrypted if token)
        assert not any(ident in sent for ident in responses_server.reasoning_ids)
    # vLLM's own reasoning goes back to it, as it came.
    assert reasoning_items(vllm_server)[1] == [
        {
            "type": "reasoning",
            "id": vllm_server.reasoning_ids[0],
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "Rome next."}],
        }
    ]
    assert [piece.provider for piece in pieces(on_vllm.messages)] == (
        [origin(responses_server)] * 2 + [origin(vllm_server)] * 2
    )

    # -- and back: the first server gets its own encrypted reasoning again, and none of vLLM's --------------------
    responses_server.add(Thought("Both 22 C.", summaries=("Compared.",)))
    back = await ask(make_responses(responses_server, "o4-mini"), "Compare?", on_vllm.messages, stream=stream)
    last = reasoning_items(responses_server)[-1]
    assert [item["id"] for item in last] == responses_server.reasoning_ids[:2]
    assert [item["encrypted_content"] for item in last] == encrypted
    assert "reasoning_text" not in json.dumps(responses_server.bodies[-1])
    assert len(pieces(back.messages)) == 5
    assert MessageList.from_json(back.messages.to_json()) == back.messages


async def test_a_log_from_openais_own_api_goes_back_there_only(
    vllm_server: FakeResponses, responses_server: FakeResponses
) -> None:
    """A piece that says plain ``openai-responses`` (OpenAI's own API, and every log written before origins were
    recorded) is replayed only to OpenAI's default base URL: neither vLLM nor another base URL gets it."""
    call = ToolCall(id="call_old", name="get_weather", arguments={"city": "Oslo"})
    old = Reasoning(text="Oslo first.", redacted="gAAAAA-from-api.openai.com", provider="openai-responses", id="rs_old")
    log = MessageList(
        [
            UserMessage(content="Oslo?"),
            AssistantMessage(tool_calls=[call], reasoning=[old], model="openai-responses:o4-mini"),
            ToolMessage(tool_call_id="call_old", tool_name="get_weather", content="22 C in Oslo"),
            AssistantMessage(content="Oslo: 22 C.", model="openai-responses:o4-mini"),
        ]
    )
    vllm_server.add(Thought("Rome: 22 C.", thinking="t"))
    responses_server.add(Thought("Rome: 22 C.", summaries=("s",)))
    for server, name in ((vllm_server, "gpt-oss-20b"), (responses_server, "o4-mini")):
        conversation = await ask(make_responses(server, name, api_key=None), "And Rome?", log)
        assert server.count == 1 and "rs_old" not in json.dumps(server.bodies[0])
        assert pieces(conversation.messages)[0] == old  # kept in the log as it was
    # OpenAI's own API still gets it back (built without a network: the default base URL is OpenAI's).
    openai = OpenAIResponsesModel("o4-mini", base_url="https://api.openai.com/v1", api_key="sk-test-0123456789")
    request = ModelRequest(messages=list(log), settings=ModelSettings(reasoning=ReasoningSettings(effort="low")))
    body, _, _ = openai._translate(request, stream=False)
    assert [item["id"] for item in body["input"] if item["type"] == "reasoning"] == ["rs_old"]


async def test_credentials_in_the_base_url_never_reach_the_log(responses_server: FakeResponses) -> None:
    base_url = f"http://reasoner:pa55-word@127.0.0.1:{responses_server.port}/v1"
    model = OpenAIResponsesModel("o4-mini", base_url=base_url, api_key=SECRET, retry_base_delay=0.01)
    assert model.origin == origin(responses_server)
    responses_server.add(Thought(summaries=("Tool.",), tool_calls=(PARIS,)), Thought("22 C.", summaries=("Ok.",)))
    conversation = await ask(model, "Paris?")
    assert responses_server.count == 2  # the loop replayed its reasoning and was accepted
    assert [piece.provider for piece in pieces(conversation.messages)] == [origin(responses_server)] * 2
    saved = conversation.messages.to_json()
    assert "pa55" not in saved and "reasoner" not in saved and SECRET not in saved and "/v1" not in saved


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.openai.com/v1",
        "https://api.openai.com/v1/",
        "HTTPS://API.OPENAI.COM/v1",
        "https://Api.OpenAI.com/v1/",
        "https://api.openai.com:443/v1",
    ],
)
def test_the_default_base_url_in_any_case_is_openais_own_api(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIResponsesModel("o4-mini", base_url=base_url, api_key="sk-test-0123456789").origin == "openai-responses"
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    assert OpenAIResponsesModel("o4-mini", api_key="sk-test-0123456789").origin == "openai-responses"
    # Before, only the exact default string counted as OpenAI's: raw reasoning text went to it and was refused (404).
    model = OpenAIResponsesModel("gpt-oss-120b", base_url=base_url, api_key="sk-test-0123456789")
    call = ToolCall(id="call_1", name="get_weather", arguments={})
    raw = Reasoning(text="Raw thinking.", provider="openai-responses", id="rs_raw")
    request = ModelRequest(
        messages=[
            UserMessage(content="q"),
            AssistantMessage(tool_calls=[call], reasoning=[raw]),
            ToolMessage(tool_call_id="call_1", tool_name="get_weather", content="r"),
        ]
    )
    body, _, _ = model._translate(request, stream=False)
    assert [item["type"] for item in body["input"]] == ["message", "function_call", "function_call_output"]


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:8000/v1", "openai-responses@127.0.0.1:8000"),
        ("http://LocalHost:8000/v1/", "openai-responses@localhost:8000"),
        ("https://user:pass@my-gw.Example.com/openai/v1?api-key=k3y", "openai-responses@my-gw.example.com"),
        ("https://res.openai.azure.com:8443/openai/v1", "openai-responses@res.openai.azure.com:8443"),
        ("http://[::1]:8000/v1", "openai-responses@[::1]:8000"),
        ("https://api.openai.com/v2", "openai-responses@api.openai.com"),  # not the default URL
        ("https://gw.example.com:443/v1", "openai-responses@gw.example.com"),  # the scheme's default port
        ("http://gw.example.com:80/v1", "openai-responses@gw.example.com"),
        ("http://gw.example.com:443/v1", "openai-responses@gw.example.com:443"),
    ],
)
def test_another_server_is_named_by_its_host_and_port_only(base_url: str, expected: str) -> None:
    assert origin_of(base_url) == expected
