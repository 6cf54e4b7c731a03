"""GPT-5.2 and later on Chat Completions (``openai:``), over real HTTP against a fake that keeps OpenAI's rule: a
request with function tools and a ``reasoning_effort`` is refused with HTTP 400 ("Function tools with
reasoning_effort are not supported for gpt-5.4 in /v1/chat/completions"), and GPT-5.6, which applies a default
effort, refuses tools unless the request says ``"none"``. Tool loops on these models work; asking for reasoning
together with tools is a `CapabilityError` before anything is sent, naming the API that takes both."""

from __future__ import annotations

import pytest

from threadline import CapabilityError, llm

from .conftest import make_openai
from .servers import Answer, FakeOpenAI, ToolUse

PARIS = ToolUse("get_weather", '{"city": "Paris"}')


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("name", "effort"),
    [
        ("gpt-5.4", None),
        ("gpt-5.2-2025-12-11", None),
        ("gpt-5.3-codex", None),
        ("gpt-5.6-sol", "none"),
        ("gpt-5.6", "none"),
        ("gpt-5.7", "none"),
        ("gpt-5.10", "none"),
    ],
)
async def test_a_tool_loop_runs(openai_server: FakeOpenAI, name: str, effort: str | None, stream: bool) -> None:
    model = make_openai(openai_server, name)
    openai_server.add(Answer(tool_calls=(PARIS,)), Answer("22 C and sunny."))
    try:
        conversation = (
            llm.model(model).tools(get_weather).request("Weather in Paris?").prompt_conversation(stream=stream)
        )
        messages = [message async for message in conversation]
    finally:
        await model.aclose()
    assert messages[-1].content == "22 C and sunny."
    assert [body.get("reasoning_effort") for body in openai_server.bodies] == [effort, effort]


async def test_without_tools_the_effort_asked_for_is_sent(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, "gpt-5.6-luna")
    openai_server.add(Answer("Paris."), Answer("Paris."))
    try:
        await llm.model(model).reasoning(effort="high").request("Capital of France?").prompt_async()
        await llm.model(model).request("Capital of France?").prompt_async()
    finally:
        await model.aclose()
    assert openai_server.bodies[0]["reasoning_effort"] == "high"
    assert "reasoning_effort" not in openai_server.bodies[1]  # the model's own default, with no tools to refuse


@pytest.mark.parametrize("name", ["gpt-5.4", "gpt-5.5", "gpt-5.6-terra", "gpt-5.3-codex", "gpt-5.7", "gpt-5.10"])
async def test_reasoning_with_tools_is_refused_before_sending(openai_server: FakeOpenAI, name: str) -> None:
    model = make_openai(openai_server, name)
    try:
        with pytest.raises(CapabilityError) as caught:
            await llm.model(model).tools(get_weather).reasoning(effort="low").request("Weather?").prompt_async()
    finally:
        await model.aclose()
    assert f"use openai-responses:{name}" in str(caught.value)
    assert "Function tools with reasoning_effort are not supported" in str(caught.value)
    assert openai_server.bodies == []


@pytest.mark.parametrize("name", ["gpt-5-mini", "gpt-5.1"])
async def test_earlier_models_take_both(openai_server: FakeOpenAI, name: str) -> None:
    model = make_openai(openai_server, name)
    openai_server.add(Answer(tool_calls=(PARIS,)), Answer("22 C."))
    try:
        text = await llm.model(model).tools(get_weather).reasoning(effort="low").request("Weather?").prompt_async()
    finally:
        await model.aclose()
    assert str(text) == "22 C."
    assert [body["reasoning_effort"] for body in openai_server.bodies] == ["low", "low"]


async def test_the_fake_keeps_openais_rule(openai_server: FakeOpenAI) -> None:
    """What the rule above protects against, straight from the fake: the 400 and OpenAI's words."""
    import httpx

    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    async with httpx.AsyncClient() as client:
        url = f"{openai_server.base_url}/chat/completions"
        plain = {"model": "gpt-5.6-sol", "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}
        refused = await client.post(url, json=plain)
        old = {**plain, "model": "gpt-5.4", "reasoning_effort": "low"}
        refused_old = await client.post(url, json=old)
    assert refused.status_code == 400
    assert "set reasoning_effort to 'none'" in refused.json()["error"]["message"]
    assert refused_old.status_code == 400
    assert "Please use /v1/responses instead" in refused_old.json()["error"]["message"]
