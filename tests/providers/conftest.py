"""Fixtures of the provider tests: fake servers on 127.0.0.1 and adapters pointed at them.

Models are made per test and closed at its end, on the test's own event loop, so no pooled connection outlives
the loop it belongs to. Backoff is shortened (``retry_base_delay``) so retry tests stay fast; ``Retry-After`` is
still honoured in full.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel

from .servers import FakeAnthropic, FakeOpenAI, FakeServer

SECRET = "sk-test-SECRET0123456789abcdef"


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server  # type: ignore[misc]


def make_openai(server: FakeOpenAI, model: str = "gpt-4o-mini", **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("retry_base_delay", 0.01)
    return OpenAIModel(model, base_url=server.base_url, **kwargs)


def make_anthropic(server: FakeAnthropic, model: str = "claude-haiku-4-5", **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("retry_base_delay", 0.01)
    return AnthropicModel(model, base_url=server.base_url, **kwargs)


@pytest.fixture
async def openai_model(openai_server: FakeOpenAI) -> AsyncIterator[OpenAIModel]:
    model = make_openai(openai_server)
    yield model
    await model.aclose()


@pytest.fixture
async def anthropic_model(anthropic_server: FakeAnthropic) -> AsyncIterator[AnthropicModel]:
    model = make_anthropic(anthropic_server)
    yield model
    await model.aclose()


@dataclass
class Provider:
    """One adapter and its fake server, for tests that run on both."""

    name: str
    server: FakeServer
    model: Any


@pytest.fixture(params=["openai", "anthropic"])
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    server: FakeServer
    if request.param == "openai":
        server = FakeOpenAI().start()
        model: Any = make_openai(server)  # type: ignore[arg-type]
    else:
        server = FakeAnthropic().start()
        model = make_anthropic(server)  # type: ignore[arg-type]
    try:
        yield Provider(request.param, server, model)
    finally:
        await model.aclose()
        server.stop()
