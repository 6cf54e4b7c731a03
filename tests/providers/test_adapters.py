"""Both adapters end to end, through the public API, against fake servers over real HTTP on 127.0.0.1."""

from __future__ import annotations

from decimal import Decimal

import pytest

from threadline import AssistantMessage, Conversation, Cost, ToolMessage, Usage, UserMessage, get_model, llm
from threadline._sync import run_sync
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel
from threadline.pricing.prices import prices_version

from .conftest import SECRET, Provider, make_openai
from .servers import Answer, FakeAnthropic, FakeOpenAI, ToolUse


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


@pytest.mark.parametrize("stream", [True, False])
async def test_text_answer_streams_and_is_logged_with_usage(provider: Provider, stream: bool) -> None:
    provider.server.add(Answer("Paris is the capital of France.", input_tokens=12, output_tokens=8))
    text = llm.model(provider.model).request("Capital of France?").stream(stream=stream)
    shown = [piece async for piece in text]
    assert text.conversation is not None
    log = text.conversation.messages
    user_message, answer = log
    assert isinstance(user_message, UserMessage) and isinstance(answer, AssistantMessage)
    assert answer.content == "Paris is the capital of France."
    assert answer.model == provider.model.name
    # Priced from the wire's counts: gpt-4o-mini at $0.15/$0.60 per million tokens, claude-haiku-4-5 at $1/$5.
    usd = {"openai:gpt-4o-mini": "0.0000066", "anthropic:claude-haiku-4-5": "0.000052"}[answer.model]
    assert answer.usage == Usage(input_tokens=12, output_tokens=8, cost=Cost(usd=Decimal(usd), prices=prices_version()))
    assert "".join(shown) == answer.content
    if stream:
        assert len(shown) > 1  # it arrived in pieces
    body = provider.server.bodies[0]
    assert body.get("stream", False) is stream
    log.validate()


async def test_builder_stream_yields_text_as_it_arrives(provider: Provider) -> None:
    provider.server.add(Answer("one two three four five"))
    pieces = [piece async for piece in llm.model(provider.model).request("count").stream()]
    assert "".join(pieces) == "one two three four five"
    assert len(pieces) > 1


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_round_trip_keeps_ids_and_real_names(provider: Provider, stream: bool) -> None:
    provider.server.add(
        Answer(tool_calls=(ToolUse("get_weather", '{"city": "Paris"}', id="call_Paris1"),)),
        Answer("It is 22 C and sunny in Paris."),
    )
    conversation = (
        llm.model(provider.model).tools(get_weather).request("Weather in Paris?").prompt_conversation(stream=stream)
    )
    messages = [message async for message in conversation]
    call_message, result, answer = messages
    assert isinstance(call_message, AssistantMessage) and isinstance(result, ToolMessage)
    assert call_message.tool_calls[0].id == "call_Paris1"
    assert call_message.tool_calls[0].name == "get_weather"
    assert call_message.tool_calls[0].arguments == {"city": "Paris"}
    assert result.tool_call_id == "call_Paris1" and result.content == "22 C and sunny in Paris" and not result.is_error
    assert answer.content == "It is 22 C and sunny in Paris."
    conversation.messages.validate()
    assert provider.server.count == 2
    second = provider.server.bodies[1]
    if provider.name == "openai":
        assert second["messages"][-2]["tool_calls"][0]["id"] == "call_Paris1"
        assert second["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_Paris1",
            "content": "22 C and sunny in Paris",
        }
    else:
        assert second["messages"][-2]["content"][0]["id"] == "call_Paris1"
        assert second["messages"][-1]["content"] == [
            {"type": "tool_result", "tool_use_id": "call_Paris1", "content": "22 C and sunny in Paris"}
        ]


async def test_a_tool_name_with_a_dot_travels_as_a_wire_name_and_comes_back_real(provider: Provider) -> None:
    class Notes:
        def __init__(self) -> None:
            self.items: list[str] = []

        def add_note(self, text: str) -> str:
            """Add a note."""
            self.items.append(text)
            return "saved"

    from threadline import Toolset

    notes = Notes()
    provider.server.add(Answer(tool_calls=(ToolUse("Notes_add_note", '{"text": "milk"}'),)), Answer("Noted."))
    conversation = (
        llm.model(provider.model).tools(Toolset.from_object(notes)).request("remember milk").prompt_conversation()
    )
    messages = [message async for message in conversation]
    assert messages[0].tool_calls[0].name == "Notes.add_note"  # type: ignore[union-attr]
    assert notes.items == ["milk"]
    first = provider.server.bodies[0]
    names = (
        [t["function"]["name"] for t in first["tools"]]
        if provider.name == "openai"
        else [t["name"] for t in first["tools"]]
    )
    assert names == ["Notes_add_note"]


async def test_authentication_headers(openai_server: FakeOpenAI) -> None:
    openai_server.reply("hi", "hi")
    with_key = make_openai(openai_server)
    without = make_openai(openai_server, api_key="")
    try:
        await llm.model(with_key).request("x").prompt_async()
        await llm.model(without).request("x").prompt_async()
    finally:
        await with_key.aclose()
        await without.aclose()
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert "authorization" not in openai_server.requests[1].headers  # a local server may need no key


async def test_anthropic_headers(anthropic_server: FakeAnthropic, anthropic_model: AnthropicModel) -> None:
    anthropic_server.reply("hi")
    await llm.model(anthropic_model).request("x").prompt_async()
    headers = anthropic_server.requests[0].headers
    assert headers["x-api-key"] == SECRET
    assert headers["anthropic-version"] == "2023-06-01"
    assert anthropic_server.requests[0].path == "/v1/messages"


async def test_environment_configures_models_resolved_by_name(
    openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
    openai_server.reply("from env")
    model = get_model("openai:gpt-4o-mini-envtest")  # a name no other test caches
    try:
        assert isinstance(model, OpenAIModel)
        assert await llm.model("openai:gpt-4o-mini-envtest").request("x").prompt_async() == "from env"
    finally:
        await model.aclose()
    request = openai_server.requests[0]
    assert request.headers["authorization"] == "Bearer sk-from-env-0123456789"
    assert request.json["model"] == "gpt-4o-mini-envtest"


async def test_anthropic_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-0123")
        server.reply("hello")
        model = get_model("anthropic:claude-haiku-4-5-envtest")
        try:
            assert isinstance(model, AnthropicModel)
            assert await llm.model(model).request("x").prompt_async() == "hello"
        finally:
            await model.aclose()
        assert server.requests[0].headers["x-api-key"] == "sk-ant-from-env-0123"


def test_sync_prompt_outside_an_event_loop(openai_server: FakeOpenAI) -> None:
    openai_server.reply("sync works", "and again")
    model = make_openai(openai_server)
    try:
        assert llm.model(model).request("x").prompt() == "sync works"
        assert llm.model(model).request("y").prompt() == "and again"  # the pooled client is reused
    finally:
        run_sync(model.aclose())
    assert openai_server.count == 2


async def test_keys_never_reach_reprs_logs_or_errors(provider: Provider) -> None:
    provider.server.reply("fine")
    conversation = llm.model(provider.model).request("x").prompt_conversation()
    async for _ in conversation:
        pass
    assert SECRET not in repr(provider.model)
    assert SECRET not in conversation.messages.to_json()
    assert SECRET not in repr(provider.model._endpoint)


async def test_conversation_object_continues_with_a_follow_up(provider: Provider) -> None:
    provider.server.reply("Paris.", "Rome.")
    conversation = Conversation()
    first = await conversation.continuation.model(provider.model).request("Capital of France?").prompt_async()
    second = await conversation.continuation.request("And Italy?").prompt_async()
    assert (first, second) == ("Paris.", "Rome.")
    assert [type(m) for m in conversation.messages] == [UserMessage, AssistantMessage, UserMessage, AssistantMessage]
    body = provider.server.bodies[1]
    texts = [str(m["content"]) for m in body["messages"]]
    assert any("Capital of France?" in t for t in texts) and any("Paris." in t for t in texts)


async def test_a_proxy_from_the_environment_is_used(openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake server plays the proxy: it receives the request in absolute form for the upstream host, which is
    # never contacted (nor even resolved).
    upstream = "http://api.upstream.test/v1"
    openai_server.path = f"{upstream}/chat/completions"
    monkeypatch.setenv("HTTP_PROXY", openai_server.root)
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    openai_server.reply("via the proxy")
    model = OpenAIModel("gpt-4o-mini", base_url=upstream, api_key=SECRET)
    try:
        assert await llm.model(model).request("x").prompt_async() == "via the proxy"
    finally:
        await model.aclose()
    assert openai_server.requests[0].path == f"{upstream}/chat/completions"


def test_no_proxy_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from threadline.models.http._transport import _proxy_for

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "localhost,api.internal.test")
    monkeypatch.delenv("no_proxy", raising=False)
    assert _proxy_for(httpx.URL("https://api.openai.com/v1")) == "http://proxy.internal:3128"
    assert _proxy_for(httpx.URL("https://api.internal.test/v1")) is None
