"""``--show-reasoning`` as a user runs it: ``threadline prompt`` and ``threadline chat`` against a compatible server
that thinks (the fake on 127.0.0.1, through ``OPENAI_BASE_URL``) show the thinking dimmed on stderr as it streams,
before the answer, and nothing of it without the flag; ``threadline logs show --show-reasoning`` prints each
assistant message's thinking under it, and ``--json`` keeps the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import ToolUse
from tests.providers.servers.compatible import FakeCompatible, Thinking
from threadline import AssistantMessage, Conversation, MessageList, Reasoning, ToolCall, ToolMessage, user
from threadline.store import open_store

MODEL = "openai:DeepSeek-R1-Distill-Qwen-1.5B"
THOUGHT = "The user compares 9.11 and 9.8; the tenths digit decides."
ANSWER = "9.8 is greater."
DIM = "\x1b[2m"


@pytest.fixture
def server() -> Iterator[FakeCompatible]:
    fake = FakeCompatible().start()
    try:
        yield fake  # type: ignore[misc]
    finally:
        fake.stop()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def threadline(
    *args: str, server: FakeCompatible, store_url: str, stdin: str | None = None, merged: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-reasoning-cli",
        "THREADLINE_STORE": store_url,
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "200",
        **env,
    }
    for name in ("NO_COLOR", "FORCE_COLOR"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        env=environment,
        input=stdin,
        timeout=120,
    )


def only_conversation(store_url: str) -> str:
    with open_store(store_url) as store:
        (info,) = store.list_conversations()
    return info.id


def test_prompt_shows_the_thinking_before_the_answer_and_only_when_asked(
    server: FakeCompatible, store_url: str
) -> None:
    server.add(Thinking(ANSWER, reasoning=THOUGHT))
    done = threadline("prompt", "-m", MODEL, "--show-reasoning", "9.11 or 9.8?", server=server, store_url=store_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"  # stdout carries the answer only
    assert THOUGHT + "\n" in done.stderr  # off a terminal: plain text, on its own line
    assert DIM not in done.stderr

    # Both streams on one pipe: the thinking comes first, then the answer.
    server.add(Thinking(ANSWER, reasoning=THOUGHT))
    merged = threadline(
        "prompt", "-m", MODEL, "--show-reasoning", "--no-log", "Again?", server=server, store_url=store_url, merged=True
    )
    assert merged.returncode == 0, merged.stdout
    assert merged.stdout.index(THOUGHT) < merged.stdout.index(ANSWER)

    server.add(Thinking(ANSWER, reasoning=THOUGHT))
    hidden = threadline("prompt", "-m", MODEL, "--no-log", "9.11 or 9.8?", server=server, store_url=store_url)
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout == ANSWER + "\n"
    assert "tenths" not in hidden.stdout + hidden.stderr


def test_on_a_terminal_the_thinking_is_dim_and_no_color_makes_it_plain(server: FakeCompatible, store_url: str) -> None:
    first_piece = THOUGHT[:5]  # the fake streams the thinking in pieces of five characters
    server.add(Thinking(ANSWER, reasoning=THOUGHT))
    colour = threadline(
        "prompt", "-m", MODEL, "--show-reasoning", "--no-log", "Q?", server=server, store_url=store_url, FORCE_COLOR="1"
    )
    assert colour.returncode == 0, colour.stderr
    assert DIM + first_piece in colour.stderr
    assert ANSWER in colour.stdout

    server.add(Thinking(ANSWER, reasoning=THOUGHT))
    plain = threadline(
        "prompt",
        "-m",
        MODEL,
        "--show-reasoning",
        "--no-log",
        "Q?",
        server=server,
        store_url=store_url,
        FORCE_COLOR="1",
        NO_COLOR="1",
    )
    assert plain.returncode == 0, plain.stderr
    assert first_piece in plain.stderr and DIM + first_piece not in plain.stderr


def test_chat_shows_the_thinking_of_every_turn(server: FakeCompatible, store_url: str) -> None:
    server.add(Thinking(ANSWER, reasoning=THOUGHT), Thinking("Yes.", reasoning="Sure: 0.8 > 0.11."))
    done = threadline(
        "chat", "-m", MODEL, "--show-reasoning", server=server, store_url=store_url, stdin="9.11 or 9.8?\nSure?\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{ANSWER}\nYes.\n"
    assert THOUGHT in done.stderr and "Sure: 0.8 > 0.11." in done.stderr

    server.add(Thinking("Hm.", reasoning="Hidden thought."))
    quiet = threadline("chat", "-m", MODEL, "--no-log", server=server, store_url=store_url, stdin="Think.\n")
    assert quiet.returncode == 0, quiet.stderr
    assert "Hidden thought." not in quiet.stdout + quiet.stderr


def test_logs_show_prints_the_thinking_under_each_answer_and_json_keeps_it(
    server: FakeCompatible, store_url: str
) -> None:
    server.add(
        Thinking(tool_calls=(ToolUse("celsius_to_fahrenheit", '{"celsius": 20}'),), reasoning="Use the tool."),
        Thinking("20 °C is 68 °F.", reasoning="The tool said 68."),
    )
    workdir = Path(store_url.removeprefix("sqlite:///")).parent
    (workdir / "units.py").write_text(
        "def celsius_to_fahrenheit(celsius: float) -> str:\n"
        '    """Convert Celsius to Fahrenheit."""\n'
        '    return f"{celsius * 9 / 5 + 32:g} °F"\n',
        encoding="utf-8",
    )
    done = threadline(
        "prompt", "-m", MODEL, "-T", str(workdir / "units.py") + ":celsius_to_fahrenheit", "20 C in F?",
        server=server, store_url=store_url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    conversation_id = only_conversation(store_url)

    shown = threadline("logs", "show", conversation_id, "--show-reasoning", server=server, store_url=store_url)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "thinking · openai: Use the tool." in out and "thinking · openai: The tool said 68." in out
    assert out.index("Use the tool.") < out.index("celsius_to_fahrenheit") < out.index("The tool said 68.")
    assert out.index("The tool said 68.") < out.index("20 °C is 68 °F.")  # each under its own message, before its text

    plain = threadline("logs", "show", conversation_id, server=server, store_url=store_url)
    assert plain.returncode == 0, plain.stderr
    assert "20 °C is 68 °F." in plain.stdout and "The tool said 68." not in plain.stdout

    as_json = threadline("logs", "show", conversation_id, "--json", server=server, store_url=store_url)
    assert as_json.returncode == 0, as_json.stderr
    messages = json.loads(as_json.stdout)["messages"]
    assert [m.get("reasoning") for m in messages if m["role"] == "assistant"] == [
        [{"text": "Use the tool.", "provider": "openai"}],
        [{"text": "The tool said 68.", "provider": "openai"}],
    ]


def test_logs_show_says_what_a_piece_without_readable_thinking_is(server: FakeCompatible, store_url: str) -> None:
    signature = "EhAKDmdldF93ZWF0aGVy" * 3
    log = MessageList(
        [
            user("Weather in Paris?"),
            AssistantMessage(
                tool_calls=[ToolCall(id="call_paris", name="get_weather", arguments={"city": "Paris"})],
                reasoning=[Reasoning(signature=signature, provider="google", id="call_paris")],
            ),
            ToolMessage(tool_call_id="call_paris", tool_name="get_weather", content="22 C"),
            AssistantMessage(content="22 C in Paris.", reasoning=[Reasoning(provider="openai")]),
        ]
    )
    with open_store(store_url) as store:
        conversation = Conversation(messages=log, store=store)
    shown = threadline("logs", "show", conversation.id, "--show-reasoning", server=server, store_url=store_url)
    assert shown.returncode == 0, shown.stderr
    out = " ".join(shown.stdout.split())
    assert f"thinking · google: (a signature of call call_paris, {len(signature)} characters, no readable" in out
    assert "thinking · openai: (no text)" in out
