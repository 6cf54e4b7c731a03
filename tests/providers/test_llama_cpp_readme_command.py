"""The README's llama.cpp server command serves the README's tool example for a whole turn: with the server's default
context, 2,048 tokens, the example's tool loop overflowed it (HTTP 400) after about six of its ten rounds.

The server is started with exactly the options the README's command gives (read from the README, so the two cannot
drift apart), on a free port; the turn runs the README's ``get_weather`` loop with its default ten rounds, the
``llama-cpp-python`` preset, and a small ``max_tokens`` per call so the test stays short (the prompt, which is what
overflowed, grows the same).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from threadline import AssistantMessage, llm
from threadline.models.openai import OpenAIModel

from .llama_server import LLAMA_CPP_MODEL, RunningServer, ServerDidNotStart, free_port, start_server

README = Path(__file__).resolve().parents[2] / "README.md"
LAUNCHER = "python -m threadline.llama_cpp_server"


def readme_server_options() -> list[str]:
    """The options of the README's ``python -m threadline.llama_cpp_server …`` command (its comment left out)."""
    commands = [line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith(LAUNCHER)]
    assert len(commands) == 1, f"the README should show one {LAUNCHER} command, not {len(commands)}"
    return shlex.split(commands[0].partition("#")[0])[len(LAUNCHER.split()) :]


def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name.
    """
    return f"22 C and sunny in {city}"


@pytest.fixture(scope="module")
def readme_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    port = free_port()
    command = [sys.executable, "-m", "threadline.llama_cpp_server", *readme_server_options()]
    command += ["--host", "127.0.0.1", "--port", str(port), "--model_alias", LLAMA_CPP_MODEL, "--verbose", "False"]
    log_path = tmp_path_factory.mktemp("llama-readme") / "server.log"
    try:
        server = start_server(command, f"http://127.0.0.1:{port}/v1", log_path)
    except ServerDidNotStart as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def test_the_readme_command_gives_a_context_for_ten_tool_rounds() -> None:
    options = readme_server_options()
    assert "--chat_format" in options and "chatml-function-calling" in options
    assert int(options[options.index("--n_ctx") + 1]) >= 8192


async def test_the_readme_tool_example_runs_its_ten_rounds_on_the_readme_server(readme_server: RunningServer) -> None:
    model = OpenAIModel(LLAMA_CPP_MODEL, base_url=readme_server.base_url, server="llama-cpp-python")
    try:
        conversation = (
            llm.model(model)
            .tools(get_weather)
            .request("Weather in Paris?")
            .prompt_conversation(max_tokens=48, temperature=0.0)
        )
        messages = [message async for message in conversation]
    finally:
        await model.aclose()
    failures = [m.error for m in messages if isinstance(m, AssistantMessage) and m.error is not None]
    assert failures == []  # before: a 400 "exceeds the context window" once the log passed 2,048 tokens
    assert conversation.last_turn.stop_reason in ("end", "max_tool_rounds", "length")
    conversation.messages.validate()
