"""An OpenAI-compatible server is sent a default output cap, ``max_tokens`` 4096, when the turn sets none: before,
nothing bounded an answer, and a small local model that never stopped ran 7,547 tokens (8.5 minutes). The turn's
``max_tokens`` replaces the cap; OpenAI's own API is sent none, as before."""

from __future__ import annotations

import json

import httpx

from tests.providers.conftest import make_openai
from tests.providers.servers import FakeOpenAI
from threadline import llm
from threadline.models.openai import COMPATIBLE_MAX_TOKENS, OpenAIModel


async def test_a_compatible_server_gets_the_default_cap(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, "smollm2")
    openai_server.reply("Hello.")
    try:
        assert await llm.model(model).request("hi").prompt_async() == "Hello."
    finally:
        await model.aclose()
    assert COMPATIBLE_MAX_TOKENS == 4096
    assert openai_server.bodies[0]["max_tokens"] == 4096


async def test_the_turns_max_tokens_lifts_the_cap(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, "smollm2")
    openai_server.reply("A long story.", "Short.")
    try:
        await llm.model(model).request("A story").prompt_async(max_tokens=20_000)
        await llm.model(model).request("A word").prompt_async(max_tokens=5)
    finally:
        await model.aclose()
    assert [body["max_tokens"] for body in openai_server.bodies] == [20_000, 5]


async def test_openais_own_api_gets_no_cap() -> None:
    sent: list[dict[str, object]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        message = {"role": "assistant", "content": "Hello."}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return httpx.Response(200, json={"id": "c", "model": "gpt-4o-mini", "choices": [choice]})

    transport = httpx.MockTransport(answer)
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test", transport=transport)
    assert model.base_url == "https://api.openai.com/v1"
    try:
        assert await llm.model(model).request("hi").prompt_async(stream=False) == "Hello."
    finally:
        await model.aclose()
    assert len(sent) == 1 and "max_tokens" not in sent[0] and "max_completion_tokens" not in sent[0]
