"""Where ``--show-reasoning`` puts the model's thinking as it streams: on stderr only, so stdout is the same answer
with or without the flag, and, when stdout and stderr reach one screen or file (``2>&1``), on lines of its own with
no blank lines stacked around it; where it cannot be dimmed (off a terminal, ``NO_COLOR``) it is marked
``thinking ›`` and followed by a blank line, so it does not read as part of the answer.

The model is the fake Anthropic (thinking) server on 127.0.0.1, through ``ANTHROPIC_BASE_URL``, thinking between the
text blocks and tool calls of one answer (interleaved thinking); the commands run in a subprocess, as a user runs
them."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import ToolUse
from tests.providers.servers.anthropic_thinking import FakeAnthropicThinking, Think, Thought

from ._run import run_cli

CLAUDE = "anthropic:claude-opus-4-8"
DIM = "\x1b[2m"


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropicThinking]:
    with FakeAnthropicThinking() as fake:
        yield fake


@pytest.fixture
def weather(tmp_path: Path) -> str:
    path = tmp_path / "weather.py"
    path.write_text(
        'def get_weather(city: str) -> str:\n    """Weather for a city."""\n    return f"22 C in {city}"\n',
        encoding="utf-8",
    )
    return f"{path}:get_weather"


def interleaved(server: FakeAnthropicThinking) -> None:
    server.add(
        Thought(
            blocks=(
                Think("plan"),
                "Checking Paris.",
                ToolUse("get_weather", '{"city": "Paris"}'),
                Think("now Rome"),
                "Now Rome.",
                ToolUse("get_weather", '{"city": "Rome"}'),
            )
        ),
        Thought(blocks=(Think("done"), "Both 22 C.")),
    )


def threadline(
    *args: str, server: FakeAnthropicThinking, merged: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    keys = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-ant-test-thinking-layout"}
    unset = [name for name in ("NO_COLOR", "FORCE_COLOR", "TERM") if name not in env]
    # --no-log everywhere: the store named here is never opened.
    return run_cli(*args, store_url="memory://", env={**keys, **env}, unset=unset, columns=100, merged=merged)


def prompt(server: FakeAnthropicThinking, weather: str, *flags: str, merged: bool = False, **env: str) -> str:
    interleaved(server)
    done = threadline(
        "prompt", "--no-log", "-m", CLAUDE, "--reasoning", "high", "-T", weather, *flags, "Paris and Rome?",
        server=server, merged=merged, **env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_stdout_is_the_same_answer_with_or_without_show_reasoning(
    anthropic: FakeAnthropicThinking, weather: str
) -> None:
    answer = "Checking Paris.\n\nNow Rome.\nBoth 22 C.\n"  # the two text blocks of one answer, then the next answer
    assert prompt(anthropic, weather) == answer
    assert prompt(anthropic, weather, "--show-reasoning") == answer


def test_on_one_screen_the_thinking_has_lines_of_its_own_and_no_blank_lines_stacked_around_it(
    anthropic: FakeAnthropicThinking, weather: str
) -> None:
    dimmed = prompt(anthropic, weather, "--show-reasoning", merged=True, FORCE_COLOR="1")
    shown = re.sub("\x1b\\[[0-9;]*m", "", dimmed)
    assert DIM + "now Rome" in dimmed
    assert shown.startswith("plan\nChecking Paris.\nnow Rome\n\nNow Rome.\n╭")
    assert shown.endswith("╯\ndone\nBoth 22 C.\n")  # after the tool boxes: no "\n\n" before the next thinking
    assert "\n\n\n" not in shown


@pytest.mark.parametrize("env", [{}, {"FORCE_COLOR": "1", "NO_COLOR": "1"}], ids=["2>&1 to a pipe", "NO_COLOR"])
def test_thinking_that_cannot_be_dimmed_is_marked_and_set_apart_from_the_answer(
    anthropic: FakeAnthropicThinking, env: dict[str, str]
) -> None:
    anthropic.add(Thought(blocks=(Think("I think the answer is 5."), "The answer is 4.")))
    done = threadline(
        "prompt", "--no-log", "-m", CLAUDE, "--reasoning", "high", "--show-reasoning", "2+2?",
        server=anthropic, merged=True, **env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert DIM not in done.stdout
    assert done.stdout == "thinking › I think the answer is 5.\n\nThe answer is 4.\n"


def test_interleaved_thinking_that_cannot_be_dimmed_is_marked_where_it_comes(
    anthropic: FakeAnthropicThinking, weather: str
) -> None:
    shown = prompt(anthropic, weather, "--show-reasoning", merged=True)
    assert shown.startswith("thinking › plan\n\nChecking Paris.\nthinking › now Rome\n\nNow Rome.\n╭")
    assert shown.endswith("╯\nthinking › done\n\nBoth 22 C.\n")
    assert "\n\n\n" not in shown
    separate = prompt(anthropic, weather, "--show-reasoning")  # stdout alone: the answer only
    assert separate == "Checking Paris.\n\nNow Rome.\nBoth 22 C.\n"
