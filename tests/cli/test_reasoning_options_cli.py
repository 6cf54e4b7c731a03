"""``--reasoning low|medium|high`` and ``--reasoning-budget TOKENS`` on ``prompt`` and ``chat`` ask a reasoning model
to think (the builder's ``.reasoning(effort=…, budget_tokens=…)``), so ``--show-reasoning`` has something to show; a
model without reasoning refuses them with one line, exit code 2, before anything is sent or stored.

The models are the fake Anthropic (thinking) and OpenAI servers on 127.0.0.1, through ``ANTHROPIC_BASE_URL`` and
``OPENAI_BASE_URL``; the commands run in a subprocess as a user runs them."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import Answer, FakeOpenAI
from tests.providers.servers.anthropic_thinking import FakeAnthropicThinking, Think, Thought
from threadline.store import open_store

from ._run import run_cli

CLAUDE = "anthropic:claude-sonnet-4-5"
THOUGHT = "Nine point eight has eight tenths."


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropicThinking]:
    with FakeAnthropicThinking() as fake:
        yield fake


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def threadline(
    *args: str, base_urls: dict[str, str], store_url: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    keys = {"ANTHROPIC_API_KEY": "sk-ant-test-reasoning-options", "OPENAI_API_KEY": "sk-test-reasoning-options"}
    return run_cli(
        *args,
        store_url=store_url,
        env={**keys, **base_urls},
        unset=("NO_COLOR", "FORCE_COLOR"),
        stdin=stdin if stdin is not None else "",
    )


def thinking_asked(server: FakeAnthropicThinking) -> list[object]:
    return [request.json.get("thinking") for request in server.requests]


def test_prompt_reasoning_budget_turns_claude_thinking_on_and_show_reasoning_shows_it(
    anthropic: FakeAnthropicThinking, tmp_path: Path
) -> None:
    anthropic.add(Thought(blocks=(Think(THOUGHT), "9.8 is greater.")))
    done = threadline(
        "prompt", "-m", CLAUDE, "--reasoning-budget", "2048", "--max-tokens", "4096", "--show-reasoning",
        "9.11 or 9.8?",
        base_urls={"ANTHROPIC_BASE_URL": anthropic.base_url}, store_url=f"sqlite:///{tmp_path / 's.db'}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert thinking_asked(anthropic) == [{"type": "enabled", "budget_tokens": 2048}]
    assert done.stdout == "9.8 is greater.\n"
    assert THOUGHT in done.stderr


def test_prompt_reasoning_effort_is_sent_as_a_budget_to_claude_and_an_effort_to_openai(
    anthropic: FakeAnthropicThinking, openai: FakeOpenAI, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 's.db'}"
    anthropic.add(Thought(blocks=(Think(THOUGHT), "Yes.")))
    done = threadline(
        "prompt", "-m", CLAUDE, "--reasoning", "low", "Think?",
        base_urls={"ANTHROPIC_BASE_URL": anthropic.base_url}, store_url=store_url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (asked,) = thinking_asked(anthropic)
    assert isinstance(asked, dict) and asked["type"] == "enabled" and asked["budget_tokens"] >= 1024

    openai.add(Answer("Yes."))
    done = threadline(
        "prompt", "-m", "openai:o4-mini", "--reasoning", "high", "Think?",
        base_urls={"OPENAI_BASE_URL": openai.base_url}, store_url=store_url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert openai.requests[-1].json["reasoning_effort"] == "high"


def test_chat_asks_for_thinking_on_every_turn(anthropic: FakeAnthropicThinking, tmp_path: Path) -> None:
    anthropic.add(Thought(blocks=(Think("First thought."), "One.")), Thought(blocks=(Think("Second thought."), "Two.")))
    done = threadline(
        "chat", "-m", CLAUDE, "--reasoning-budget", "1024", "--show-reasoning",
        base_urls={"ANTHROPIC_BASE_URL": anthropic.base_url}, store_url=f"sqlite:///{tmp_path / 's.db'}",
        stdin="first\nsecond\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert thinking_asked(anthropic) == [{"type": "enabled", "budget_tokens": 1024}] * 2
    assert done.stdout == "One.\nTwo.\n"
    assert "First thought." in done.stderr and "Second thought." in done.stderr


@pytest.mark.parametrize("command", ["prompt", "chat"])
@pytest.mark.parametrize("option", [("--reasoning", "medium"), ("--reasoning-budget", "2000")])
def test_a_model_without_reasoning_refuses_the_options_before_anything_is_sent_or_stored(
    openai: FakeOpenAI, tmp_path: Path, command: str, option: tuple[str, str]
) -> None:
    store_url = f"sqlite:///{tmp_path / 's.db'}"
    args = ("prompt", "hi") if command == "prompt" else ("chat",)
    done = threadline(
        *args, "-m", "openai:gpt-4o-mini", *option,
        base_urls={"OPENAI_BASE_URL": openai.base_url}, store_url=store_url, stdin="hi\n",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("Error: model 'openai:gpt-4o-mini' takes no reasoning settings")
    assert openai.requests == []
    with open_store(store_url) as store:
        assert store.list_conversations() == []


def test_the_options_are_checked_on_the_command_line(openai: FakeOpenAI, tmp_path: Path) -> None:
    base_urls = {"OPENAI_BASE_URL": openai.base_url}
    store_url = f"sqlite:///{tmp_path / 's.db'}"
    for option in (("--reasoning", "extreme"), ("--reasoning-budget", "0")):
        done = threadline("prompt", "-m", "openai:o4-mini", *option, "hi", base_urls=base_urls, store_url=store_url)
        assert done.returncode == 2 and option[0] in done.stderr
    assert openai.requests == []
